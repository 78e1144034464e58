package packageapi

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
	"github.com/catalogd/catalogd/test/benchenv"
)

// BenchmarkPackageAPI measures the package API over the benchmark catalog
// (CATALOGD_BENCH_CATALOG; make bench's 8,000 bundles) against envtest:
// the resident memory the server adds to a process that already serves
// the index (rss-growth-MiB: after start-up and a list of everything, the
// runtime's garbage given back), a list of every package and a get of one
// through real HTTPS with token review and access review, and how long
// after a swap becomes visible its watch event arrives (goals: 300 ms,
// 20 ms, 1 s, 20 MiB).
func BenchmarkPackageAPI(b *testing.B) {
	src := benchenv.Catalog(b)
	// A copy the benchmark may change: one package directory moves out and
	// back, a DELETED and an ADDED per swap.
	dir := filepath.Join(b.TempDir(), "catalog")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	cat := testCatalog{dir: dir}
	e := startEnvNoServer(b, map[string]testCatalog{"bench": cat})
	settle := func() float64 {
		runtime.GC()
		debug.FreeOSMemory()
		return benchenv.RSSMiB()
	}
	before := settle()
	e.startServer(b)
	// Only the list's size and one name are kept: the client's decoded
	// copy of it is not the server's memory.
	count, name, jsonMiB := func() (int, string, float64) {
		list := e.list(b, e.reader, testNamespace, nil)
		if len(list.Items) == 0 {
			b.Fatal("the catalog has no package the API serves")
		}
		return len(list.Items), list.Items[len(list.Items)/2].Name, float64(len(jsonOf(b, list))) / (1 << 20)
	}()
	after := settle()
	b.Logf("%d package manifests (%.1f MiB as JSON); RSS %.1f MiB before the package API, %.1f MiB after start-up and a list",
		count, jsonMiB, before, after)

	b.Run("ListAll", func(b *testing.B) {
		rc := e.client(b, e.reader)
		b.ResetTimer()
		for b.Loop() {
			var l pkgv1.PackageManifestList
			if err := rc.Get().Namespace(testNamespace).Resource("packagemanifests").Do(context.Background()).Into(&l); err != nil {
				b.Fatal(err)
			}
			if len(l.Items) != count {
				b.Fatalf("%d items, want %d", len(l.Items), count)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/list")
	})
	b.Run("GetOne", func(b *testing.B) {
		rc := e.client(b, e.reader)
		b.ResetTimer()
		for b.Loop() {
			var m pkgv1.PackageManifest
			if err := rc.Get().Namespace(testNamespace).Resource("packagemanifests").Name(name).Do(context.Background()).Into(&m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/get")
	})
	b.Run("WatchAfterSwap", func(b *testing.B) {
		var (
			mu      sync.Mutex
			swapped time.Time
		)
		e.store.Watch(func(string) {
			mu.Lock()
			swapped = time.Now()
			mu.Unlock()
		})
		pkgDir := filepath.Join(dir, name)
		aside := filepath.Join(b.TempDir(), name)
		var worst time.Duration
		away := false
		for i := 0; b.Loop(); i++ {
			l := e.list(b, e.reader, testNamespace, nil)
			w, err := e.client(b, e.reader).Get().Namespace(testNamespace).Resource("packagemanifests").
				VersionedParams(&metav1.ListOptions{Watch: true, ResourceVersion: l.ResourceVersion}, metav1.ParameterCodec).Watch(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			from, to, want := pkgDir, aside, watch.Deleted
			if i%2 == 1 {
				from, to, want = aside, pkgDir, watch.Added
			}
			if err := os.Rename(from, to); err != nil {
				b.Fatal(err)
			}
			away = !away
			e.index(b, "bench", cat)
			ev := <-w.ResultChan()
			arrived := time.Now()
			w.Stop()
			if ev.Type != want || ev.Object.(*pkgv1.PackageManifest).Name != name {
				b.Fatalf("event %s %v, want %s %s", ev.Type, ev.Object, want, name)
			}
			mu.Lock()
			worst = max(worst, arrived.Sub(swapped))
			mu.Unlock()
		}
		b.ReportMetric(float64(worst.Microseconds())/1000, "ms-worst-event-after-swap")
		// An odd number of rounds leaves the package out: put it back, so
		// that the next run (-count) starts from the whole catalog.
		if away {
			if err := os.Rename(aside, pkgDir); err != nil {
				b.Fatal(err)
			}
			e.index(b, "bench", cat)
		}
	})
	b.Run("RSSGrowth", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(after-before, "rss-growth-MiB")
		b.ReportMetric(after, "rss-MiB")
	})
}
