package catalogdir

import (
	"context"
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
	src, err := Read(context.Background(), dir)
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, baseTree)
			before := digestOf(t, dir)
			if again := digestOf(t, dir); again != before {
				t.Fatalf("digest not stable across calls: %s then %s", before, again)
			}
			tc.change(t, dir)
			after := digestOf(t, dir)
			if tc.same && after != before {
				t.Errorf("digest changed from %s to %s; want it unchanged", before, after)
			}
			if !tc.same && after == before {
				t.Errorf("digest stayed %s; want a change", before)
			}
		})
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
	src, err := Read(context.Background(), "pkg-b")
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
			src, err := Read(context.Background(), dir)
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
