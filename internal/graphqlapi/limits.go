package graphqlapi

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/graphql-go/graphql/language/ast"
	"github.com/graphql-go/graphql/language/parser"

	"github.com/catalogd/catalogd/internal/query"
)

// Limits bound what one query may cost. Depth, aliases and fields are
// catalogd's own bounds (with its messages), checked before anything runs;
// objects, bytes and time are checked as the query runs, so that no query
// makes the server read or hold more than they allow, whatever it asks:
// a list field reads at most 100 objects, but 50 aliases of it with 10
// nested levels would otherwise multiply that.
type Limits struct {
	// Depth, Aliases and Fields bound the query's text.
	Depth, Aliases, Fields int
	// Objects bounds the catalog objects read; Bytes the catalog bytes
	// kept and the bytes of the values answered (each value counts 16
	// bytes more, for what encoding it costs).
	Objects int
	Bytes   int64
	// Time bounds the query's run.
	Time time.Duration
}

// DefaultLimits are catalogd's bounds of the query's text and time (10
// levels, 50 aliases, 500 fields, 5 s) and ours of what it reads.
var DefaultLimits = Limits{Depth: 10, Aliases: 50, Fields: 500, Objects: 10000, Bytes: 64 << 20, Time: 5 * time.Second}

// parse reads a query's text, as catalogd reads it to check its bounds.
func parse(q string) (*ast.Document, error) {
	doc, err := parser.Parse(parser.ParseParams{Source: q})
	if err != nil {
		return nil, fmt.Errorf("query parse error: %w", err)
	}
	return doc, nil
}

// checkDoc refuses a query deeper, or with more aliases or fields, than
// the limits allow; each operation counts its fragments again.
func (l Limits) checkDoc(doc *ast.Document) error {
	fragments := map[string]*ast.FragmentDefinition{}
	for _, d := range doc.Definitions {
		if f, ok := d.(*ast.FragmentDefinition); ok {
			fragments[f.Name.Value] = f
		}
	}
	var aliases, fields int
	var walk func(ss *ast.SelectionSet, depth int, spread map[string]bool) error
	walk = func(ss *ast.SelectionSet, depth int, spread map[string]bool) error {
		if ss == nil {
			return nil
		}
		if depth > l.Depth {
			return fmt.Errorf("query exceeds maximum depth of %d", l.Depth)
		}
		for _, sel := range ss.Selections {
			var next *ast.SelectionSet
			switch sel := sel.(type) {
			case *ast.Field:
				if fields++; fields > l.Fields {
					return fmt.Errorf("query exceeds maximum field count of %d", l.Fields)
				}
				if sel.Alias != nil && sel.Alias.Value != "" {
					if aliases++; aliases > l.Aliases {
						return fmt.Errorf("query exceeds maximum alias count of %d", l.Aliases)
					}
				}
				next = sel.SelectionSet
			case *ast.InlineFragment:
				next = sel.SelectionSet
			case *ast.FragmentSpread:
				if spread[sel.Name.Value] {
					continue
				}
				spread[sel.Name.Value] = true
				if f := fragments[sel.Name.Value]; f != nil {
					next = f.SelectionSet
				}
			}
			if err := walk(next, depth+1, spread); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range doc.Definitions {
		if op, ok := d.(*ast.OperationDefinition); ok {
			if err := walk(op.SelectionSet, 1, map[string]bool{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// run is one query's state: the index it reads and what it has spent.
type run struct {
	ctx    context.Context
	cat    *query.Catalog
	limits Limits

	objects, bytes atomic.Int64
	// failed is set by the first bound exceeded, which alone is reported:
	// every resolver after it answers null without reading anything.
	failed atomic.Bool
	// timedOut says the time bound was the one.
	timedOut atomic.Bool
}

type runKey struct{}

func runOf(ctx context.Context) *run { return ctx.Value(runKey{}).(*run) }

// errTime is the time bound's error.
func (r *run) errTime() error {
	return fmt.Errorf("query exceeds the time bound of %s", r.limits.Time)
}

// halt says whether the query must stop, with the error to report when
// this is the first resolver to find out.
func (r *run) halt() (bool, error) {
	if r.failed.Load() {
		return true, nil
	}
	if err := r.ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			r.timedOut.Store(true)
			return true, r.fail(r.errTime())
		}
		return true, r.fail(err)
	}
	return false, nil
}

// fail records err, if any, and returns it if it is the first failure,
// nil after.
func (r *run) fail(err error) error {
	if err != nil && r.failed.CompareAndSwap(false, true) {
		return err
	}
	return nil
}

// object counts one catalog object read, and says when that is past the
// bound.
func (r *run) object() error {
	if r.objects.Add(1) > int64(r.limits.Objects) {
		return &boundError{fmt.Sprintf("query exceeds the bound of %d catalog objects read", r.limits.Objects)}
	}
	return nil
}

// charge counts n bytes kept or answered, and says when that is past the
// bound.
func (r *run) charge(n int) error {
	if r.bytes.Add(int64(n)+16) > r.limits.Bytes {
		return &boundError{fmt.Sprintf("query exceeds the bound of %d MiB of result data", r.limits.Bytes>>20)}
	}
	return nil
}

// boundError says which bound a running query exceeded.
type boundError struct{ msg string }

func (e *boundError) Error() string { return e.msg }
