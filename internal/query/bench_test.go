package query

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/test/benchenv"
)

// BenchmarkHTTP serves three copies of the benchmark catalog over loopback
// HTTP and reports p50/p99 latency per endpoint, the request rate with
// concurrent clients, and the peak RSS while serving.
func BenchmarkHTTP(b *testing.B) {
	dir := benchenv.Catalog(b)
	store, err := index.NewStore(b.TempDir(), logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	reg := catalogs.NewTable()
	reg.MarkLoaded()
	for i, name := range []string{"one", "two", "three"} {
		if _, _, _, err := store.Update(context.Background(), name, index.Source{FS: os.DirFS(dir), Ref: dir, Digest: fmt.Sprintf("sha256:%d", i)}); err != nil {
			b.Fatal(err)
		}
		reg.Put(catalogs.Catalog{Name: name, Source: dir, State: catalogs.Serving})
	}
	srv := httptest.NewServer(New(reg, store, logr.Discard()))
	defer srv.Close()

	snap, err := store.Acquire("one")
	if err != nil {
		b.Fatal(err)
	}
	var pkg, channel, head, from, group, version, kind, tgroup, tversion, tkind string
	db := snap.DB
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(db.Get(&pkg, `SELECT package FROM bundles GROUP BY package ORDER BY count(*) DESC LIMIT 1`))
	must(db.Get(&channel, `SELECT default_channel FROM packages WHERE name = ?`, pkg))
	must(db.Get(&head, `SELECT head FROM channels WHERE package = ? AND name = ?`, pkg, channel))
	must(db.Get(&from, `SELECT bundle FROM channel_entries WHERE package = ? AND channel = ? ORDER BY position LIMIT 1`, pkg, channel))
	// The widest GVK (the most providers) and a typical one (the median).
	const byProviders = `SELECT grp, version, kind FROM provided_gvks GROUP BY grp, version, kind ORDER BY count(DISTINCT bundle_id) DESC, kind LIMIT 1 OFFSET ?`
	var distinct int
	must(db.Get(&distinct, `SELECT count(*) FROM (SELECT DISTINCT grp, version, kind FROM provided_gvks)`))
	must(db.QueryRow(byProviders, 0).Scan(&group, &version, &kind))
	must(db.QueryRow(byProviders, distinct/2).Scan(&tgroup, &tversion, &tkind))
	snap.Release()

	gvk := "group=" + url.QueryEscape(group) + "&version=" + version + "&kind=" + kind
	typical := "group=" + url.QueryEscape(tgroup) + "&version=" + tversion + "&kind=" + tkind
	base := "/catalogs/one/packages/" + pkg
	endpoints := []struct{ name, path string }{
		{"catalogs", "/catalogs"},
		{"packages", "/catalogs/one/packages?limit=50"},
		{"search", "/catalogs/one/packages?q=operator&limit=20"},
		{"package", base},
		{"channels-with-heads", base + "/channels"},
		{"channel-entries", base + "/channels/" + channel},
		{"bundles", base + "/bundles?limit=20&version=" + url.QueryEscape(">=0.0.0")},
		{"bundle", base + "/bundles/" + head},
		{"upgrades", base + "/upgrades?from=" + from},
		{"providers-typical", "/catalogs/one/providers?" + typical},
		{"providers-typical-latest", "/catalogs/one/providers?latest=true&" + typical},
		{"providers-all-catalogs-typical", "/providers?" + typical},
		{"providers-widest", "/catalogs/one/providers?" + gvk},
		{"metas-package", "/catalogs/one/api/v1/metas?schema=olm.package"},
	}
	debug.FreeOSMemory()
	benchenv.ResetPeakRSS()
	get := func(path string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: status %d", path, resp.StatusCode)
		}
	}
	const n = 1000
	for _, ep := range endpoints {
		b.Run(ep.name, func(b *testing.B) {
			for b.Loop() {
				lat := make([]time.Duration, n)
				for i := range lat {
					start := time.Now()
					get(ep.path)
					lat[i] = time.Since(start)
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
	b.Run("rate", func(b *testing.B) {
		for b.Loop() {
			var done atomic.Int64
			deadline := time.Now().Add(3 * time.Second)
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := w; time.Now().Before(deadline); i++ {
						get(endpoints[3+i%10].path)
						done.Add(1)
					}
				}(w)
			}
			wg.Wait()
			b.ReportMetric(float64(done.Load())/3, "req/s")
		}
	})
	// The peak since the indexes were built: serving the three catalogs,
	// with the load generator in the same process.
	b.Run("memory", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(benchenv.PeakRSSMiB(), "serving-peak-RSS-MiB")
	})
}
