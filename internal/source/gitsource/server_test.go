package gitsource_test

import (
	"crypto/subtle"
	"encoding/pem"
	"github.com/catalogd/catalogd/test/gittest"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// gitServer serves the bare repositories under root with Debian's git
// http-backend, counting what it is asked and sends.
type gitServer struct {
	*httptest.Server
	root string

	mu       sync.Mutex
	requests []string // "METHOD PATH?QUERY"
	sent     atomic.Int64
	// received counts the bytes read from every connection, requests or
	// not.
	received atomic.Int64

	// auth, when set, answers whether a request may go on (else 401).
	auth func(*http.Request) bool
	// stall, when set, holds the requests it matches until they are cut.
	stall func(*http.Request) bool
}

func newGitServer(t testing.TB, tls bool) *gitServer {
	t.Helper()
	gittest.Need(t)
	s := &gitServer{root: t.TempDir()}
	backend := &cgi.Handler{
		Path: gittest.Binary,
		Args: []string{"http-backend"},
		Dir:  s.root,
		Env:  append(gittest.Env(s.root), "GIT_PROJECT_ROOT="+s.root, "GIT_HTTP_EXPORT_ALL=1"),
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		if s.stall != nil && s.stall(r) {
			// Once the body is read, the server notices the client leave.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		if s.auth != nil && !s.auth(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "secret body text that must never reach an error", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(&countingWriter{ResponseWriter: w, n: &s.sent}, r)
	})
	s.Server = httptest.NewUnstartedServer(h)
	s.Listener = countingListener{Listener: s.Listener, n: &s.received}
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// countingListener counts what its connections read.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// caPEM is the TLS server's certificate, to trust.
func (s *gitServer) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// reset forgets the requests and bytes counted so far.
func (s *gitServer) reset() {
	s.mu.Lock()
	s.requests = nil
	s.mu.Unlock()
	s.sent.Store(0)
}

func (s *gitServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// basicAuth accepts user:password only.
func basicAuth(user, password string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		u, p, ok := r.BasicAuth()
		return ok && subtle.ConstantTimeCompare([]byte(u+":"+p), []byte(user+":"+password)) == 1
	}
}

// bearerAuth accepts the token only.
func bearerAuth(token string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }
}
