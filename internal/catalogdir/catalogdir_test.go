package catalogdir

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree creates files (relative path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func digestOf(t *testing.T, dir string) string {
	t.Helper()
	src, err := Read(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("Read(%s): %v", dir, err)
	}
	return src.Digest
}

var baseTree = map[string]string{
	"pkg-a/catalog.json":       `{"schema":"olm.package","name":"a"}`,
	"pkg-b/catalog.yaml":       "schema: olm.package\nname: b\n",
	"pkg-b/bundles/one.yaml":   "schema: olm.bundle\nname: b.v1\npackage: b\n",
	".indexignore":             "*.md\n",
	"README.md":                "not FBC",
	"pkg-a/nested/deeper.json": `{"schema":"olm.package","name":"c"}`,
}

func TestDirDigestChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		same   bool
	}{
		{name: "nothing", same: true, change: func(*testing.T, string) {}},
		{name: "content edited, same size", change: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"pkg-a/catalog.json": `{"schema":"olm.package","name":"z"}`})
		}},
		{name: "content grown", change: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"pkg-b/catalog.yaml": "schema: olm.package\nname: b\n\n"})
		}},
		{name: "file added", change: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"pkg-c/catalog.json": `{}`})
		}},
		{name: "empty file added", change: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"empty.json": ""})
		}},
		{name: "file removed", change: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "pkg-b/bundles/one.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "file renamed", change: func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "pkg-b/bundles/one.yaml"), filepath.Join(dir, "pkg-b/bundles/two.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "directory renamed", change: func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "pkg-a"), filepath.Join(dir, "pkg-x")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "ignored file edited", change: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"README.md": "still not FBC"})
		}},
		{name: "ignore rules edited", change: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{".indexignore": "*.md\n*.txt\n"})
		}},
		{name: "empty directory added", same: true, change: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "mode and times changed", same: true, change: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "pkg-a/catalog.json")
			if err := os.Chmod(p, 0o600); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(p, later, later); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "content moved between files", change: func(t *testing.T, dir string) {
			// Same bytes in total, split differently: sizes keep them apart.
			writeTree(t, dir, map[string]string{
				"pkg-a/catalog.json": `{"schema":"olm.package","name":"a"}` + "schema: olm.package\n",
				"pkg-b/catalog.yaml": "name: b\n",
			})
		}},
		{name: "edited in place, same size, times put back", change: func(t *testing.T, dir string) {
			// What a cache that trusted size and modification time alone
			// would miss: tar, rsync -t and touch -d put the times back.
			editKeepingTimes(t, filepath.Join(dir, "pkg-a/catalog.json"), `{"schema":"olm.package","name":"z"}`)
		}},
		{name: "edited, a link points at it, times put back", change: func(t *testing.T, dir string) {
			editKeepingTimes(t, filepath.Join(dir, "pkg-b/bundles/one.yaml"), "schema: olm.bundle\nname: b.v2\npackage: b\n")
		}},
		{name: "replaced by a copy of the same content", same: true, change: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "pkg-a/catalog.json")
			if err := os.WriteFile(p+".new", []byte(baseTree["pkg-a/catalog.json"]), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		for _, cached := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cached=%v", tc.name, cached), func(t *testing.T) {
				dir := t.TempDir()
				writeTree(t, dir, baseTree)
				mustSymlink(t, "one.yaml", filepath.Join(dir, "pkg-b/bundles/alias.yaml"))
				read := digestOf
				if cached {
					read = cachedReader(t)
				}
				before := read(t, dir)
				if again := read(t, dir); again != before {
					t.Fatalf("digest not stable across calls: %s then %s", before, again)
				}
				tc.change(t, dir)
				after := read(t, dir)
				if tc.same && after != before {
					t.Errorf("digest changed from %s to %s; want it unchanged", before, after)
				}
				if !tc.same && after == before {
					t.Errorf("digest stayed %s; want a change", before)
				}
				// Whatever the cache kept, the digest is that of a Read
				// that hashes every file.
				if want := digestOf(t, dir); after != want {
					t.Errorf("digest %s after the change; a Read without cache says %s", after, want)
				}
			})
		}
	}
}

// testRacyWindow stands for defaultRacyWindow in tests, which then wait it
// out instead of a second per Read.
const testRacyWindow = 30 * time.Millisecond

