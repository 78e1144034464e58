// Package query owns every read query of a catalog index file: the
// typed API the HTTP handlers call (packages, channels, bundles, upgrade
// edges, GVK providers, counts, blobs, resolution), next to the SQL it runs.
// Resolution (resolve.go) is operator-controller's choice of a bundle:
// ResolvePackage judges one catalog's bundles, and Choose, which needs no
// index, picks across the catalogs a caller gathered. It answers
// in plain Go types; what the API shows of them is the handlers' business.
// Blobs themselves live in the index's content file (see package index):
// the database says where, and whole blobs are answered as byte ranges of
// it (BlobRanges) for the caller to copy, never read into memory here.
//
// An index file never changes once it is live, so a Catalog prepares each
// statement once and keeps it, and keeps what it derives from the file and
// reads often (package summaries, channel heads, parsed skipRanges) for as
// long as the file is open; the packages parsed for resolution, which can
// add up to the whole catalog, only within a budget (resolveCache).
package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/jmoiron/sqlx"
)

// ErrNotFound says the package, channel, bundle or icon asked for is not
// in the catalog; errors wrapping it name what was missing.
var ErrNotFound = errors.New("not found")

// maxCachedStatements bounds a file's statement cache; queries past it
// (such as IN lists of every length) are prepared for one use.
const maxCachedStatements = 256

// Catalog reads one open index file. It is safe for concurrent use.
type Catalog struct {
	db      *sqlx.DB
	content io.ReaderAt

	mu    sync.Mutex
	stmts map[string]*sqlx.Stmt
	// memo holds what was derived from the file (see memo).
	memo sync.Map
	// resolved holds packages parsed for resolution, within a budget.
	resolved resolveCache
}

// New reads through db, an open index file, and content, its content file;
// the caller closes both after Close.
func New(db *sqlx.DB, content io.ReaderAt) *Catalog {
	return &Catalog{db: db, content: content, stmts: map[string]*sqlx.Stmt{}, resolved: resolveCache{budget: resolveCacheBytes}}
}

// Close releases the prepared statements.
func (c *Catalog) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		_ = st.Close()
	}
	c.stmts = map[string]*sqlx.Stmt{}
}

// stmt returns the prepared statement for query, and whether the caller
// must close it (it was not cached). Preparing (parsing and planning) a
// statement costs as much as running a small query, and the API runs the
// same few dozen statements over and over.
func (c *Catalog) stmt(ctx context.Context, query string) (*sqlx.Stmt, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st, false, nil
	}
	st, err := c.db.PreparexContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	if len(c.stmts) >= maxCachedStatements {
		return st, true, nil
	}
	c.stmts[query] = st
	return st, false, nil
}

// withStmt runs fn with the prepared statement for query.
func (c *Catalog) withStmt(ctx context.Context, query string, fn func(*sqlx.Stmt) error) error {
	st, once, err := c.stmt(ctx, query)
	if err != nil {
		return fmt.Errorf("prepare query: %w", err)
	}
	if once {
		defer st.Close()
	}
	return fn(st)
}

// get runs a query expected to return one row and scans it into dest.
func (c *Catalog) get(ctx context.Context, dest any, query string, args ...any) error {
	return c.withStmt(ctx, query, func(st *sqlx.Stmt) error { return st.GetContext(ctx, dest, args...) })
}

// sel runs a query and scans every row into dest, a pointer to a slice.
func (c *Catalog) sel(ctx context.Context, dest any, query string, args ...any) error {
	return c.withStmt(ctx, query, func(st *sqlx.Stmt) error { return st.SelectContext(ctx, dest, args...) })
}

// each runs a query and calls fn for each row, for answers streamed row by
// row rather than collected.
func (c *Catalog) each(ctx context.Context, query string, args []any, fn func(*sqlx.Rows) error) error {
	return c.withStmt(ctx, query, func(st *sqlx.Stmt) error {
		rows, err := st.QueryxContext(ctx, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := fn(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// memoEntry computes a memoised value once, whoever asks first.
type memoEntry struct {
	once sync.Once
	v    any
	err  error
}

// memo returns what compute derives from the file, computing it on the
// first call for key and keeping it while the file is open: a live file
// never changes, so whatever is read from it stays true. An error is not
// kept (it may be the caller's cancelled context): the next call retries.
// It is for small derived data read often.
func memo[T any](c *Catalog, key string, compute func() (T, error)) (T, error) {
	e, _ := c.memo.LoadOrStore(key, &memoEntry{})
	m := e.(*memoEntry)
	m.once.Do(func() { m.v, m.err = compute() })
	if m.err != nil {
		c.memo.CompareAndDelete(key, m)
		var zero T
		return zero, m.err
	}
	return m.v.(T), nil
}
