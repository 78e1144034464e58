// Package readermemory measures what a serving catalogd holds in memory
// while clients read it: the resident set under concurrent readers and
// SQLite's share of it, as SQLite itself counts it. It is a package of its
// own because SQLite counts its memory only when told to before the
// process opens its first connection (memlimit.ApplySQLite), which TestMain
// does here as cmd/catalogd does at start; no other test of the process may
// open a connection first.
package readermemory

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/memlimit"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/benchenv"
)

// budget is the memory plan of a catalogd with no memory limit, the one
// `catalogd serve` gets on a machine without a cgroup limit.
var budget = memlimit.Plan(0)

func TestMain(m *testing.M) {
	if err := memlimit.ApplySQLite(budget.SQLite); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// readersPerCatalog is as many readers as a catalog has connections
// (memlimit.Conns): more would wait for a connection, not hold more.
const readersPerCatalog = 8

// readFor is how long the readers read: long enough that every package of
// the bench catalog has been asked for several times.
const readFor = 10 * time.Second

// BenchmarkReadersMemory indexes the bench catalog (benchenv.Catalog) into
// a store wired as catalogd serve wires it (the memory plan's connections
// and page cache), serves it over loopback HTTP, and runs eight readers on
// it that ask random packages' package, channels, bundles and a search,
// and, in the "with-resolve" case, /resolve too. It reports the peak
// resident set during the readers and its growth over the idle server, the
// anonymous memory after them, and SQLite's memory in use and at its peak
// during the readers, as SQLite counts it (SQLITE_CONFIG_MEMSTATUS). Run
// with -benchtime 1x; each case builds its own index.
func BenchmarkReadersMemory(b *testing.B) {
	dir := benchenv.Catalog(b)
	packages := packageNames(b, dir)
	for _, tc := range []struct {
		name    string
		resolve bool
	}{{"queries", false}, {"with-resolve", true}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				readersMemory(b, dir, packages, tc.resolve)
			}
		})
	}
}

func readersMemory(b *testing.B, dir string, packages []string, resolve bool) {
	st, err := store.New(b.TempDir(), logr.Discard(), store.WithMemory(store.Memory{Conns: budget.SQLite.Conns, CacheKiB: budget.SQLite.CacheKiB}))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, _, _, err := st.Update(context.Background(), "c", index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:readers"}); err != nil {
		b.Fatalf("index %s: %v", dir, err)
	}
	table := catalogs.NewTable()
	table.Put(catalogs.Catalog{Name: "c", Source: dir})
	table.MarkLoaded()
	srv := httptest.NewServer(httpapi.New(table, st, httpapi.Options{Log: logr.Discard()}))
	defer srv.Close()
	debug.FreeOSMemory()
	idle := benchenv.RSSMiB()

	tls := libc.NewTLS()
	defer tls.Close()
	benchenv.ResetPeakRSS(b)
	sqlite3.Xsqlite3_memory_highwater(tls, 1)
	b.ResetTimer()
	requests := read(b, srv.URL, packages, resolve)
	b.StopTimer()
	peak := benchenv.PeakRSSMiB()
	sqlitePeak := float64(sqlite3.Xsqlite3_memory_highwater(tls, 0)) / (1 << 20)
	sqliteUsed := float64(sqlite3.Xsqlite3_memory_used(tls)) / (1 << 20)
	if sqlitePeak == 0 {
		b.Fatal("SQLite counted no memory: its counting is off, so its share cannot be told")
	}
	b.ReportMetric(float64(requests)/readFor.Seconds(), "req/s")
	b.ReportMetric(idle, "idle-VmRSS-MiB")
	b.ReportMetric(peak, "readers-VmHWM-MiB")
	b.ReportMetric(peak-idle, "growth-MiB")
	b.ReportMetric(benchenv.ProcessMemoryMiB(os.Getpid(), "RssAnon"), "after-RssAnon-MiB")
	b.ReportMetric(sqliteUsed, "sqlite-used-MiB")
	b.ReportMetric(sqlitePeak, "sqlite-peak-MiB")
}

// read runs readersPerCatalog readers against base for readFor and returns
// how many answers they got. Any answer but 200 fails the benchmark: a
// figure measured on errors would say nothing.
func read(b *testing.B, base string, packages []string, resolve bool) int64 {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: readersPerCatalog}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(readFor)
	var requests atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for r := range readersPerCatalog {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), 1))
			for time.Now().Before(deadline) && failed.Load() == nil {
				p := url.PathEscape(packages[rnd.IntN(len(packages))])
				paths := []string{"/catalogs/c/packages/" + p, "/catalogs/c/packages/" + p + "/channels",
					"/catalogs/c/packages/" + p + "/bundles", "/catalogs/c/packages?limit=50&q=" + url.QueryEscape(p[:min(3, len(p))])}
				if resolve {
					paths = append(paths, "/resolve?package="+url.QueryEscape(packages[rnd.IntN(len(packages))]))
				}
				for _, path := range paths {
					if err := get(client, base+path); err != nil {
						failed.CompareAndSwap(nil, err)
						return
					}
					requests.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return requests.Load()
}

func get(client *http.Client, u string) error {
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return nil
}

// packageNames lists the catalog's packages, one directory each in the
// catalogs the project's generator writes.
func packageNames(b *testing.B, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		b.Fatalf("%s has no package directories", dir)
	}
	return names
}
