package graphqlapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/ast"

	"github.com/catalogd/catalogd/internal/query"
)

// Paging of a schema's list field, as catalogd pages: a limit outside
// 1..maxLimit is maxLimit, a negative offset is 0.
const maxLimit = 100

// built is a catalog's GraphQL schema, made once per index file.
type built struct {
	schema graphql.Schema
	// lists are the schemas by list field, shapes what discovery found
	// of each and names the field names of nested keys: what fast.go
	// answers a list field from.
	lists  map[string]string
	shapes map[string]*shape
	names  nestedNames
	// summary is summary's value, made once.
	summary map[string]any
}

// build makes the schema of the shapes discovered: a list field per
// catalog schema, summary, and catalog, the typed questions the REST API
// answers. Two schemas whose type or list field names would be the same
// are refused, as catalogd refuses them.
func build(d *discovery) (*built, error) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range d.schemas {
			if !yield(n) {
				return
			}
		}
	})
	types, lists := map[string]string{}, map[string]string{}
	for _, n := range names {
		if other, ok := types[typeName(n)]; ok {
			return nil, fmt.Errorf("type name collision: schemas %q and %q both sanitize to GraphQL type %q", other, n, typeName(n))
		}
		types[typeName(n)] = n
	}
	for _, n := range names {
		if other, ok := lists[listName(n)]; ok {
			return nil, fmt.Errorf("query field collision: schemas %q and %q both map to field %q", other, n, listName(n))
		}
		lists[listName(n)] = n
	}
	nn := nestedNames(d.names)
	fields := graphql.Fields{}
	for _, n := range names {
		fields[listName(n)] = listField(n, d.schemas[n], nn)
	}
	summary := summaryValue(d.schemas, names)
	fields["summary"] = &graphql.Field{Type: summaryType, Resolve: func(graphql.ResolveParams) (any, error) { return summary, nil }}
	fields["catalog"] = catalogField()
	schema, err := graphql.NewSchema(graphql.SchemaConfig{Query: graphql.NewObject(graphql.ObjectConfig{Name: "Query", Fields: fields})})
	if err != nil {
		return nil, fmt.Errorf("failed to create GraphQL schema: %w", err)
	}
	return &built{schema: schema, lists: lists, shapes: d.schemas, names: nn, summary: summary}, nil
}

func scalarType(l leaf) graphql.Output {
	var t graphql.Output
	switch l.scalar {
	case scalarInt:
		t = graphql.Int
	case scalarFloat:
		t = graphql.Float
	case scalarBoolean:
		t = graphql.Boolean
	default:
		t = graphql.String
	}
	if l.list {
		return graphql.NewList(t)
	}
	return t
}

// listField is the field listing the objects of one schema, a page at a
// time, filtered in SQL by package and name when asked.
func listField(schema string, s *shape, nn nestedNames) *graphql.Field {
	fields := graphql.Fields{}
	for name, f := range s.fields {
		if len(f.nested) > 0 {
			fields[name] = &graphql.Field{
				Type:    graphql.NewList(nestedType(typeName(schema)+typeName(name), f.nested, nn)),
				Resolve: topResolver(f, false),
			}
			continue
		}
		fields[name] = &graphql.Field{Type: scalarType(f.leaf), Resolve: topResolver(f, true)}
	}
	obj := graphql.NewObject(graphql.ObjectConfig{Name: typeName(schema), Fields: fields})
	return &graphql.Field{
		Type: graphql.NewList(obj),
		Args: graphql.FieldConfigArgument{
			"limit":   {Type: graphql.Int, DefaultValue: maxLimit, Description: "Maximum number of items to return"},
			"offset":  {Type: graphql.Int, DefaultValue: 0, Description: "Number of items to skip"},
			"package": {Type: graphql.String, Description: "Only the objects of this package (catalogd extension)"},
			"name":    {Type: graphql.String, Description: "Only the objects of this name (catalogd extension)"},
		},
		Resolve: func(p graphql.ResolveParams) (any, error) {
			r := runOf(p.Context)
			if stop, err := r.halt(); stop {
				return nil, err
			}
			return r.page(p.Context, schema, p.Args, wantedKeys(p.Info.FieldASTs, p.Info.Fragments, s))
		},
	}
}

