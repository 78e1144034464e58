package gitsource_test

import (
	"bytes"
	"crypto/subtle"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const gitBinary = "/usr/bin/git"

// needGit skips a test that needs Debian's git where it is absent.
func needGit(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(gitBinary); err != nil {
		t.Skipf("these tests run a real git server and build repositories with %s, which is absent", gitBinary)
	}
}

// gitEnv is the environment every git command of the tests runs with: no
// user or system configuration, a fixed identity and dates.
func gitEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"PATH=/usr/bin:/bin",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	}
}

// git runs git in dir and returns its trimmed output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gitBinary, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// repo is a working repository whose commits are pushed to a bare one
// that a server serves.
type repo struct {
	t          testing.TB
	work, bare string
}

// newRepo makes root/NAME.git (bare) and a work tree pushing to it.
func newRepo(t testing.TB, root, name string) *repo {
	t.Helper()
	bare := filepath.Join(root, name+".git")
	work := filepath.Join(t.TempDir(), "work")
	git(t, root, "init", "-q", "--bare", "-b", "main", bare)
	git(t, root, "init", "-q", "-b", "main", work)
	git(t, work, "remote", "add", "origin", bare)
	return &repo{t: t, work: work, bare: bare}
}

// write sets files (path → content; empty content removes the file) and
// commits them, returning the commit.
func (r *repo) commit(files map[string]string) string {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.work, p)
		if content == "" {
			if err := os.RemoveAll(full); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	git(r.t, r.work, "add", "-A")
	git(r.t, r.work, "commit", "-q", "--allow-empty", "-m", "change")
	return git(r.t, r.work, "rev-parse", "HEAD")
}

// push pushes refspecs to the bare repository, forced.
func (r *repo) push(refspecs ...string) {
	r.t.Helper()
	git(r.t, r.work, append([]string{"push", "-q", "-f", "origin"}, refspecs...)...)
}

// tree is the hash git itself gives the tree at commit:dir.
func (r *repo) tree(commit, dir string) string {
	r.t.Helper()
	return git(r.t, r.work, "rev-parse", commit+":"+dir)
}

// gitServer serves the bare repositories under root with Debian's git
// http-backend, counting what it is asked and sends.
type gitServer struct {
	*httptest.Server
	root string

	mu       sync.Mutex
	requests []string // "METHOD PATH?QUERY"
	sent     atomic.Int64

	// auth, when set, answers whether a request may go on (else 401).
	auth func(*http.Request) bool
	// stall, when set, holds the requests it matches until they are cut.
	stall func(*http.Request) bool
}

func newGitServer(t testing.TB, tls bool) *gitServer {
	t.Helper()
	needGit(t)
	s := &gitServer{root: t.TempDir()}
	backend := &cgi.Handler{
		Path: gitBinary,
		Args: []string{"http-backend"},
		Dir:  s.root,
		Env:  append(gitEnv(s.root), "GIT_PROJECT_ROOT="+s.root, "GIT_HTTP_EXPORT_ALL=1"),
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
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
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
