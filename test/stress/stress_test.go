// Package stress runs the catalogd binary under hostile conditions: killed
// at random points of an index build, a disk that fills up, rebuilds under
// concurrent load, malformed and abusive requests, slow clients. Everything
// goes through the binary and loopback HTTP, so what is checked is what a
// user would see, and what a response should hold is computed from the
// catalog files with test/fbcfacts, not with catalogd's code.
//
// The long runs (50 kills from each kind of source, 100 rebuilds under
// load, a million tiny files) are gated behind CATALOGD_SLOW=1 (make
// test-slow); `go test` runs short versions.
package stress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// binary is the catalogd binary TestMain builds once for all tests.
var binary string

func TestMain(m *testing.M) { os.Exit(catalogdproc.Main(m, &binary)) }

// long reports whether the tests run at full length (CATALOGD_SLOW set, as
// make test-slow does) rather than in their short versions.
func long() bool { return os.Getenv("CATALOGD_SLOW") != "" }

// envInt reads a positive integer knob from the environment.
func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

// server is one running `catalogd serve`.
type server struct {
	base string
	*catalogdproc.Process
}

var servingLine = regexp.MustCompile(`catalogd serving (http://\S+?),`)

// start runs `catalogd serve --listen 127.0.0.1:0 args...` and waits until
// it listens (it prints its address before syncing any catalog, so the
// indexes kept on disk answer from then on). It does not wait for the
// catalogs' first sync; waitSynced does.
func start(t testing.TB, args ...string) *server {
	t.Helper()
	return startBinary(t, binary, args...)
}

