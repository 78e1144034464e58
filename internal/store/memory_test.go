package store

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/memlimit"
	"github.com/catalogd/catalogd/test/benchenv"
)

// smallPod is the budget every test of this package runs under: what
// catalogd gives SQLite in a pod limited to 64 MiB.
var smallPod = memlimit.Plan(64 << 20)

func TestMain(m *testing.M) {
	// SQLite takes its heap limits only before its first connection.
	if err := memlimit.ApplySQLite(smallPod.SQLite); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestMemory checks that each live index is read through the connections
// and page cache it is given, whether built or reopened after a restart,
// and still answers under a small pod's SQLite heap limit.
func TestMemory(t *testing.T) {
	tests := []struct {
		name      string
		opts      []Option
		wantConns int
		wantCache int // PRAGMA cache_size: negative, in KiB
	}{
		{name: "defaults", wantConns: 8, wantCache: -512},
		{name: "zero fields take the defaults", opts: []Option{WithMemory(Memory{})}, wantConns: 8, wantCache: -512},
		{name: "a small pod's budget", opts: []Option{WithMemory(Memory{Conns: smallPod.SQLite.Conns, CacheKiB: smallPod.SQLite.CacheKiB})},
			wantConns: smallPod.SQLite.Conns, wantCache: -smallPod.SQLite.CacheKiB},
		{name: "two connections of 300 KiB", opts: []Option{WithMemory(Memory{Conns: 2, CacheKiB: 300})}, wantConns: 2, wantCache: -300},
	}
	const bundles = 500
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			check := func(s *Store) {
				t.Helper()
				s.mu.Lock()
				h := s.live["c"]
				s.mu.Unlock()
				if h == nil {
					t.Fatal("no live index")
				}
				if got := h.db.Stats().MaxOpenConnections; got != tt.wantConns {
					t.Errorf("%d connections, want %d", got, tt.wantConns)
				}
				var cache int
				if err := h.db.Get(&cache, "PRAGMA cache_size"); err != nil {
					t.Fatal(err)
				}
				if cache != tt.wantCache {
					t.Errorf("PRAGMA cache_size = %d, want %d", cache, tt.wantCache)
				}
				snap, err := s.Acquire("c")
				if err != nil {
					t.Fatal(err)
				}
				defer snap.Release()
				if got := countBundles(t, snap); got != bundles {
					t.Errorf("%d bundles, want %d", got, bundles)
				}
			}
			s, err := New(dir, testr.New(t), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			mustUpdate(t, s, "c", index.Content{FS: tinyCatalog("pkg", bundles), Digest: "sha256:1"})
			check(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			reopened, err := New(dir, testr.New(t), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer reopened.Close()
			check(reopened)
		})
	}
}

// The heap limits are in force for the tests above.
func TestSmallPodHeapLimit(t *testing.T) {
	s, _ := newTestStore(t)
	mustUpdate(t, s, "c", index.Content{FS: tinyCatalog("pkg", 10), Digest: "sha256:1"})
	s.mu.Lock()
	db := s.live["c"].db
	s.mu.Unlock()
	var soft, hard int64
	if err := db.QueryRowContext(context.Background(), "SELECT * FROM pragma_soft_heap_limit, pragma_hard_heap_limit").Scan(&soft, &hard); err != nil {
		t.Fatal(err)
	}
	if soft != smallPod.SQLite.SoftHeapLimit || hard != smallPod.SQLite.HardHeapLimit {
		t.Errorf("heap limits %d and %d, want %d and %d", soft, hard, smallPod.SQLite.SoftHeapLimit, smallPod.SQLite.HardHeapLimit)
	}
}

// TestUpdateCollectsOncePerSwap checks that each update that swaps in a
// new index forces a collection that returns the free heap to the kernel
// (debug.FreeOSMemory, as the runtime counts forced collections), rather
// than leaving what the build left for the runtime's background scavenger
// to return over the following minutes, and that an update that swaps
// nothing in forces none. The memory itself is not asserted on: the
// background scavenger returns most of it during a build anyway (of 64 MiB
// left free before a 300-bundle build, it had returned 62 MiB by the end
// of it), so no reading tells the two apart. BenchmarkUpdateFreeHeap
// measures what is left.
func TestUpdateCollectsOncePerSwap(t *testing.T) {
	s, _ := newTestStore(t)
	for _, step := range []struct {
		name   string
		src    index.Content
		forced uint64
	}{
		{name: "first index", src: index.Content{FS: tinyCatalog("pkg", 300), Digest: "sha256:1"}, forced: 1},
		{name: "same digest", src: index.Content{FS: tinyCatalog("pkg", 300), Digest: "sha256:1"}},
		{name: "new digest", src: index.Content{FS: tinyCatalog("pkg", 301), Digest: "sha256:2"}, forced: 1},
	} {
		before := benchenv.ForcedCollections()
		mustUpdate(t, s, "c", step.src)
		if got := benchenv.ForcedCollections() - before; got != step.forced {
			t.Errorf("%s: %d collections forced, want %d", step.name, got, step.forced)
		}
	}
}

// BenchmarkUpdateFreeHeap reports the free heap the runtime still holds
// right after a build of a 3,000-bundle catalog swaps in.
func BenchmarkUpdateFreeHeap(b *testing.B) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	var free uint64
	for i := 0; i < b.N; i++ {
		s, err := New(b.TempDir(), logr.Discard())
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := s.Update(context.Background(), "c", index.Content{FS: tinyCatalog("pkg", 3000), Digest: "sha256:1"}); err != nil {
			b.Fatal(err)
		}
		metrics.Read(sample)
		free += sample[0].Value.Uint64()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(free)/float64(b.N)/(1<<20), "free-heap-MiB")
}
