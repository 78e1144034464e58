package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

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

// TestMultiRangeReadsEndWithTheAnswer: an answer of several ranges is
// copied by net/http's own goroutine, which http.ServeContent does not wait
// for. When the answer stops (here a failed write just before the second
// part), that goroutine must not read the content after serveRanged
// returns, since the handler then releases the snapshot whose files the
// content reads. The content's read of the second part is held until
// serveRanged returns (or, if serveRanged waits for that read to end, for
// a while), so a read that outlives serveRanged is seen whatever the
// scheduling.
func TestMultiRangeReadsEndWithTheAnswer(t *testing.T) {
	const secondPart = 100
	returned := make(chan struct{})
	content := &heldContent{Reader: bytes.NewReader(bytes.Repeat([]byte("x"), 200)), holdFrom: secondPart, returned: returned}
	// With its type set, as serveAll sets it, ServeContent reads nothing
	// itself: every read of the content is its copying goroutine's.
	w := &secondPartFailer{header: http.Header{"Content-Type": {jsonlType}}}
	req := httptest.NewRequest(http.MethodGet, "/all", nil)
	req.Header.Set("Range", fmt.Sprintf("bytes=0-9,%d-%d", secondPart, secondPart+9))

	err := serveRanged(w, req, time.Time{}, content, 200)
	content.mu.Lock()
	content.serveReturned = true
	content.mu.Unlock()
	close(returned)
	if err != nil {
		t.Fatalf("serveRanged: %v", err)
	}
	if !w.failed {
		t.Fatalf("the answer was not stopped at the second part: %q written", w.written)
	}
	// Wait for net/http's copying goroutine to end, then look at what it
	// did after the return.
	waitForNoGoroutine(t, "net/http.serveContent.func1")
	content.mu.Lock()
	defer content.mu.Unlock()
	if content.readsAfterReturn > 0 {
		t.Errorf("%d reads or seeks of the content ran on after serveRanged returned", content.readsAfterReturn)
	}
}

// secondPartFailer is a ResponseWriter that takes a multipart answer up to
// the second part's boundary and fails that write and every later one.
type secondPartFailer struct {
	header  http.Header
	written []byte
	failed  bool
}

func (w *secondPartFailer) Header() http.Header { return w.header }

func (w *secondPartFailer) WriteHeader(int) {}

func (w *secondPartFailer) Write(p []byte) (int, error) {
	// The first part's boundary opens the body; every later one follows
	// the part before it on a new line.
	if w.failed || (len(w.written) > 0 && bytes.HasPrefix(p, []byte("\r\n--"))) {
		w.failed = true
		return 0, errBrokenPipe
	}
	w.written = append(w.written, p...)
	return len(p), nil
}

// waitForNoGoroutine waits until no goroutine runs the function named fn.
func waitForNoGoroutine(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := runtime.Stack(buf, true)
		if !bytes.Contains(buf[:n], []byte(fn+"(")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine still runs %s after 10s:\n%s", fn, buf[:n])
		}
	}
}

// heldContent is content whose reads at or past holdFrom wait until
// returned is closed, for at most holdFor, and that counts the reads and
// seeks under way or begun once serveReturned is set.
type heldContent struct {
	*bytes.Reader
	holdFrom int64
	returned chan struct{}

	mu               sync.Mutex
	serveReturned    bool
	readsAfterReturn int
}

// holdFor bounds the hold, so that a correct serveRanged, which waits for
// the held read before returning, is held up no longer than this.
const holdFor = 2 * time.Second

func (c *heldContent) Read(p []byte) (int, error) {
	c.noteIfAfterReturn()
	if pos, _ := c.Reader.Seek(0, io.SeekCurrent); pos >= c.holdFrom {
		select {
		case <-c.returned:
		case <-time.After(holdFor):
		}
	}
	n, err := c.Reader.Read(p)
	c.noteIfAfterReturn()
	return n, err
}

func (c *heldContent) Seek(offset int64, whence int) (int64, error) {
	c.noteIfAfterReturn()
	return c.Reader.Seek(offset, whence)
}

func (c *heldContent) noteIfAfterReturn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serveReturned {
		c.readsAfterReturn++
	}
}