// startBinary is start with another copy of the binary.
func startBinary(t testing.TB, bin string, args ...string) *server {
	t.Helper()
	s := &server{Process: catalogdproc.Start(t, bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("catalogd stdout:\n%s\ncatalogd stderr (last 4 KB):\n%s", s.Stdout, tail(s.Stderr.String(), 4096))
		}
	})
	// The whole line, not its start: the pipe may deliver it in pieces.
	s.waitFor(t, servingLine)
	s.base = servingLine.FindStringSubmatch(s.Stdout.String())[1]
	return s
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// waitFor waits until stdout matches re.
func (s *server) waitFor(t testing.TB, re *regexp.Regexp) {
	t.Helper()
	text := re.String()
	deadline := time.Now().Add(2 * time.Minute)
	for !re.MatchString(s.Stdout.String()) {
		select {
		case <-s.Exited:
			t.Fatalf("catalogd exited (%v) before printing %q:\n%s\n%s", s.ExitErr, text, s.Stdout, tail(s.Stderr.String(), 4096))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalogd did not print %q:\n%s\n%s", text, s.Stdout, tail(s.Stderr.String(), 4096))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSynced waits until every catalog was synced once (serve prints its
// summary, ending in "Try:", then).
func (s *server) waitSynced(t testing.TB) { t.Helper(); s.waitFor(t, tryLine) }

var tryLine = regexp.MustCompile(`(?m)^Try:$`)

// version is one content of the test catalog, with what serving it must
// answer, computed with fbcfacts.
type version struct {
	name  string
	dir   string
	facts *fbcfacts.Catalog
	// all is the /api/v1/all body, and allSum its SHA-256.
	all    []byte
	allSum string
}

func newVersion(t testing.TB, name, dir string) *version {
	t.Helper()
	facts := fbcfacts.Load(t, dir)
	all := facts.JSONLines()
	return &version{name: name, dir: dir, facts: facts, all: all, allSum: sha(all)}
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// generate writes a synthetic catalog with fbcgen.
func generate(t testing.TB, dir string, opts fbcgen.Options) {
	t.Helper()
	if _, err := fbcgen.Write(context.Background(), dir, opts); err != nil {
		t.Fatalf("generate catalog: %v", err)
	}
}

// versionOf tells which version a body is, by its hash; nil if none.
func versionOf(sum string, versions ...*version) *version {
	for _, v := range versions {
		if v.allSum == sum {
			return v
		}
	}
	return nil
}

// getAll fetches /catalogs/{catalog}/api/v1/all and returns the status,
// ETag and SHA-256 of the (decoded) body. With gzip the client asks for a
// gzip-encoded answer and decodes it (net/http does, when it set
// Accept-Encoding itself); without, it asks for no encoding.
func getAll(ctx context.Context, c *http.Client, base, catalog string, gzip bool) (status int, etag, sum string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/catalogs/"+catalog+"/api/v1/all", nil)
	if err != nil {
		return 0, "", "", err
	}
	if !gzip {
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	if gzip && !resp.Uncompressed {
		return resp.StatusCode, "", "", errors.New("asked for gzip, got an answer that was not gzip-encoded")
	}
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return resp.StatusCode, "", "", fmt.Errorf("read /api/v1/all: %w", err)
	}
	return resp.StatusCode, resp.Header.Get("ETag"), hex.EncodeToString(h.Sum(nil)), nil
}

// leftovers lists what under the data directory is not a live index: every
// file but index/<catalog>/current, the files of the index it points at
// (index.Files, its content directory's files included), the catalog's
// history (store.HistoryFile) and the data directory's mark
// (datadir.LayoutFile), and anything in unpack/. A crash or a failed build must leave nothing else once the
// server has started again and finished its syncs.
func leftovers(t testing.TB, dataDir string) []string {
	t.Helper()
	var extra []string
	err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dataDir, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		switch {
		case rel == "." || rel == "index" || rel == "unpack" || rel == datadir.LayoutFile:
			return nil
		case parts[0] == "index" && len(parts) == 2 && d.IsDir():
			return nil
		case parts[0] == "index" && len(parts) == 3 && (parts[2] == "current" || parts[2] == store.HistoryFile):
			return nil
		case parts[0] == "index" && len(parts) == 3:
			target, err := os.Readlink(filepath.Join(dataDir, "index", parts[1], "current"))
			if err == nil && slices.Contains(index.Files(target), parts[2]) {
				return nil
			}
		case parts[0] == "index" && len(parts) == 4 && !d.IsDir():
			target, err := os.Readlink(filepath.Join(dataDir, "index", parts[1], "current"))
			if err == nil && parts[2] == index.ContentDir(target) {
				return nil
			}
		}
		extra = append(extra, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("scan data directory: %v", err)
	}
	slices.Sort(extra)
	return extra
}

// TestLeftovers checks the leftovers check itself on a data directory laid
// out by hand: the live index passes, everything a crash could leave is
// named.
func TestLeftovers(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		"index/c/sha256-aa.1.db", "index/c/.build-1.db", "index/c/.build-1.db-journal",
		"index/c/sha256-bb.2.db", "index/c/sha256-aa.1.db-wal", "index/d/.build-2.db",
		"unpack/unpack-3/fbc/catalog.json", "index/c/" + store.HistoryFile, "index/c/.history-4",
	}
	segments := []string{"segments.json", "000000.all", "000000.gz"}
	for _, f := range segments {
		files = append(files, "index/c/"+index.ContentDir("sha256-aa.1.db")+"/"+f, "index/c/"+index.ContentDir("sha256-bb.2.db")+"/"+f,
			"index/c/"+index.ContentDir(".build-1.db")+"/"+f)
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sha256-aa.1.db", filepath.Join(dir, "index/c/current")); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"index/c/.build-1.db", "index/c/.build-1.db-journal", "index/c/sha256-aa.1.db-wal", "index/c/sha256-bb.2.db",
		"index/d/.build-2.db", "unpack/unpack-3", "unpack/unpack-3/fbc", "unpack/unpack-3/fbc/catalog.json",
		"index/c/.history-4",
	}
	for _, db := range []string{"sha256-bb.2.db", ".build-1.db"} {
		want = append(want, "index/c/"+index.ContentDir(db))
		for _, f := range segments {
			want = append(want, "index/c/"+index.ContentDir(db)+"/"+f)
		}
	}
	slices.Sort(want)
	if got := leftovers(t, dir); !slices.Equal(got, want) {
		t.Errorf("leftovers:\n got %v\nwant %v", got, want)
	}
}
