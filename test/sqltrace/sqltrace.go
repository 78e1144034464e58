// Package sqltrace opens an index file for tests through connections that
// record each SQL statement prepared and count the statements run, so a
// test can check every query's plan, or that an answer takes a fixed number
// of queries, without a counter in production code.
package sqltrace

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"

	"github.com/catalogd/catalogd/internal/index"
)

// Trace is what the connections of one Open recorded.
type Trace struct {
	mu       sync.Mutex
	prepared map[string]bool
	runs     atomic.Int64
}

// Open opens the index file at path read-only, as the store does, through
// traced connections; the database is closed when the test ends.
func Open(t testing.TB, path string) (*sqlx.DB, *Trace) {
	t.Helper()
	tr := &Trace{prepared: map[string]bool{}}
	dsn := index.FileURI(path, url.Values{"mode": {"ro"}, "immutable": {"1"}})
	db := sqlx.NewDb(sql.OpenDB(connector{dsn: dsn, trace: tr}), "sqlite")
	t.Cleanup(func() { db.Close() })
	return db, tr
}

// Statements returns every distinct statement prepared so far, sorted.
func (tr *Trace) Statements() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make([]string, 0, len(tr.prepared))
	for q := range tr.prepared {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

// Runs is how many statements have run so far.
func (tr *Trace) Runs() int64 { return tr.runs.Load() }

type connector struct {
	dsn   string
	trace *Trace
}

func (c connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := (&sqlite.Driver{}).Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return tracedConn{Conn: conn, trace: c.trace}, nil
}

func (connector) Driver() driver.Driver { return &sqlite.Driver{} }

// tracedConn exposes only Prepare, so database/sql prepares every statement
// through it, queries included, and the text can be recorded.
type tracedConn struct {
	driver.Conn
	trace *Trace
}

func (c tracedConn) Prepare(query string) (driver.Stmt, error) {
	st, err := c.Conn.Prepare(query)
	if err != nil {
		return nil, err
	}
	c.trace.mu.Lock()
	c.trace.prepared[query] = true
	c.trace.mu.Unlock()
	return tracedStmt{Stmt: st, trace: c.trace}, nil
}

// tracedStmt counts each run of a statement.
type tracedStmt struct {
	driver.Stmt
	trace *Trace
}

func (s tracedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.trace.runs.Add(1)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (s tracedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.trace.runs.Add(1)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}
