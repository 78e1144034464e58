package catalogdir

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/internal/index"
)

// validFBC is a catalog the index accepts: two packages.
var validFBC = map[string]string{
	"pkg-a/catalog.json": `{"schema":"olm.package","name":"pkg-a"}`,
	"pkg-b/catalog.yaml": "schema: olm.package\nname: pkg-b\n",
}

// buildIndex builds an index of src as the server does and returns its
// stats. A build that does not finish within a minute (blocked on opening
// a named pipe, say) fails the test; unblock, if set, is called first so
// that the build can return.
func buildIndex(t *testing.T, src index.Content, unblock func()) (index.Stats, error) {
	t.Helper()
	type result struct {
		stats index.Stats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		stats, err := index.Build(t.Context(), filepath.Join(t.TempDir(), "index.db"), src, time.Unix(0, 0))
		done <- result{stats, err}
	}()
	select {
	case r := <-done:
		return r.stats, r.err
	case <-time.After(time.Minute):
		t.Error("index build still running after a minute")
		if unblock != nil {
			unblock()
		}
		r := <-done
		return r.stats, r.err
	}
}

// unblockFifo opens the named pipe at p for writing and closes it, which
// ends a read that is blocked opening it.
func unblockFifo(p string) func() {
	return func() {
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	}
}

// Things a catalog directory can hold besides catalog files must neither
// hang nor fail the catalog: the digest is computed, the index builds with
// exactly the catalog files, and FS lists only what it can open.
func TestDirOddEntries(t *testing.T) {
	tests := []struct {
		name string
		// add puts the odd entry in dir and returns a function that
		// unblocks a reader stuck on it, if that can happen.
		add func(t *testing.T, dir string) func()
		// shown lists paths, besides validFBC's, that FS must show.
		shown []string
	}{
		{
			name: "named pipe at the top",
			add: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "pipe.json")
				mustMkfifo(t, p)
				return unblockFifo(p)
			},
		},
		{
			name: "named pipe in a package directory",
			add: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "pkg-a", "more.yaml")
				mustMkfifo(t, p)
				return unblockFifo(p)
			},
		},
		{
			name: "link to a named pipe",
			add: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "pipe")
				mustMkfifo(t, p)
				mustSymlink(t, "pipe", filepath.Join(dir, "pipe.json"))
				return unblockFifo(p)
			},
		},
		{
			name: "character device",
			add: func(t *testing.T, dir string) func() {
				// 1:3 is /dev/null; creating it needs CAP_MKNOD.
				if err := syscall.Mknod(filepath.Join(dir, "null.json"), syscall.S_IFCHR|0o644, 1<<8|3); err != nil {
					t.Skipf("cannot create a device node: %v", err)
				}
				return nil
			},
		},
		{
			name: "unix socket",
			add: func(t *testing.T, dir string) func() {
				l, err := net.Listen("unix", filepath.Join(dir, "s.json"))
				if err != nil {
					t.Skipf("cannot create a socket: %v", err)
				}
				t.Cleanup(func() { l.Close() })
				return nil
			},
		},
		{
			name: "link to a directory inside is not descended into",
			add: func(t *testing.T, dir string) func() {
				mustSymlink(t, "pkg-a", filepath.Join(dir, "alias"))
				return nil
			},
		},
		{
			name: "dangling link",
			add: func(t *testing.T, dir string) func() {
				mustSymlink(t, "user@host.1234", filepath.Join(dir, ".#catalog.json"))
				return nil
			},
		},
		{
			name: "link to a file inside is that file",
			add: func(t *testing.T, dir string) func() {
				writeTree(t, dir, map[string]string{"extra/other.json": `{"schema":"example.other","value":1}`})
				mustSymlink(t, "../extra/other.json", filepath.Join(dir, "pkg-b", "other.json"))
				return nil
			},
			shown: []string{"extra", "extra/other.json", "pkg-b/other.json"},
		},
		{
			name: "file name that is not UTF-8",
			add: func(t *testing.T, dir string) func() {
				writeTree(t, dir, map[string]string{"pkg-c/bad\xff.json": `{"schema":"olm.package","name":"pkg-c"}`})
				return nil
			},
			shown: []string{"pkg-c"},
		},
		{
			name: "directory name that is not UTF-8",
			add: func(t *testing.T, dir string) func() {
				writeTree(t, dir, map[string]string{"bad\xfe/catalog.json": `{"schema":"olm.package","name":"pkg-c"}`})
				return nil
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, validFBC)
			unblock := tc.add(t, dir)

			src, err := Read(context.Background(), dir, nil)
			if err != nil {
				t.Fatalf("Dir: %v", err)
			}
			stats, err := buildIndex(t, src, unblock)
			if err != nil {
				t.Fatalf("index build: %v", err)
			}
			if stats.Packages != 2 {
				t.Errorf("index has %d packages, want the 2 of the catalog files", stats.Packages)
			}
			want := []string{"pkg-a", "pkg-a/catalog.json", "pkg-b", "pkg-b/catalog.yaml"}
			if err := fstest.TestFS(src.FS, append(want, tc.shown...)...); err != nil {
				t.Errorf("FS: %v", err)
			}
			var listed []string
			err = fs.WalkDir(src.FS, ".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && p != "." {
					listed = append(listed, p)
				}
				return err
			})
			if err != nil {
				t.Fatalf("walking FS: %v", err)
			}
			for _, p := range listed {
				if !contains(append(want, tc.shown...), p) {
					t.Errorf("FS shows %q, which the index cannot read as a catalog file", p)
				}
			}
		})
	}
}

