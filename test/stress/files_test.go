package stress

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/test/benchenv"
)

// writeTinyFiles writes n files of one small blob each under dir, a
// thousand to a directory. With links, the files of a directory after its
// first are hard links to that one: as many names for the catalog's walk
// to count, for the disk space of one file a directory.
func writeTinyFiles(t *testing.T, dir string, n int, links bool) {
	t.Helper()
	var first string
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("%04d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(sub, fmt.Sprintf("%07d.json", i))
		if links && i%1000 != 0 {
			if err := os.Link(first, path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		blob := fmt.Sprintf(`{"schema":"io.example.tiny","name":"t%07d"}`+"\n", i)
		if err := os.WriteFile(path, []byte(blob), 0o644); err != nil {
			t.Fatal(err)
		}
		first = path
	}
}

// TestMillionTinyFiles adds tiny, valid files to a catalog directory that
// already serves, more than a catalog may hold (100,000 files and
// directories, fbc.DefaultFiles). The sync must refuse the catalog for it,
// say so in lastError, and keep the previous index serving. It logs how
// long the refused sync took and the server's peak RSS: without the limit,
// a million such files index in about 80 s with a peak RSS of about 350 MB,
// growing with the number of files.
//
// `go test` adds just over the limit, as hard links to one file (seconds,
// and little disk); CATALOGD_SLOW=1 adds a million distinct files (about
// 4 GB of disk while it runs).
func TestMillionTinyFiles(t *testing.T) {
	files, links := fbc.DefaultFiles+1, true
	if long() {
		files, links = 1_000_000, false
	}
	root := t.TempDir()
	dir := filepath.Join(root, "catalog")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	demo := newVersion(t, "demo", demoDir)
	args := []string{"--data-dir", filepath.Join(root, "data"), "--catalog", "c=" + dir}
	book := newETagBook()
	s := start(t, args...)
	s.waitSynced(t)
	expectVersion(t, s.base, book, demo)
	s.Kill(t)

	began := time.Now()
	writeTinyFiles(t, filepath.Join(dir, "tiny"), files, links)
	t.Logf("wrote %d files in %s", files, time.Since(began).Round(time.Second))

	began = time.Now()
	s = start(t, args...)
	s.waitSynced(t)
	synced := time.Since(began)
	if !strings.Contains(s.Stdout.String(), "NOT INDEXED (Serving its previous index)") {
		t.Fatalf("the catalog of %d files did not fail to index, or did not keep its previous index:\n%s", files, s.Stdout)
	}
	expectVersion(t, s.base, book, demo)
	const want = "the catalog holds more than 100000 files and directories, the limit per catalog"
	if _, _, _, lastErr := catalogCounts(t, s.base, "c"); !strings.Contains(lastErr, want) {
		t.Errorf("lastError %q; want it to say %q", lastErr, want)
	}
	rss := benchenv.ProcessPeakRSSMiB(s.Cmd.Process.Pid)
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-s.Exited
	if s.ExitErr != nil {
		t.Errorf("catalogd exited with %v after SIGTERM", s.ExitErr)
	}
	t.Logf("%d files: refused %s after start; peak RSS %.0f MiB", files, synced.Round(time.Millisecond), rss)
}
