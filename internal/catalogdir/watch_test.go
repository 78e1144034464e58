package catalogdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
)

// recorder counts onChange calls and can hold them, to make a burst of
// changes happen while a call is running.
type recorder struct {
	mu    sync.Mutex
	calls int
	hold  chan struct{} // when non-nil, a call waits for it to close
	held  chan struct{} // closed when a call starts waiting on hold
	// marker, when set, is a file whose existence each call records in saw.
	marker string
	saw    []bool
}

func (r *recorder) onChange() {
	r.mu.Lock()
	r.calls++
	if r.marker != "" {
		_, err := os.Stat(r.marker)
		r.saw = append(r.saw, err == nil)
	}
	hold, held := r.hold, r.held
	r.hold, r.held = nil, nil
	r.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// holdNext makes the next call wait until release is called; started is
// closed when that call has begun.
func (r *recorder) holdNext() (started <-chan struct{}, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hold, held := make(chan struct{}), make(chan struct{})
	r.hold, r.held = hold, held
	return held, func() { close(hold) }
}

// startWatch runs Watch on dir until the test ends and waits until it is
// watching (a probe file makes a call).
func startWatch(t *testing.T, dir string, debounce time.Duration) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), testr.New(t)))
	rec := &recorder{}
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, dir, debounce, rec.onChange) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v", err)
		}
	})
	// Watch gives no sign of having added its watches; a write that makes
	// a call is one. Each attempt waits past the debounce period, so that
	// retries do not keep postponing the call they wait for.
	// A test may set a debounce far longer than it runs, to show that a
	// call came without it: then the probe, a write closed at once, is
	// what makes the call, and a second is enough to wait for it.
	period := min(debounce, 250*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	probe := filepath.Join(dir, ".probe")
	for i := 0; rec.count() == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("Watch never reported the start-up probe")
		}
		if err := os.WriteFile(probe, []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		for wait := time.Now().Add(4*period + 50*time.Millisecond); rec.count() == 0 && time.Now().Before(wait); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The probe may have made more than one call; wait for the quiet.
	waitStable(t, rec, period)
	return rec
}

// watchedCatalog makes a catalog directory of two files, one two
// directories deep, and watches it: the directory, the recorder and its
// count of calls once the watch is settled.
func watchedCatalog(t *testing.T, debounce time.Duration) (string, *recorder, int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	write(t, filepath.Join(dir, "catalog.json"), "{}")
	write(t, filepath.Join(dir, "sub", "inner", "catalog.json"), "{}")
	rec := startWatch(t, dir, debounce)
	return dir, rec, rec.count()
}

// waitFor polls until the recorder has seen at least n calls.
func waitFor(t *testing.T, rec *recorder, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for rec.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("waited for call %d; saw %d", n, rec.count())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStable returns once no call came for four periods: used only to
// settle the start-up probe, never to assert anything.
func waitStable(t *testing.T, rec *recorder, period time.Duration) {
	t.Helper()
	last := rec.count()
	for quiet := time.Now(); time.Since(quiet) < 4*period; time.Sleep(period / 4) {
		if n := rec.count(); n != last {
			last, quiet = n, time.Now()
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatchBurstMakesOneCall(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "catalog.json"), "{}")
	const debounce = 100 * time.Millisecond
	rec := startWatch(t, dir, debounce)
	base := rec.count()
	// Each call from here on records whether the later change was made.
	marker := filepath.Join(dir, "later.json")
	rec.mu.Lock()
	rec.marker = marker
	rec.mu.Unlock()

	// Hold the call for a first change and make the burst meanwhile: its
	// events queue up and arrive together, so exactly one more call must
	// follow however slow the machine is.
	started, release := rec.holdNext()
	write(t, filepath.Join(dir, "catalog.json"), `{"first":true}`)
	<-started
	for i := range 20 {
		write(t, filepath.Join(dir, fmt.Sprintf("pkg-%d", i%4), "catalog.json"), fmt.Sprint(i))
	}
	release()
	waitFor(t, rec, base+2)

	// A later change makes its own call, and it must be the third: one for
	// the first change, one for the burst, none other before it.
	write(t, marker, "{}")
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec.mu.Lock()
		saw := append([]bool(nil), rec.saw...)
		rec.mu.Unlock()
		if len(saw) > 0 && saw[len(saw)-1] {
			if len(saw) != 3 {
				t.Fatalf("the later change made call %d, want 3 (first change, burst, later change)", len(saw))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no call came for the later change")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchEvents(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		// then, if set, is a change that must make a call after change did.
		then func(t *testing.T, dir string)
	}{
		{name: "write", change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "catalog.json"), `{"v":2}`)
		}},
		{name: "remove", change: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "catalog.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "save by rename over the old file", change: func(t *testing.T, dir string) {
			// What vim (backupcopy=no), sed -i and many editors do.
			tmp := filepath.Join(dir, ".catalog.json.swp")
			write(t, tmp, `{"v":3}`)
			if err := os.Rename(tmp, filepath.Join(dir, "catalog.json")); err != nil {
				t.Fatal(err)
			}
		}, then: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "catalog.json"), `{"v":4}`)
		}},
		{name: "new subdirectory is watched", change: func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "new", "deeper"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, then: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "new", "deeper", "catalog.json"), "{}")
		}},
		{name: "directory moved in is watched", change: func(t *testing.T, dir string) {
			staged := filepath.Join(t.TempDir(), "pkg")
			write(t, filepath.Join(staged, "sub", "catalog.json"), "{}")
			if err := os.Rename(staged, filepath.Join(dir, "pkg")); err != nil {
				t.Skipf("cannot rename across temp directories here: %v", err)
			}
		}, then: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "pkg", "sub", "catalog.json"), `{"v":2}`)
		}},
		{name: "subdirectory renamed is still watched", change: func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "moved")); err != nil {
				t.Fatal(err)
			}
		}, then: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "moved", "inner", "catalog.json"), `{"v":2}`)
		}},
		{name: "existing deep file", change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "sub", "inner", "catalog.json"), `{"v":2}`)
		}},
		{name: "root replaced", change: func(t *testing.T, dir string) {
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
		}, then: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "catalog.json"), `{"v":5}`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, rec, base := watchedCatalog(t, 50*time.Millisecond)

			tc.change(t, dir)
			waitFor(t, rec, base+1)
			if tc.then == nil {
				return
			}
			n := rec.count()
			tc.then(t, dir)
			waitFor(t, rec, n+1)
		})
	}
}

func TestWatchFailsOnMissingDir(t *testing.T) {
	err := Watch(context.Background(), filepath.Join(t.TempDir(), "missing"), 0, func() {})
	if err == nil {
		t.Fatal("Watch of a missing directory returned nil")
	}
}
