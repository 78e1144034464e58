package httpsource_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/loopdial"
)

// catalogFiles is a small FBC directory: what each archive holds.
var catalogFiles = map[string]string{
	"demo/package.json": `{"schema":"olm.package","name":"demo","defaultChannel":"stable"}`,
	"demo/channel.yaml": "schema: olm.channel\npackage: demo\nname: stable\nentries:\n- name: demo.v1.0.0\n",
	"demo/bundle.json":  `{"schema":"olm.bundle","package":"demo","name":"demo.v1.0.0","image":"example.com/demo:v1","properties":[]}`,
}

// entry is one raw tar entry, written as given (hostile ones included).
type entry struct {
	name     string
	typeflag byte
	linkname string
	body     string
}

func filesOf(files map[string]string) []entry {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]entry, 0, len(names))
	for _, n := range names {
		out = append(out, entry{name: n, typeflag: tar.TypeReg, body: files[n]})
	}
	return out
}

func makeTar(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.linkname, Mode: 0o644}
		if e.typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if e.typeflag == tar.TypeChar {
			hdr.Devmajor, hdr.Devminor = 1, 3
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// doc is what the server serves at one path.
type doc struct {
	body         []byte
	contentType  string
	etag         string
	lastModified time.Time
	// status, when set, is answered with a body of its own instead.
	status     int
	statusBody string
	// redirect, when set, answers 302 to it.
	redirect string
	// auth, when set, is the Authorization header wanted.
	auth string
	// stall blocks before the headers (stall == "headers") or after the
	// first bytes of the body ("body") until the client goes away.
	stall string
	// chunked sends the body without Content-Length.
	chunked bool
}

// server is a real HTTP server on 127.0.0.1 counting what it is asked and
// what it sends.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	docs     map[string]doc
	requests int
	bytes    int64
	headers  []http.Header
}

func newServer(t testing.TB, tls bool) *server {
	s := &server{docs: map[string]doc{}}
	h := http.HandlerFunc(s.serve)
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *server) set(path string, d doc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[path] = d
}

func (s *server) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.bytes, s.headers = 0, 0, nil
}

func (s *server) counts() (requests int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.bytes
}

func (s *server) lastHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.headers) == 0 {
		return nil
	}
	return s.headers[len(s.headers)-1]
}

type countingWriter struct {
	http.ResponseWriter
	s *server
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.s.mu.Lock()
	w.s.bytes += int64(n)
	w.s.mu.Unlock()
	return n, err
}

func (w countingWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.headers = append(s.headers, r.Header.Clone())
	d, ok := s.docs[r.URL.Path]
	s.mu.Unlock()
	cw := countingWriter{ResponseWriter: w, s: s}
	switch {
	case !ok:
		http.NotFound(cw, r)
	case d.auth != "" && r.Header.Get("Authorization") != d.auth:
		http.Error(cw, "who are you", http.StatusUnauthorized)
	case d.redirect != "":
		http.Redirect(cw, r, d.redirect, http.StatusFound)
	case d.status != 0:
		http.Error(cw, d.statusBody, d.status)
	case d.stall == "headers":
		<-r.Context().Done()
	case d.stall == "body":
		cw.Header().Set("Content-Length", "1000")
		_, _ = cw.Write(d.body[:10])
		cw.Flush()
		<-r.Context().Done()
	case d.chunked:
		cw.Header().Set("Content-Type", d.contentType)
		_, _ = cw.Write(d.body[:1])
		cw.Flush()
		_, _ = cw.Write(d.body[1:])
	default:
		if d.contentType != "" {
			cw.Header().Set("Content-Type", d.contentType)
		} else {
			// ServeContent would guess one from the name or the bytes.
			cw.Header()["Content-Type"] = nil
		}
		if d.etag != "" {
			cw.Header().Set("ETag", d.etag)
		}
		http.ServeContent(cw, r, "", d.lastModified, bytes.NewReader(d.body))
	}
}

func newClient(t *testing.T, uopts unpack.Options, opts httpsource.Options) *httpsource.Client {
	t.Helper()
	u, err := unpack.New(uopts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Extractor = u
	if opts.DialContext == nil {
		opts.DialContext = loopdial.Dial
	}
	c, err := httpsource.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func never(string) bool { return false }

// emptyDir fails unless dir holds nothing: catalogd removed what it made.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in %s: %s", dir, filepath.Join(dir, e.Name()))
	}
}

// fetch runs one Fetch of url.
func fetch(t *testing.T, c *httpsource.Client, spec source.HTTP, auth httpsource.Auth, tmp string, skip func(string) bool) (source.Fetched, error) {
	t.Helper()
	return c.Fetcher(spec, auth, tmp).Fetch(context.Background(), skip)
}
