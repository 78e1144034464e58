package graphqlapi

import (
	"context"
	"math"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"
)

// Most queries are plain: list fields of catalog schemas with literal
// arguments, selecting scalar fields and lists of nested objects, or the
// summary. graphql-go validates such a query with every rule of the spec
// and then resolves it field by field, allocating at each, and that cost
// most of a nested query's time (100 channels of 18 entries are some 5,600
// fields). This file answers a plain query itself: a query it can read
// as plain is valid by construction (every field, argument and selection
// is known to the schema, literal of the right type, unrepeated), and it
// resolves each value with the same functions as the resolvers, so the
// answer is graphql-go's, value for value, charged the same against the
// bounds. Anything else (fragments, variables, directives, aliases that
// repeat a name, introspection, catalog, a value graphql-go would answer
// with an error, a bound reached) it leaves to graphql-go, which then
// answers the whole query as it would have.

// plainQuery answers doc if it is plain; false when graphql-go must.
func (r *run) plainQuery(ctx context.Context, b *built, doc *ast.Document, req Request) (*graphql.Result, bool) {
	if len(doc.Definitions) != 1 || len(req.Variables) > 0 {
		return nil, false
	}
	op, ok := doc.Definitions[0].(*ast.OperationDefinition)
	if !ok || op.Operation != ast.OperationTypeQuery || len(op.VariableDefinitions) > 0 || len(op.Directives) > 0 {
		return nil, false
	}
	if req.OperationName != "" && (op.Name == nil || op.Name.Value != req.OperationName) {
		return nil, false
	}
	roots, ok := plainFields(op.SelectionSet)
	if !ok {
		return nil, false
	}
	data := make(map[string]any, len(roots))
	for _, f := range roots {
		var v any
		switch schema, isList := b.lists[f.Name.Value]; {
		case isList:
			v, ok = r.plainList(ctx, b, schema, f)
		case f.Name.Value == "summary" && len(f.Arguments) == 0:
			v, ok = plainSummary(b.summary, f.SelectionSet)
		default:
			return nil, false
		}
		if !ok || r.failed.Load() {
			return nil, false
		}
		data[responseKey(f)] = v
	}
	return &graphql.Result{Data: data}, true
}

// plainFields are the fields of ss when it has fields only, without
// directives, each under a response key of its own.
func plainFields(ss *ast.SelectionSet) ([]*ast.Field, bool) {
	if ss == nil || len(ss.Selections) == 0 {
		return nil, false
	}
	out := make([]*ast.Field, 0, len(ss.Selections))
	for i, sel := range ss.Selections {
		f, ok := sel.(*ast.Field)
		if !ok || f.Name == nil || len(f.Directives) > 0 {
			return nil, false
		}
		for _, prev := range out[:i] {
			if responseKey(prev) == responseKey(f) {
				return nil, false
			}
		}
		out = append(out, f)
	}
	return out, true
}

func responseKey(f *ast.Field) string {
	if f.Alias != nil && f.Alias.Value != "" {
		return f.Alias.Value
	}
	return f.Name.Value
}

// plainLeaf says whether f selects a scalar field as it must: no
// arguments and no selection.
func plainLeaf(f *ast.Field) bool {
	return len(f.Arguments) == 0 && f.SelectionSet == nil
}

// plainList answers a list field of schema as listField and its fields'
// resolvers do.
func (r *run) plainList(ctx context.Context, b *built, schema string, lf *ast.Field) (any, bool) {
	s := b.shapes[schema]
	args := map[string]any{}
	for _, a := range lf.Arguments {
		if a.Name == nil || args[a.Name.Value] != nil {
			return nil, false
		}
		var v any
		switch a.Name.Value {
		case "limit", "offset":
			if _, ok := a.Value.(*ast.IntValue); ok {
				v = graphql.Int.ParseLiteral(a.Value)
			}
		case "package", "name":
			if _, ok := a.Value.(*ast.StringValue); ok {
				v = graphql.String.ParseLiteral(a.Value)
			}
		}
		if v == nil {
			return nil, false
		}
		args[a.Name.Value] = v
	}
	if _, ok := args["limit"]; !ok {
		args["limit"] = maxLimit
	}
	if _, ok := args["offset"]; !ok {
		args["offset"] = 0
	}
	sels, ok := plainFields(lf.SelectionSet)
	if !ok {
		return nil, false
	}
	// Every selected field, checked before anything is read.
	nested := make([][]*ast.Field, len(sels))
	for i, f := range sels {
		fd := s.fields[f.Name.Value]
		if fd == nil {
			return nil, false
		}
		if len(fd.nested) == 0 {
			if !plainLeaf(f) {
				return nil, false
			}
			continue
		}
		if len(f.Arguments) > 0 {
			return nil, false
		}
		if nested[i], ok = plainFields(f.SelectionSet); !ok {
			return nil, false
		}
		for _, nf := range nested[i] {
			if _, known := fd.nested[nf.Name.Value]; !known || !plainLeaf(nf) {
				return nil, false
			}
		}
	}
	if r.ctx.Err() != nil {
		return nil, false
	}
	objs, err := r.page(ctx, schema, args, wantedKeys([]*ast.Field{lf}, nil, s))
	if err != nil {
		return nil, false
	}
	out := make([]any, 0, len(objs))
	for _, o := range objs {
		if r.ctx.Err() != nil {
			return nil, false
		}
		row := make(map[string]any, len(sels))
		for i, f := range sels {
			fd := s.fields[f.Name.Value]
			isLeaf := len(fd.nested) == 0
			v, err := r.topValue(o.(object), fd, isLeaf)
			if err != nil {
				return nil, false
			}
			if isLeaf {
				if v, ok = completeLeaf(fd.leaf, v); !ok {
					return nil, false
				}
			} else if v, ok = r.plainNested(b, fd, nested[i], v); !ok {
				return nil, false
			}
			row[responseKey(f)] = v
		}
		out = append(out, row)
	}
	return out, true
}