// page reads the page of schema's objects that the list field's arguments
// ask for, with the members in keep.
func (r *run) page(ctx context.Context, schema string, args map[string]any, keep map[string]bool) ([]any, error) {
	limit, _ := args["limit"].(int)
	if limit <= 0 || limit > maxLimit {
		limit = maxLimit
	}
	offset, _ := args["offset"].(int)
	offset = max(offset, 0)
	pkg, _ := args["package"].(string)
	name, _ := args["name"].(string)
	var out []any
	err := r.cat.BlobPage(ctx, query.BlobFilter{Schema: schema, Package: pkg, Name: name}, query.Page{Offset: offset, Limit: limit},
		func(blob []byte) error {
			if err := r.object(); err != nil {
				return err
			}
			o, ok := decodeObject(blob, keep)
			if !ok {
				return nil
			}
			for _, v := range o {
				if err := r.charge(len(v)); err != nil {
					return err
				}
			}
			out = append(out, o)
			return nil
		})
	var bound *boundError
	if errors.As(err, &bound) {
		return nil, r.fail(bound)
	}
	if err != nil {
		return nil, r.fail(fmt.Errorf("error loading objects for schema %s: %w", schema, err))
	}
	return out, nil
}

// object is a catalog object with the raw values of the keys a query
// selects; values are decoded only when resolved.
type object map[string]json.RawMessage

// decodeObject takes from blob, a JSON object, the raw values of the keys
// in keep (or of every key when keep is nil), copied; later duplicates of
// a key win, as in encoding/json. A blob that is no object is skipped, as
// catalogd skips it.
func decodeObject(blob []byte, keep map[string]bool) (object, bool) {
	o := object{}
	ok := members(blob, func(k, raw []byte) {
		if keep == nil || keep[string(k)] {
			o[string(k)] = bytes.Clone(raw)
		}
	})
	return o, ok
}

