// Package gittest builds git repositories with Debian's git and serves them
// over smart HTTP with `git http-backend` behind net/http/cgi on loopback,
// for the tests of everything that fetches a catalog from git.
package gittest

import (
	"bytes"
	"crypto/subtle"
	"encoding/pem"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Binary is Debian's git.
const Binary = "/usr/bin/git"

// Need skips a test that needs git where it is absent.
func Need(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("this test builds and serves git repositories with %s, which is absent", Binary)
	}
}

// Env is the environment of every git command: no user or system
// configuration, a fixed identity and dates, so that the same changes
// make the same commits.
func Env(home string) []string {
	return []string{
		"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	}
}

// Git runs git in dir and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Binary, args...)
	cmd.Dir = dir
	cmd.Env = Env(dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Repo is a work tree whose commits are pushed to a bare repository.
type Repo struct {
	t          testing.TB
	Work, Bare string
}

// NewRepo makes root/NAME.git, bare, on branch main, and a work tree that
// pushes to it.
func NewRepo(t testing.TB, root, name string) *Repo {
	t.Helper()
	Need(t)
	bare := filepath.Join(root, name+".git")
	work := filepath.Join(t.TempDir(), "work")
	Git(t, root, "init", "-q", "--bare", "-b", "main", bare)
	Git(t, root, "init", "-q", "-b", "main", work)
	Git(t, work, "remote", "add", "origin", bare)
	return &Repo{t: t, Work: work, Bare: bare}
}

// CopyDir puts a copy of the directory src at path dst of the work tree,
// replacing what was there; Commit commits it.
func (r *Repo) CopyDir(dst, src string) {
	r.t.Helper()
	full := filepath.Join(r.Work, dst)
	if err := os.RemoveAll(full); err != nil {
		r.t.Fatal(err)
	}
	if err := os.CopyFS(full, os.DirFS(src)); err != nil {
		r.t.Fatal(err)
	}
}

// Commit sets files (path → content; empty content removes the path),
// commits everything in the work tree and returns the commit.
func (r *Repo) Commit(files map[string]string) string {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.Work, p)
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
	Git(r.t, r.Work, "add", "-A")
	Git(r.t, r.Work, "commit", "-q", "--allow-empty", "-m", "change")
	return Git(r.t, r.Work, "rev-parse", "HEAD")
}

// Push pushes refspecs to the bare repository, forced.
func (r *Repo) Push(refspecs ...string) {
	r.t.Helper()
	Git(r.t, r.Work, append([]string{"push", "-q", "-f", "origin"}, refspecs...)...)
}

// Tree is the hash git itself gives the tree at commit:dir.
func (r *Repo) Tree(commit, dir string) string {
	r.t.Helper()
	return Git(r.t, r.Work, "rev-parse", commit+":"+dir)
}

// Server serves the bare repositories under Root over smart HTTP.
type Server struct {
	*httptest.Server
	Root string
	// Requests counts the requests answered.
	Requests atomic.Int64
	// private are the repositories that need credentials: name →
	// "user:password".
	private map[string]string
}

// NewServer starts a server on loopback, over TLS when tls is set (trust
// CAPEM), closed when the test ends.
func NewServer(t testing.TB, tls bool) *Server {
	t.Helper()
	Need(t)
	s := &Server{Root: t.TempDir(), private: map[string]string{}}
	backend := &cgi.Handler{
		Path: Binary,
		Args: []string{"http-backend"},
		Dir:  s.Root,
		Env:  append(Env(s.Root), "GIT_PROJECT_ROOT="+s.Root, "GIT_HTTP_EXPORT_ALL=1"),
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		if !s.allowed(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

// RequireBasicAuth makes the server answer requests for repository NAME.git
// only with user:password; call it before the server is used.
func (s *Server) RequireBasicAuth(name, user, password string) {
	s.private[name] = user + ":" + password
}

func (s *Server) allowed(r *http.Request) bool {
	repo, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ".git/")
	want, private := s.private[repo]
	if !private {
		return true
	}
	u, p, ok := r.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(u+":"+p), []byte(want)) == 1
}

// CAPEM is the TLS server's certificate, to trust.
func (s *Server) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// RepoURL is the URL of the repository NAME.git under Root.
func (s *Server) RepoURL(name string) string { return s.URL + "/" + name + ".git" }
