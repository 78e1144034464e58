package memlimit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"modernc.org/libc"
	_ "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/catalogd/catalogd/test/benchenv"
)

// testSQLite is the budget this test binary runs with: a soft heap limit
// far below the data TestApplySQLite reads.
var testSQLite = SQLite{SoftHeapLimit: 4 << 20, HardHeapLimit: 256 << 20}

func TestMain(m *testing.M) {
	// SQLite takes the settings only before its first connection opens,
	// so before any test runs.
	if err := ApplySQLite(testSQLite); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestApplySQLite writes and reads 24 MiB of rows through a connection
// whose page cache could hold all of them, and checks that SQLite's
// memory, as it counts it and as the process's resident set shows it,
// stayed near the soft heap limit: SQLite recycles its cache once the
// limit is reached. Without memory counting (the driver's default) SQLite
// keeps the limit but ignores it, and the cache takes all 24 MiB and more.
func TestApplySQLite(t *testing.T) {
	const mib = 1 << 20
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "big.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=cache_size(-131072)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tls := libc.NewTLS()
	defer tls.Close()
	sqlite3.Xsqlite3_memory_highwater(tls, 1) // start a new peak
	benchenv.ResetPeakRSS(t)
	before := benchenv.RSSMiB()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		`CREATE TABLE t (b BLOB)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 3072) INSERT INTO t SELECT randomblob(8192) FROM n`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for pragma, want := range map[string]int64{"soft_heap_limit": testSQLite.SoftHeapLimit, "hard_heap_limit": testSQLite.HardHeapLimit} {
		var got int64
		if err := conn.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %d, want %d", pragma, got, want)
		}
	}

	var total int64
	if err := conn.QueryRowContext(ctx, `SELECT sum(length(b)) FROM t`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	grew := benchenv.PeakRSSMiB() - before
	peak := sqlite3.Xsqlite3_memory_highwater(tls, 0)
	t.Logf("wrote and read %d MiB: SQLite's peak %.1f MiB, the resident set grew by %.1f MiB", total/mib, float64(peak)/mib, grew)
	if total != 3072*8192 {
		t.Fatalf("read %d bytes, want %d", total, 3072*8192)
	}
	if peak == 0 {
		t.Error("SQLite counts none of its memory: its heap limits are ignored")
	}
	// The limit is soft: what a statement holds besides the cache may pass it.
	if peak > testSQLite.SoftHeapLimit+mib {
		t.Errorf("SQLite held up to %.1f MiB, over its soft heap limit of %d MiB", float64(peak)/mib, testSQLite.SoftHeapLimit/mib)
	}
	// The allocator takes up to twice what SQLite asks for a page; the rest
	// is slack for the Go side of the query.
	if bound := float64(2*testSQLite.SoftHeapLimit)/mib + 8; grew > bound {
		t.Errorf("the resident set grew by %.1f MiB writing and reading 24 MiB; want at most %.0f MiB", grew, bound)
	}
}

func TestApplySQLiteOnceStarted(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	if err := ApplySQLite(testSQLite); !errors.Is(err, ErrSQLiteStarted) {
		t.Errorf("ApplySQLite once SQLite started: %v, want %v", err, ErrSQLiteStarted)
	}
}
