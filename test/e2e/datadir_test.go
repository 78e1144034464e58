package e2e

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/dirtree"
)

// TestDataDirRefused runs catalogd serve on data directories that are not
// catalogd's: each must be refused with exit code 1 and one line naming the
// directory and what to do, and keep every file byte for byte.
func TestDataDirRefused(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// wantMsg are parts of the error line.
		wantMsg []string
	}{
		{
			name: "a home directory",
			files: map[string]string{
				".bashrc":                   "alias ll='ls -l'\n",
				"tmp/notes.txt":             "do not lose me\n",
				"unpack/photos/a.jpg":       "\xff\xd8\xff\xe0",
				"unpack/unpack-mine/x.json": "{}",
				"index/README":              "mine\n",
			},
			wantMsg: []string{"is not empty", "new or empty directory", "--data-dir"},
		},
		{
			name:    "one file",
			files:   map[string]string{"notes.txt": "mine"},
			wantMsg: []string{`"notes.txt"`},
		},
		{
			name: "a newer catalogd's",
			files: map[string]string{
				datadir.LayoutFile:                 `{"kind":"data","layout":99}`,
				"unpack/unpack-1/fbc/catalog.json": "{}",
			},
			wantMsg: []string{"newer catalogd"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			for p, content := range tc.files {
				writeFileAt(t, filepath.Join(dir, p), content)
			}
			before := dirtree.Read(t, dir)

			p := catalogdproc.Start(t, binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--catalog", "demo="+demoDir)
			// The old behaviour was to clear tmp/ and unpack/ and serve: stop
			// it as soon as it says it serves, and look at what is left.
		wait:
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				select {
				case <-p.Exited:
					break wait
				default:
				}
				if strings.Contains(p.Stdout.String(), "catalogd serving") || time.Now().After(deadline) {
					p.Kill(t)
					t.Errorf("catalogd did not refuse a data directory that is not its own:\n%s", p.Stdout)
					break
				}
			}
			var exit *exec.ExitError
			if !errors.As(p.ExitErr, &exit) || exit.ExitCode() != 1 {
				t.Errorf("exit %v, want exit code 1", p.ExitErr)
			}
			stderr := strings.TrimSpace(p.Stderr.String())
			last := stderr[strings.LastIndex(stderr, "\n")+1:]
			for _, part := range append(tc.wantMsg, "catalogd serve: ", "data directory "+dir+" ") {
				if !strings.Contains(last, part) {
					t.Errorf("last line of stderr %q does not say %q", last, part)
				}
			}
			if p.Stdout.String() != "" {
				t.Errorf("catalogd printed %q; it should not have started", p.Stdout)
			}
			if lost, added := dirtree.Diff(before, dirtree.Read(t, dir)); len(lost)+len(added) > 0 {
				t.Errorf("the refused directory changed: lost or changed %q, added %q", lost, added)
			}
		})
	}
}

// TestDataDirAdopted takes the data directory catalogd leaves, removes the
// mark as an earlier catalogd (which wrote none) would have, adds the unpack
// directories a stopped earlier serve and manager left, and starts again:
// the index answers without a rebuild, the leftovers are gone and the
// directory is marked.
func TestDataDirAdopted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, "--data-dir", dir, "--catalog", "demo="+demoDir)
	srv.stop(t)
	if err := os.Remove(filepath.Join(dir, datadir.LayoutFile)); err != nil {
		t.Fatalf("the first start did not mark its data directory: %v", err)
	}
	leftovers := []string{"unpack/unpack-123/fbc/catalog.json", "tmp/unpack-456/fbc/catalog.json"}
	for _, p := range leftovers {
		writeFileAt(t, filepath.Join(dir, p), "{}")
	}
	index := dirtree.Read(t, filepath.Join(dir, "index"))

	again := startServer(t, "--data-dir", dir, "--catalog", "demo="+demoDir)
	if !strings.Contains(again.Stdout.String(), "unchanged since the last run") {
		t.Errorf("the adopted index was rebuilt:\n%s", again.Stdout)
	}
	if !strings.Contains(again.Stderr.String(), "adopted the data directory of an earlier catalogd") {
		t.Errorf("the adoption was not logged:\n%s", again.Stderr)
	}
	again.stop(t)
	if _, err := os.Stat(filepath.Join(dir, datadir.LayoutFile)); err != nil {
		t.Errorf("the adopted directory is not marked: %v", err)
	}
	for _, p := range []string{"unpack/unpack-123", "tmp"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("leftover %s is still there: %v", p, err)
		}
	}
	if lost, added := dirtree.Diff(index, dirtree.Read(t, filepath.Join(dir, "index"))); len(lost)+len(added) > 0 {
		t.Errorf("the adopted index changed: lost or changed %q, added %q", lost, added)
	}
}

func writeFileAt(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