// wantedKeys are the JSON keys of the fields a list field's selection
// names, through fragments too; nil (every key) when it cannot tell.
func wantedKeys(fields []*ast.Field, fragments map[string]ast.Definition, s *shape) map[string]bool {
	keep := map[string]bool{}
	seen := map[string]bool{}
	var walk func(ss *ast.SelectionSet) bool
	walk = func(ss *ast.SelectionSet) bool {
		if ss == nil {
			return true
		}
		for _, sel := range ss.Selections {
			switch sel := sel.(type) {
			case *ast.Field:
				if f := s.fields[sel.Name.Value]; f != nil {
					for _, k := range f.keys {
						keep[k] = true
					}
				}
			case *ast.InlineFragment:
				if !walk(sel.SelectionSet) {
					return false
				}
			case *ast.FragmentSpread:
				name := sel.Name.Value
				if seen[name] {
					continue
				}
				seen[name] = true
				def, ok := fragments[name].(*ast.FragmentDefinition)
				if !ok || !walk(def.SelectionSet) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	for _, fa := range fields {
		if !walk(fa.SelectionSet) {
			return nil
		}
	}
	return keep
}

// topResolver resolves a top-level field of a schema's objects: a scalar
// (objects and arrays as their JSON text, as catalogd answers them), or,
// when leaf is false, the decoded array of a nested object type.
func topResolver(f *field, isLeaf bool) graphql.FieldResolveFn {
	return func(p graphql.ResolveParams) (any, error) {
		r := runOf(p.Context)
		if stop, err := r.halt(); stop {
			return nil, err
		}
		o, ok := p.Source.(object)
		if !ok {
			return nil, nil
		}
		return r.topValue(o, f, isLeaf)
	}
}

// topValue is the value of field f of o, as topResolver resolves it.
func (r *run) topValue(o object, f *field, isLeaf bool) (any, error) {
	for _, k := range f.keys {
		raw, ok := o[k]
		if !ok {
			continue
		}
		if isLeaf {
			if v, ok := rawLeaf(raw); ok {
				return r.leafValue(v)
			}
		} else if v, ok := rawObjects(raw); ok {
			return v, r.fail(r.charge(len(raw)))
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, r.fail(fmt.Errorf("decode field %q: %w", k, err))
		}
		if !isLeaf {
			return v, r.fail(r.charge(len(raw)))
		}
		return r.leafValue(v)
	}
	return nil, r.fail(r.charge(0))
}

// leafText is an object or array value as a scalar field answers it, its
// JSON text as encoding/json writes it, made by appendCanonical without
// decoding the value.
type leafText string

// rawLeaf is raw as a scalar field resolves it, for leafValue: a string,
// a float64, a bool, nil, or the leafText of an object or array; false
// when it must be decoded (it cannot tell).
func rawLeaf(raw []byte) (any, bool) {
	if v, ok := scalarValue(raw); ok {
		return v, true
	}
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return nil, false
	}
	b, ok := appendCanonical(make([]byte, 0, len(raw)), raw)
	return leafText(b), ok
}

// rawObject is an object in an array of objects, its members read but
// not decoded: a nested type's fields resolve from it.
type rawObject []member

// notObject stands for an element of an array of objects that is no
// object (null aside): it has every field null, as catalogd answers it.
type notObject struct{}

// rawObjects is raw, an array, with its object elements read into
// rawObjects; false when raw is no array it can read.
func rawObjects(raw []byte) ([]any, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	out := []any{}
	ok := elements(raw, func(e []byte) bool {
		switch e[0] {
		case '{':
			o := make(rawObject, 0, 4)
			if !members(e, func(k, v []byte) { o = append(o, member{key: k, raw: v}) }) {
				return false
			}
			out = append(out, o)
		case 'n':
			out = append(out, nil)
		default:
			out = append(out, notObject{})
		}
		return true
	})
	return out, ok
}

// get is the raw value of key in o, the last one when o repeats it, as
// in encoding/json.
func (o rawObject) get(key string) ([]byte, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if string(o[i].key) == key {
			return o[i].raw, true
		}
	}
	return nil, false
}

// nestedNames are the field names of the JSON keys discovery met, read
// by every resolver at once and so never written after; a key it did not
// meet has its name worked out each time.
type nestedNames nameCache

func (n nestedNames) field(key []byte) string {
	if name, ok := n[string(key)]; ok {
		return name
	}
	return fieldName(string(key))
}

// nestedType is the object type of the elements of an array of objects.
// A field is looked up by its own name first, then by any key mapping to
// it (the first in sorted order), as catalogd looks it up.
func nestedType(name string, fields map[string]leaf, nn nestedNames) *graphql.Object {
	gf := graphql.Fields{}
	for fname, l := range fields {
		gf[fname] = &graphql.Field{Type: scalarType(l), Resolve: func(p graphql.ResolveParams) (any, error) {
			r := runOf(p.Context)
			if stop, err := r.halt(); stop {
				return nil, err
			}
			src, ok := p.Source.(rawObject)
			if !ok {
				return nil, nil
			}
			return r.nestedValue(src, fname, nn)
		}}
	}
	return graphql.NewObject(graphql.ObjectConfig{Name: name, Fields: gf})
}

// nestedValue is the value of the field fname of src, an element of an
// array of objects: the value of the key fname, or else of the first key,
// in sorted order, naming the field.
func (r *run) nestedValue(src rawObject, fname string, nn nestedNames) (any, error) {
	raw, ok := src.get(fname)
	if !ok {
		var first []byte
		for _, m := range src {
			if nn.field(m.key) == fname && (!ok || bytes.Compare(m.key, first) <= 0) {
				first, raw, ok = m.key, m.raw, true
			}
		}
		if !ok {
			return nil, r.fail(r.charge(0))
		}
	}
	v, ok := rawLeaf(raw)
	if !ok {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, r.fail(fmt.Errorf("decode field %q: %w", fname, err))
		}
	}
	return r.leafValue(v)
}

// leafValue is v as a scalar field answers it: objects and arrays as their
// JSON text.
func (r *run) leafValue(v any) (any, error) {
	switch s := v.(type) {
	case map[string]any, []any:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("%v", v), r.fail(r.charge(0))
		}
		return string(b), r.fail(r.charge(len(b)))
	case string:
		return s, r.fail(r.charge(len(s)))
	case leafText:
		return string(s), r.fail(r.charge(len(s)))
	}
	return v, r.fail(r.charge(0))
}

var summaryType = graphql.NewObject(graphql.ObjectConfig{
	Name: "CatalogSummary",
	Fields: graphql.Fields{
		"totalSchemas": {Type: graphql.Int},
		"schemas": {Type: graphql.NewList(graphql.NewObject(graphql.ObjectConfig{
			Name: "SchemaSummary",
			Fields: graphql.Fields{
				"name":         {Type: graphql.String},
				"totalObjects": {Type: graphql.Int},
				"totalFields":  {Type: graphql.Int},
			},
		}))},
	},
})

// summaryValue is summary's answer: the catalog's schemas with their
// object and field counts, by schema name.
func summaryValue(shapes map[string]*shape, names []string) map[string]any {
	schemas := make([]any, 0, len(names))
	for _, n := range names {
		schemas = append(schemas, map[string]any{"name": n, "totalObjects": shapes[n].objects, "totalFields": len(shapes[n].fields)})
	}
	return map[string]any{"totalSchemas": len(names), "schemas": schemas}
}