// cachedReader returns a digestOf that reads through one Cache, each Read
// once the files written before it are older than the cache's racy window,
// so that the cache keeps their hashes: what a directory left alone for a
// moment sees.
func cachedReader(t *testing.T) func(*testing.T, string) string {
	c := NewCache()
	c.racyWindow = testRacyWindow
	return func(t *testing.T, dir string) string {
		t.Helper()
		time.Sleep(2 * testRacyWindow)
		src, err := Read(context.Background(), dir, c)
		if err != nil {
			t.Fatalf("Read(%s): %v", dir, err)
		}
		return src.Digest
	}
}

// editKeepingTimes writes content over the file at p in place (same inode)
// and puts its access and modification times back as they were.
func editKeepingTimes(t *testing.T, p, content string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(content)) != fi.Size() {
		t.Fatalf("edit of %s changes its size from %d to %d; the test needs the same size", p, fi.Size(), len(content))
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(fi.ModTime()) || after.Size() != fi.Size() {
		t.Fatalf("%s: modification time or size not kept (%v %d, was %v %d)", p, after.ModTime(), after.Size(), fi.ModTime(), fi.Size())
	}
}

func TestDirDigestIndependentOfLocation(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, baseTree)
	writeTree(t, b, baseTree)
	if da, db := digestOf(t, a), digestOf(t, b); da != db {
		t.Errorf("equal trees in two places: %s != %s", da, db)
	}
}

func TestReadRelativePath(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, baseTree)
	t.Chdir(dir)
	src, err := Read(context.Background(), "pkg-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "pkg-b"); src.Ref != want {
		t.Errorf("Ref = %q, want the absolute path %q", src.Ref, want)
	}
	if !strings.HasPrefix(src.Digest, "sha256:") || len(src.Digest) != len("sha256:")+64 {
		t.Errorf("Digest = %q, want sha256:<64 hex>", src.Digest)
	}
	got, err := fs.ReadFile(src.FS, "bundles/one.yaml")
	if err != nil || string(got) != baseTree["pkg-b/bundles/one.yaml"] {
		t.Errorf("FS read bundles/one.yaml = %q, %v", got, err)
	}
}

func TestDirLinks(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.json": "{}"})

	tests := []struct {
		name    string
		link    func(t *testing.T, dir string)
		wantErr string
		// sameAs, when set, builds a link-free tree that must digest the same.
		sameAs map[string]string
	}{
		{
			name: "link to a file inside counts as that file",
			link: func(t *testing.T, dir string) {
				mustSymlink(t, "real/a.json", filepath.Join(dir, "alias.json"))
			},
			sameAs: map[string]string{"real/a.json": `{"a":1}`, "alias.json": `{"a":1}`},
		},
		{
			name: "link outside is refused",
			link: func(t *testing.T, dir string) {
				mustSymlink(t, filepath.Join(outside, "secret.json"), filepath.Join(dir, "secret.json"))
			},
			wantErr: "points outside the catalog directory",
		},
		{
			name: "relative link escaping is refused",
			link: func(t *testing.T, dir string) {
				rel, err := filepath.Rel(filepath.Join(dir, "real"), filepath.Join(outside, "secret.json"))
				if err != nil {
					t.Fatal(err)
				}
				mustSymlink(t, rel, filepath.Join(dir, "real", "secret.json"))
			},
			wantErr: "points outside the catalog directory",
		},
		{
			name: "dangling link is allowed",
			link: func(t *testing.T, dir string) {
				mustSymlink(t, "user@host.1234", filepath.Join(dir, ".#a.json"))
			},
		},
		{
			name: "link to a directory inside is not descended into",
			link: func(t *testing.T, dir string) {
				mustSymlink(t, "real", filepath.Join(dir, "loop"))
				mustSymlink(t, "..", filepath.Join(dir, "real", "up"))
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"real/a.json": `{"a":1}`})
			tc.link(t, dir)
			src, err := Read(context.Background(), dir, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Dir = %v; want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dir: %v", err)
			}
			if tc.sameAs != nil {
				plain := t.TempDir()
				writeTree(t, plain, tc.sameAs)
				if want := digestOf(t, plain); src.Digest != want {
					t.Errorf("digest %s; want %s, that of the same files without links", src.Digest, want)
				}
			}
		})
	}
}

func TestDirLinkRetargeted(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"v1/a.json": `{"v":1}`, "v2/a.json": `{"v":2}`})
	mustSymlink(t, "v1", filepath.Join(dir, "current"))
	before := digestOf(t, dir)
	if err := os.Remove(filepath.Join(dir, "current")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "v2", filepath.Join(dir, "current"))
	if after := digestOf(t, dir); after == before {
		t.Error("re-pointing a directory link left the digest unchanged")
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