// Opening something FS does not show fails at once, by name, without the
// server's path of the directory in the message.
func TestFSOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeTree(t, dir, validFBC)
	writeTree(t, outside, map[string]string{"secret.json": "{}"})
	mustMkfifo(t, filepath.Join(dir, "pipe.json"))
	mustSymlink(t, "pkg-a", filepath.Join(dir, "alias"))
	mustSymlink(t, filepath.Join(outside, "secret.json"), filepath.Join(dir, "out.json"))
	fsys := FS(dir)
	for _, name := range []string{"pipe.json", "alias", "out.json", "missing.json", "../x"} {
		done := make(chan error, 1)
		go func() {
			f, err := fsys.Open(name)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("Open(%q) succeeded", name)
				continue
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != name {
				t.Errorf("Open(%q) = %v, want a *fs.PathError for %q", name, err, name)
			}
			if strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), outside) {
				t.Errorf("Open(%q) error %q names a server path", name, err)
			}
		case <-time.After(time.Minute):
			unblockFifo(filepath.Join(dir, "pipe.json"))()
			t.Fatalf("Open(%q) blocked", name)
		}
	}
}

// Errors about a catalog name its content relative to the catalog
// directory and never the directory itself.
func TestDirErrorsHideServerPaths(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.json": "{}"})
	tests := []struct {
		name string
		make func(t *testing.T) string
		// want is a fragment the error must hold.
		want string
	}{
		{name: "missing directory", make: func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing") }, want: "no such file"},
		{
			name: "file, not a directory",
			make: func(t *testing.T) string {
				dir := t.TempDir()
				writeTree(t, dir, map[string]string{"f.json": "{}"})
				return filepath.Join(dir, "f.json")
			},
			want: "not a directory",
		},
		{
			name: "link that leaves",
			make: func(t *testing.T) string {
				dir := t.TempDir()
				writeTree(t, dir, validFBC)
				mustSymlink(t, filepath.Join(outside, "secret.json"), filepath.Join(dir, "pkg-a", "s.json"))
				return dir
			},
			want: "pkg-a/s.json",
		},
		{
			name: "link loop",
			make: func(t *testing.T) string {
				dir := t.TempDir()
				writeTree(t, dir, validFBC)
				mustSymlink(t, "b.json", filepath.Join(dir, "pkg-a", "a.json"))
				mustSymlink(t, "a.json", filepath.Join(dir, "pkg-a", "b.json"))
				return dir
			},
			want: "pkg-a/a.json",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.make(t)
			_, err := Read(context.Background(), dir, nil)
			if err == nil {
				t.Fatal("Dir succeeded")
			}
			t.Logf("Dir error: %v", err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			for _, p := range []string{filepath.Dir(dir), outside} {
				if strings.Contains(err.Error(), p) {
					t.Errorf("error %q names the server path %s", err, p)
				}
			}
		})
	}
}

func TestDirCancelled(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, validFBC)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Read(ctx, dir, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestDirFileLimit: the digest walk stops once the tree holds more entries
// than the index's file limit, with the index's own error, and a tree
// within the limit digests.
func TestDirFileLimit(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a/1.json": "{}", "a/2.json": "{}", "b/3.json": "{}"}) // five entries
	tests := []struct {
		files int
		fails bool
	}{{4, true}, {5, false}}
	for _, tc := range tests {
		_, err := walkDir(t.Context(), logr.Discard(), dir, fbc.Limits{Files: tc.files}, nil)
		switch {
		case tc.fails && (!errors.Is(err, index.ErrInvalidCatalog) || !strings.Contains(err.Error(), "more than 4 files and directories, the limit per catalog")):
			t.Errorf("limit %d: error %v, want the index's file limit error", tc.files, err)
		case !tc.fails && err != nil:
			t.Errorf("limit %d: %v", tc.files, err)
		}
	}
}

func mustMkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
