// Package graphqlapi answers catalogd's GraphQL endpoint
// (POST /catalogs/{catalog}/api/v1/graphql) from a catalog's index, with
// the schema catalogd (operator-controller's internal/catalogd/graphql)
// discovers from the catalog's blobs, so that a client written against
// catalogd gets the same fields, types and values: one list field per
// catalog schema (olmbundles, olmpackages, ...) with limit and offset,
// summary, and introspection. Beyond catalogd, each list field filters by
// package and name in SQL, and catalog answers what the REST API answers
// (a package's channels and heads, upgrade edges, GVK providers), through
// internal/query like every other surface; convert.go turns its values
// into GraphQL's.
//
// The schema is discovered once per index file, by reading every blob one
// at a time, and kept while the file is the catalog's live one (one per
// catalog); objects are read from the index per query, a page at a time,
// never kept. Every query is bounded in depth, aliases and fields (as
// catalogd bounds it), and in objects read, bytes answered and time (see
// Limits): a bound exceeded is a GraphQL error saying which, and a fixed
// number of queries run at once, so memory is bounded too.
package graphqlapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/gqlerrors"

	"github.com/catalogd/catalogd/internal/query"
)

// Request is a GraphQL request: catalogd's envelope ({"query": ...}), and
// the variables and operation name of GraphQL over HTTP.
type Request struct {
	Query         string
	Variables     map[string]any
	OperationName string
}

// Index is the index a query reads: its file, which names it for the
// schema cache (a new version of a catalog is a new file), and its read
// API.
type Index struct {
	Catalog string
	Path    string
	Reader  *query.Catalog
}

// Service answers GraphQL queries. It is safe for concurrent use.
type Service struct {
	log    logr.Logger
	limits Limits
	// turns holds a token per query running; its capacity is how many run
	// at once, bounding the memory queries hold together.
	turns chan struct{}

	mu      sync.Mutex
	schemas map[string]*cached
}

// cached is the schema of one index file, built by whoever asked first.
type cached struct {
	path  string
	ready chan struct{}
	b     *built
	err   error
}

// maxConcurrent is how many queries run at once.
const maxConcurrent = 2

// New returns a Service with the given limits.
func New(log logr.Logger, limits Limits) *Service {
	return &Service{log: log, limits: limits, turns: make(chan struct{}, maxConcurrent), schemas: map[string]*cached{}}
}

// schema returns the schema of idx's file, discovering it on first use.
// A catalog keeps the schema of one file: a query on a newer file
// replaces it, and the old one goes with the last query using it. The
// first query on a file discovers it itself, to the end whatever its own
// deadline, because it holds the file open (its caller's snapshot) while
// it reads it; the queries that come meanwhile wait for it, or for their
// deadline.
func (s *Service) schema(ctx context.Context, idx Index) (*built, error) {
	s.mu.Lock()
	c := s.schemas[idx.Catalog]
	owner := c == nil || c.path != idx.Path
	if owner {
		c = &cached{path: idx.Path, ready: make(chan struct{})}
		s.schemas[idx.Catalog] = c
	}
	s.mu.Unlock()
	if owner {
		s.discover(context.WithoutCancel(ctx), c, idx)
	}
	select {
	case <-c.ready:
		return c.b, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// discover builds c from every blob of idx.
func (s *Service) discover(ctx context.Context, c *cached, idx Index) {
	defer close(c.ready)
	d := newDiscovery()
	err := idx.Reader.EachBlob(ctx, func(schema string, blob []byte) error {
		d.add(schema, blob)
		return nil
	})
	if err != nil {
		c.err = fmt.Errorf("discover the GraphQL schema of catalog %q: %w", idx.Catalog, err)
		s.mu.Lock()
		if s.schemas[idx.Catalog] == c {
			delete(s.schemas, idx.Catalog)
		}
		s.mu.Unlock()
		return
	}
	c.b, c.err = build(d)
	s.log.V(1).Info("GraphQL schema discovered", "catalog", idx.Catalog, "path", idx.Path, "schemas", len(d.schemas), "error", c.err)
}

// Execute answers req against idx. Every outcome is a GraphQL result:
// errors (a query refused, a bound exceeded, a catalog whose schemas
// collide) are in its errors.
func (s *Service) Execute(ctx context.Context, idx Index, req Request) *graphql.Result {
	return s.execute(ctx, idx, req, true)
}

// execute answers req, a plain query itself (fast.go) when plain allows,
// and anything else through graphql-go.
func (s *Service) execute(ctx context.Context, idx Index, req Request, plain bool) *graphql.Result {
	doc, err := parse(req.Query)
	if err != nil {
		return errorResult(err)
	}
	if err := s.limits.checkDoc(doc); err != nil {
		return errorResult(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.limits.Time)
	defer cancel()
	r := &run{ctx: ctx, cat: idx.Reader, limits: s.limits}
	select {
	case s.turns <- struct{}{}:
		defer func() { <-s.turns }()
	case <-ctx.Done():
		return errorResult(r.ctxError())
	}
	b, err := s.schema(ctx, idx)
	if err != nil {
		if ctx.Err() != nil {
			return errorResult(r.ctxError())
		}
		return errorResult(err)
	}
	if plain {
		if res, ok := r.plainQuery(ctx, b, doc, req); ok {
			return res
		}
	}
	// graphql-go answers from scratch, as graphql.Do would from the text.
	r = &run{ctx: ctx, cat: idx.Reader, limits: s.limits}
	var res *graphql.Result
	if v := graphql.ValidateDocument(&b.schema, doc, nil); !v.IsValid {
		res = &graphql.Result{Errors: v.Errors}
	} else {
		res = graphql.Execute(graphql.ExecuteParams{
			Schema:        b.schema,
			AST:           doc,
			OperationName: req.OperationName,
			Args:          req.Variables,
			Context:       context.WithValue(ctx, runKey{}, r),
		})
	}
	// graphql-go answers a context ended with the context's error alone;
	// say which bound it was.
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		for i := range res.Errors {
			if res.Errors[i].Message == context.DeadlineExceeded.Error() {
				res.Errors[i].Message = r.errTime().Error()
			}
		}
	}
	return res
}

// ctxError is the error of a query whose context ended before it ran.
func (r *run) ctxError() error {
	if errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		return r.errTime()
	}
	return r.ctx.Err()
}

func errorResult(err error) *graphql.Result {
	return &graphql.Result{Errors: []gqlerrors.FormattedError{gqlerrors.FormatError(err)}}
}
