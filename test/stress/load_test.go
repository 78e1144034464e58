package stress

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// toggleFile is the one file in which the two versions of the load test's
// catalog differ: a small package whose description names the version.
const toggleFile = "stress-toggle.json"

func toggleContent(version string) []byte {
	return fmt.Appendf(nil, `{"schema":"olm.package","name":"stress-toggle","defaultChannel":"stable","description":"version %[1]s"}
{"schema":"olm.channel","package":"stress-toggle","name":"stable","entries":[{"name":"stress-toggle.v1.0.0"}]}
{"schema":"olm.bundle","package":"stress-toggle","name":"stress-toggle.v1.0.0","image":"example.com/stress-toggle@sha256:%[2]s","properties":[{"type":"olm.package","value":{"packageName":"stress-toggle","version":"1.0.0"}}]}
`, version, sha([]byte(version)))
}

// writeAtomically replaces path with content through a rename from a file
// outside the catalog, so the watcher never sees a half-written file and the
// catalog is always exactly one of the two versions.
func writeAtomically(t *testing.T, path, scratch string, content []byte) {
	t.Helper()
	if err := os.WriteFile(scratch, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(scratch, path); err != nil {
		t.Fatal(err)
	}
}

// loadStats is what the load's clients saw.
type loadStats struct {
	requests, failures atomic.Int64
	perVersion         sync.Map // version name -> *atomic.Int64

	mu     sync.Mutex
	book   *etagBook
	sample []string // the first failures
}

func (s *loadStats) fail(format string, args ...any) {
	s.failures.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sample) < 10 {
		s.sample = append(s.sample, fmt.Sprintf(format, args...))
	}
}

func (s *loadStats) saw(etag string, v *version, gzip bool) error {
	n, _ := s.perVersion.LoadOrStore(v.name, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.book.see(etag, v, gzip)
}

// TestRebuildUnderLoad rebuilds a watched catalog over and over, its content
// alternating between two versions, while 8 clients query it: no request
// may fail, and every answer must be exactly one version's, with that
// version's ETag. CATALOGD_STRESS_SWAPS sets the number of rebuilds (10, or
// 100 with CATALOGD_SLOW=1).
func TestRebuildUnderLoad(t *testing.T) {
	swaps := 10
	if os.Getenv("CATALOGD_SLOW") != "" {
		swaps = 100
	}
	swaps = envInt(t, "CATALOGD_STRESS_SWAPS", swaps)
	const clients = 8
	budget := int64(envInt(t, "CATALOGD_STRESS_REQUESTS", 2_000_000))
	timeLimit := time.Duration(swaps)*10*time.Second + time.Minute

	root := t.TempDir()
	base := filepath.Join(root, "base")
	generate(t, base, fbcgen.Options{Packages: 15, Bundles: 120, Icons: true, Seed: 3})
	var versions [2]*version
	for i, name := range []string{"a", "b"} {
		dir := filepath.Join(root, "ref-"+name)
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, toggleFile), toggleContent(name), 0o644); err != nil {
			t.Fatal(err)
		}
		versions[i] = newVersion(t, name, dir)
	}
	live := filepath.Join(root, "catalog")
	if err := os.CopyFS(live, os.DirFS(versions[0].dir)); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(root, "data")
	srv := start(t, "--data-dir", dataDir, "--catalog", "c="+live, "--watch")
	srv.waitSynced(t)

	stats := &loadStats{book: newETagBook()}
	ctx, cancel := context.WithTimeout(context.Background(), timeLimit)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: clients}
	defer transport.CloseIdleConnections()
	httpc := &http.Client{Transport: transport}

	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := stats.requests.Add(1)
				if n > budget {
					stats.requests.Add(-1)
					return
				}
				// Every other request takes gzip, which has its own ETag.
				gzip := n%2 == 0
				status, etag, sum, err := getAll(ctx, httpc, srv.base, "c", gzip)
				switch {
				case err != nil && ctx.Err() != nil:
					stats.requests.Add(-1) // cut off by the end of the test
					return
				case err != nil:
					stats.fail("GET /api/v1/all: %v", err)
				case status != http.StatusOK:
					stats.fail("GET /api/v1/all: status %d", status)
				default:
					v := versionOf(sum, versions[0], versions[1])
					if v == nil {
						stats.fail("GET /api/v1/all: a body (sha256 %s) that is neither version", sum)
					} else if err := stats.saw(etag, v, gzip); err != nil {
						stats.fail("GET /api/v1/all: %v", err)
					}
				}
			}
		})
	}

	// Swap versions, waiting each time until the new one answers.
	scratch := filepath.Join(root, "scratch.json")
	current := 0
	done := 0
	start := time.Now()
	for ; done < swaps && ctx.Err() == nil; done++ {
		current = 1 - current
		writeAtomically(t, filepath.Join(live, toggleFile), scratch, toggleContent(versions[current].name))
		if !waitForVersion(ctx, srv.base, versions[current], versions[1-current]) {
			t.Errorf("swap %d: version %s never answered (the watch missed the change, or the build failed): %v", done+1, versions[current].name, ctx.Err())
			break
		}
	}
	elapsed := time.Since(start)
	cancel()
	wg.Wait()

	count := func(name string) int64 {
		if n, ok := stats.perVersion.Load(name); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	t.Logf("%d clients, %d swaps in %s: %d requests (%d answered version a, %d version b), %d failures",
		clients, done, elapsed.Round(time.Millisecond), stats.requests.Load(), count("a"), count("b"), stats.failures.Load())
	if n := stats.failures.Load(); n > 0 {
		t.Errorf("%d of %d requests failed; the first: %q", n, stats.requests.Load(), stats.sample)
	}
	if done < swaps {
		t.Errorf("only %d of %d swaps happened", done, swaps)
	}
	// The clients are done; the server's handlers of requests they
	// abandoned finish when their writes fail, and the last reader of a
	// retired index removes it. A file still there after that leaked.
	var extra []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if extra = leftovers(t, dataDir); len(extra) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(extra) > 0 {
		t.Errorf("left in the data directory 10 s after the load ended: %v", extra)
	}
	if _, _, _, lastErr := catalogCounts(t, srv.base, "c"); lastErr != "" {
		t.Errorf("lastError %q after the swaps", lastErr)
	}
}

// waitForVersion polls /api/v1/all until it answers want; it is false when
// ctx ends first or the answer is neither version.
func waitForVersion(ctx context.Context, base string, want, old *version) bool {
	for ctx.Err() == nil {
		status, _, sum, err := getAll(ctx, http.DefaultClient, base, "c", false)
		if err == nil && status == http.StatusOK {
			switch versionOf(sum, want, old) {
			case want:
				return true
			case nil:
				return false
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