// plainNested completes v, a nested list field's value, as graphql-go
// completes a list of objects.
func (r *run) plainNested(b *built, fd *field, sels []*ast.Field, v any) (any, bool) {
	if v == nil {
		return nil, true
	}
	elems, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]any, 0, len(elems))
	for _, e := range elems {
		switch e := e.(type) {
		case nil:
			out = append(out, nil)
		case notObject:
			row := make(map[string]any, len(sels))
			for _, f := range sels {
				row[responseKey(f)] = nil
			}
			out = append(out, row)
		case rawObject:
			row := make(map[string]any, len(sels))
			for _, f := range sels {
				v, err := r.nestedValue(e, f.Name.Value, b.names)
				if err != nil {
					return nil, false
				}
				if row[responseKey(f)], ok = completeLeaf(fd.nested[f.Name.Value], v); !ok {
					return nil, false
				}
			}
			out = append(out, row)
		default:
			return nil, false
		}
	}
	return out, true
}

// completeLeaf is v as graphql-go completes a scalar field of type l:
// null stays null, anything else is serialized by the scalar, and a
// serialization that is null or NaN is null. A list of scalars that is
// not null is graphql-go's to answer (the resolvers give its JSON text,
// which graphql-go refuses).
func completeLeaf(l leaf, v any) (any, bool) {
	if v == nil {
		return nil, true
	}
	if l.list {
		return nil, false
	}
	out := scalarType(l).(*graphql.Scalar).Serialize(v)
	if f, ok := out.(float64); ok && math.IsNaN(f) {
		return nil, true
	}
	return out, true
}

// summaryScalars are the scalar fields of CatalogSummary and
// SchemaSummary.
var summaryScalars = map[string]leaf{
	"totalSchemas": {scalar: scalarInt},
	"name":         {scalar: scalarString},
	"totalObjects": {scalar: scalarInt},
	"totalFields":  {scalar: scalarInt},
}

// plainSummary selects from summary, the value of the summary field, as
// graphql-go completes it.
func plainSummary(summary map[string]any, ss *ast.SelectionSet) (any, bool) {
	sels, ok := plainFields(ss)
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(sels))
	for _, f := range sels {
		switch f.Name.Value {
		case "totalSchemas":
			if !plainLeaf(f) {
				return nil, false
			}
			out[responseKey(f)], _ = completeLeaf(summaryScalars["totalSchemas"], summary["totalSchemas"])
		case "schemas":
			subs, ok := plainFields(f.SelectionSet)
			if !ok || len(f.Arguments) > 0 {
				return nil, false
			}
			for _, sf := range subs {
				if sf.Name.Value == "totalSchemas" || !plainLeaf(sf) {
					return nil, false
				}
				if _, known := summaryScalars[sf.Name.Value]; !known {
					return nil, false
				}
			}
			schemas := summary["schemas"].([]any)
			list := make([]any, 0, len(schemas))
			for _, s := range schemas {
				m := s.(map[string]any)
				row := make(map[string]any, len(subs))
				for _, sf := range subs {
					row[responseKey(sf)], _ = completeLeaf(summaryScalars[sf.Name.Value], m[sf.Name.Value])
				}
				list = append(list, row)
			}
			out[responseKey(f)] = list
		default:
			return nil, false
		}
	}
	return out, true
}
