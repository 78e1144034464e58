package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// maxCachedStatements bounds a file's statement cache; queries past it
// (such as IN lists of every length) are prepared for one use.
const maxCachedStatements = 256

// stmtCache keeps the prepared statements of one open index file. Preparing
// (parsing and planning) a statement costs as much as running a small
// query, and the API runs the same few dozen statements over and over.
type stmtCache struct {
	db    *sqlx.DB
	mu    sync.Mutex
	stmts map[string]*sqlx.Stmt
	// queries counts the statements run on the file, so tests can check
	// that an answer takes a fixed number of queries, not one per item.
	queries atomic.Int64
	// memo holds what readers derived from the file (see Snapshot.Memo).
	memo sync.Map
}

func newStmtCache(db *sqlx.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sqlx.Stmt{}}
}

// stmt returns the prepared statement for query, and whether the caller
// must close it (it was not cached).
func (c *stmtCache) stmt(ctx context.Context, query string) (*sqlx.Stmt, bool, error) {
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

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		_ = st.Close()
	}
	c.stmts = map[string]*sqlx.Stmt{}
}

// withStmt runs fn with the prepared statement for query; a snapshot made
// without a cache prepares it for this use only.
func (s *Snapshot) withStmt(ctx context.Context, query string, fn func(*sqlx.Stmt) error) error {
	var st *sqlx.Stmt
	var once bool
	var err error
	if s.stmts != nil {
		st, once, err = s.stmts.stmt(ctx, query)
	} else {
		st, err = s.DB.PreparexContext(ctx, query)
		once = true
	}
	if err != nil {
		return fmt.Errorf("prepare query: %w", err)
	}
	if once {
		defer st.Close()
	}
	if s.stmts != nil {
		s.stmts.queries.Add(1)
	}
	return fn(st)
}

// Queries is how many statements have run on the snapshot's file so far.
func (s *Snapshot) Queries() int64 {
	if s.stmts == nil {
		return 0
	}
	return s.stmts.queries.Load()
}

// memoEntry computes a memoised value once, whoever asks first.
type memoEntry struct {
	once sync.Once
	v    any
	err  error
}

// Memo returns what compute derives from the file, computing it on the
// first call for key and keeping it while the file is open: a live file
// never changes, so whatever is read from it stays true. An error is not
// kept (it may be the caller's cancelled context): the next call retries.
// It is for small derived data read often, such as a package's parsed
// skipRanges.
func (s *Snapshot) Memo(key string, compute func() (any, error)) (any, error) {
	if s.stmts == nil {
		return compute()
	}
	e, _ := s.stmts.memo.LoadOrStore(key, &memoEntry{})
	m := e.(*memoEntry)
	m.once.Do(func() { m.v, m.err = compute() })
	if m.err != nil {
		s.stmts.memo.CompareAndDelete(key, m)
	}
	return m.v, m.err
}

// Get runs a query expected to return one row and scans it into dest.
func (s *Snapshot) Get(ctx context.Context, dest any, query string, args ...any) error {
	return s.withStmt(ctx, query, func(st *sqlx.Stmt) error { return st.GetContext(ctx, dest, args...) })
}

// Select runs a query and scans every row into dest, a pointer to a slice.
func (s *Snapshot) Select(ctx context.Context, dest any, query string, args ...any) error {
	return s.withStmt(ctx, query, func(st *sqlx.Stmt) error { return st.SelectContext(ctx, dest, args...) })
}

// Each runs a query and calls fn for each row, for answers streamed row by
// row rather than collected.
func (s *Snapshot) Each(ctx context.Context, query string, args []any, fn func(*sqlx.Rows) error) error {
	return s.withStmt(ctx, query, func(st *sqlx.Stmt) error {
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
