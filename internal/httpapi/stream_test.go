package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// streamCatalog's streamed answers (about 2 MB of JSON, 200 KB gzipped)
// take many queries and many writes, so a handler that went on after it
// should have stopped would write much more than it is let write first.
var streamCatalog = fbcgen.Options{Packages: 10, Bundles: 300, Seed: 5}

// TestStreamsStopAndRelease: a streamed answer stops at its first failed
// write (what a write deadline or a vanished client looks like), and soon
// after its request's context ends, and then lets go of its index snapshot,
// so an index retired meanwhile is removed as the handler returns.
func TestStreamsStopAndRelease(t *testing.T) {
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, streamCatalog); err != nil {
		t.Fatal(err)
	}
	st, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	traced := newTracingIndexes(t, st)
	h := newHarnessWith(t, st, traced)
	h.add("c", dir, 0)
	api := h.srv.Config.Handler
	rebuilds := 0
	update := func(t *testing.T, dir string) store.Info {
		t.Helper()
		rebuilds++
		info, _, _, err := st.Update(context.Background(), "c", index.Content{FS: os.DirFS(dir), Ref: dir, Digest: fmt.Sprintf("sha256:%d", rebuilds)})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	// serve answers req, taking the abort net/http would turn into a reset.
	serve := func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			if v := recover(); v != nil && v != http.ErrAbortHandler {
				panic(v)
			}
		}()
		api.ServeHTTP(w, req)
	}

	for _, rq := range []struct {
		name, path string
		header     []string
	}{
		{"all", "/catalogs/c/api/v1/all", []string{"Accept-Encoding", "identity"}},
		{"all gzip", "/catalogs/c/api/v1/all", []string{"Accept-Encoding", "gzip"}},
		{"all two ranges", "/catalogs/c/api/v1/all", []string{"Accept-Encoding", "identity", "Range", "bytes=0-99,1000-"}},
		{"metas", "/catalogs/c/api/v1/metas", []string{"Accept-Encoding", "identity"}},
		{"metas bundles gzip", "/catalogs/c/api/v1/metas?schema=olm.bundle", []string{"Accept-Encoding", "gzip"}},
	} {
		newRequest := func(ctx context.Context) *http.Request {
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, rq.path, nil)
			for i := 0; i+1 < len(rq.header); i += 2 {
				req.Header.Set(rq.header[i], rq.header[i+1])
			}
			return req
		}
		update(t, dir)
		whole := httptest.NewRecorder()
		serve(whole, newRequest(context.Background()))
		if whole.Code/100 != 2 || whole.Body.Len() < 128<<10 {
			t.Fatalf("%s: status %d, %d bytes; want a whole answer of over 128 KiB", rq.name, whole.Code, whole.Body.Len())
		}
		for _, fail := range []bool{true, false} {
			name := rq.name + "/context ends"
			if fail {
				name = rq.name + "/write fails"
			}
			t.Run(name, func(t *testing.T) {
				old := update(t, dir)
				oldTrace := traced.file(old.Path).trace // to count the old index's queries
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var queriesAtStop int64
				w := &stoppingWriter{header: http.Header{}, limit: 16 << 10, fail: fail, stop: func() {
					// The handler holds the old index: this retires it.
					update(t, demoDir)
					if !fail {
						cancel()
					}
					queriesAtStop = oldTrace.Runs()
				}}
				serve(w, newRequest(ctx))
				// One query may follow: the one that finds the context
				// ended, or one net/http's multipart goroutine had begun.
				if n := oldTrace.Runs() - queriesAtStop; n > 1 {
					t.Errorf("%d queries after the answer was stopped", n)
				}
				if w.stop != nil {
					t.Fatalf("the answer ended after %d bytes, before the writer stopped it", w.written)
				}
				if w.writesAfterFailure > 0 {
					t.Errorf("%d writes after the first failed one", w.writesAfterFailure)
				}
				if !fail && w.written >= whole.Body.Len() {
					t.Errorf("the context ended after %d bytes, yet all %d bytes were written", w.limit, w.written)
				}
				if _, err := os.Stat(old.Path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the retired index is still on disk after the handler returned (%v): the snapshot was not released", err)
				}
			})
		}
	}
}

// stoppingWriter is a ResponseWriter that takes limit bytes and, at the
// first write past them, calls stop; when fail is set it then fails that
// write and every later one, else it takes everything.
type stoppingWriter struct {
	header http.Header
	limit  int
	fail   bool
	stop   func()

	written            int
	failed             bool
	writesAfterFailure int
}

var errBrokenPipe = errors.New("write: broken pipe")

func (w *stoppingWriter) Header() http.Header { return w.header }

func (w *stoppingWriter) WriteHeader(int) {}

func (w *stoppingWriter) Write(p []byte) (int, error) {
	if w.failed {
		w.writesAfterFailure++
		return 0, errBrokenPipe
	}
	if w.written >= w.limit && w.stop != nil {
		w.stop()
		w.stop = nil
		if w.fail {
			w.failed = true
			return 0, errBrokenPipe
		}
	}
	w.written += len(p)
	return len(p), nil
}
