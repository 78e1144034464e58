package catalogdir

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/index"
)

// tree is what a test catalog directory holds: regular files by relative
// path, links by relative path to their text (only dangling ones or ones to
// directories, which count as links), and other entries (named pipes).
type tree struct {
	files map[string]string
	links map[string]string
	pipes []string
}

// wantDigest is the digest Read documents for t, computed here from
// the documentation rather than by the package's code.
func (t tree) wantDigest() string {
	records := map[string][]byte{}
	for rel, content := range t.files {
		sum := sha256.Sum256([]byte(content))
		r := append([]byte(rel), 0, 'f')
		r = binary.BigEndian.AppendUint64(r, uint64(len(content)))
		records[rel] = append(r, sum[:]...)
	}
	for rel, text := range t.links {
		r := append([]byte(rel), 0, 'l')
		r = binary.BigEndian.AppendUint64(r, uint64(len(text)))
		records[rel] = append(r, text...)
	}
	for _, rel := range t.pipes {
		records[rel] = append([]byte(rel), 0, 'o')
	}
	h := sha256.New()
	for _, rel := range slices.Sorted(maps.Keys(records)) {
		h.Write(records[rel])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (t tree) write(tb *testing.T, dir string) {
	tb.Helper()
	writeTree(tb, dir, t.files)
	for rel, text := range t.links {
		if err := os.Symlink(text, filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			tb.Fatal(err)
		}
	}
	for _, rel := range t.pipes {
		mustMkfifo(tb, filepath.Join(dir, filepath.FromSlash(rel)))
	}
}

// with returns t with files changed (an empty content removes the file).
func (t tree) with(files map[string]string) tree {
	out := t
	out.files = maps.Clone(t.files)
	for rel, content := range files {
		if content == "" {
			delete(out.files, rel)
		} else {
			out.files[rel] = content
		}
	}
	return out
}

var digestTree = tree{
	files: map[string]string{
		".indexignore":           "*.md\n",
		"README.md":              "not FBC",
		"pkg-a/catalog.json":     `{"schema":"olm.package","name":"pkg-a"}`,
		"pkg-b/catalog.yaml":     "schema: olm.package\nname: pkg-b\n",
		"pkg-b/bundles/one.yaml": "schema: olm.bundle\nname: pkg-b.v1\npackage: pkg-b\n",
		"pkg-b/z.json":           `{"schema":"olm.package","name":"pkg-z"}`,
	},
	links: map[string]string{".#catalog.json": "user@host.1234", "pkg-link": "pkg-a"},
	pipes: []string{"pkg-b/fifo.json"},
}

// The digest is the documented formula, and stays the same across calls on
// an unchanged directory.
func TestDirDigestFormula(t *testing.T) {
	dir := t.TempDir()
	digestTree.write(t, dir)
	// A link to a file inside counts as that file under the link's name.
	mustSymlink(t, "catalog.json", filepath.Join(dir, "pkg-a", "alias.json"))
	want := digestTree.with(map[string]string{"pkg-a/alias.json": digestTree.files["pkg-a/catalog.json"]}).wantDigest()
	for i := range 3 {
		if got := digestOf(t, dir); got != want {
			t.Fatalf("call %d: digest %s, want %s", i+1, got, want)
		}
	}
}

// hookFS calls hook once, on the first Open of name, before opening it.
type hookFS struct {
	fs.FS
	name string
	hook func()
	once sync.Once
}

func (h *hookFS) Open(name string) (fs.File, error) {
	if name == h.name || h.name == "" {
		h.once.Do(h.hook)
	}
	return h.FS.Open(name)
}

func (h *hookFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(h.FS, name) }

// A directory that changes between the digest's walk and the build's reads
// is indexed as the build read it, and the index records the digest of
// exactly that: what Read computes once the directory holds it.
func TestReadDigestIsWhatTheBuildRead(t *testing.T) {
	const newA = `{"schema":"olm.package","name":"pkg-a-edited","description":"longer now"}`
	tests := []struct {
		name string
		// open is the file whose first opening by the build runs change
		// ("" for the first file opened).
		open   string
		change map[string]string
		// indexed is the tree the index must hold; packages its packages.
		indexed  tree
		packages []string
		wantErr  string
	}{
		{
			name:     "unchanged",
			open:     "pkg-a/catalog.json",
			indexed:  digestTree,
			packages: []string{"pkg-a", "pkg-b", "pkg-z"},
		},
		{
			name:     "file edited before it is read",
			open:     "pkg-a/catalog.json",
			change:   map[string]string{"pkg-a/catalog.json": newA},
			indexed:  digestTree.with(map[string]string{"pkg-a/catalog.json": newA}),
			packages: []string{"pkg-a-edited", "pkg-b", "pkg-z"},
		},
		{
			name:     "ignore rules edited before they are read",
			open:     ".indexignore",
			change:   map[string]string{".indexignore": "*.md\nz.json\n"},
			indexed:  digestTree.with(map[string]string{".indexignore": "*.md\nz.json\n"}),
			packages: []string{"pkg-a", "pkg-b"},
		},
		{
			// What the build does not read counts as the walk saw it: the
			// index holds the same either way.
			name:     "ignored file edited",
			change:   map[string]string{"README.md": "edited, still not FBC"},
			indexed:  digestTree,
			packages: []string{"pkg-a", "pkg-b", "pkg-z"},
		},
		{
			// The build lists the directory as the walk saw it.
			name:     "file added",
			change:   map[string]string{"pkg-c/catalog.json": `{"schema":"olm.package","name":"pkg-c"}`},
			indexed:  digestTree,
			packages: []string{"pkg-a", "pkg-b", "pkg-z"},
		},
		{
			name:    "file removed",
			change:  map[string]string{"pkg-b/z.json": ""},
			wantErr: "pkg-b/z.json",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			digestTree.write(t, dir)
			src, err := Read(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := digestTree.wantDigest(); src.Digest != want {
				t.Fatalf("digest before the build %s, want %s", src.Digest, want)
			}
			src.FS = &hookFS{FS: src.FS, name: tc.open, hook: func() { changeTree(t, dir, tc.change) }}
			path := filepath.Join(t.TempDir(), "index.db")
			stats, err := index.Build(t.Context(), path, src, time.Unix(0, 0))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("build: %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			recorded, packages := indexContent(t, path)
			want := tc.indexed.wantDigest()
			if recorded != want || stats.Digest != want {
				t.Errorf("index records %s (stats %s), want %s, the digest of what it holds", recorded, stats.Digest, want)
			}
			if !slices.Equal(packages, tc.packages) {
				t.Errorf("index holds packages %v, want %v", packages, tc.packages)
			}
			if tc.change != nil && tc.indexed.wantDigest() == digestTree.wantDigest() {
				// The directory now holds what the index does not; the next
				// sync must see that.
				if now := digestOf(t, dir); now == recorded {
					t.Errorf("digest of the changed directory %s equals the index's", now)
				}
			} else if now := digestOf(t, dir); now != recorded {
				t.Errorf("digest of the directory as indexed %s, index records %s: the next sync would rebuild", now, recorded)
			}
		})
	}
}

// changeTree writes files under dir; an empty content removes the file.
func changeTree(t *testing.T, dir string, files map[string]string) {
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Error(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// indexContent returns the digest an index file records and its packages.
func indexContent(t *testing.T, path string) (string, []string) {
	t.Helper()
	db, err := sql.Open("sqlite", index.FileURI(path, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var digest string
	if err := db.QueryRow(`SELECT content_digest FROM catalog_info`).Scan(&digest); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT name FROM packages ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var packages []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		packages = append(packages, name)
	}
	return digest, packages
}

// ReadDigest counts whole files: one a reader left early is hashed to its
// end on Close; one that grew past the walk's size, or is still open,
// makes a digest that no directory has.
func TestReadDigestOfPartialReads(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	tests := []struct {
		name string
		// read reads through fsys as a build might.
		read func(t *testing.T, fsys fs.FS, dir string)
		// same says the read digest must equal the walk's; otherwise it
		// must equal neither the walk's nor the directory's now.
		same bool
	}{
		{name: "read whole", same: true, read: func(t *testing.T, fsys fs.FS, _ string) {
			if _, err := fs.ReadFile(fsys, "big.json"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "left early", same: true, read: func(t *testing.T, fsys fs.FS, _ string) {
			readSome(t, fsys, "big.json", 10, true)
		}},
		{name: "read twice, left early the first time", same: true, read: func(t *testing.T, fsys fs.FS, _ string) {
			readSome(t, fsys, "big.json", 10, true)
			if _, err := fs.ReadFile(fsys, "big.json"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "grown past the walk's size, left early", read: func(t *testing.T, fsys fs.FS, dir string) {
			writeTree(t, dir, map[string]string{"big.json": big + "more"})
			readSome(t, fsys, "big.json", 10, true)
		}},
		{name: "still open", read: func(t *testing.T, fsys fs.FS, _ string) {
			readSome(t, fsys, "big.json", 10, false)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"big.json": big, "small.json": "{}"})
			src, err := Read(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.read(t, src.FS, dir)
			got := src.ReadDigest()
			if tc.same {
				if got != src.Digest {
					t.Errorf("read digest %s, want the walk's %s", got, src.Digest)
				}
				return
			}
			if now := digestOf(t, dir); got == src.Digest || got == now {
				t.Errorf("read digest %s equals a directory's digest (walk %s, now %s)", got, src.Digest, now)
			}
		})
	}
}

// readSome reads n bytes of name through fsys, and closes it if asked to.
func readSome(t *testing.T, fsys fs.FS, name string, n int, close bool) {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(f, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if close {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Cleanup(func() { f.Close() })
	}
}

// FileHash gives the SHA-256 of each regular file (a link to one counting
// as that file) and nothing for links, pipes and names that are not
// there, whether the Read hashed the file or took its hash from the cache.
func TestFileHash(t *testing.T) {
	dir := t.TempDir()
	digestTree.write(t, dir)
	mustSymlink(t, "catalog.json", filepath.Join(dir, "pkg-a", "alias.json"))
	want := map[string]string{"pkg-a/alias.json": digestTree.files["pkg-a/catalog.json"]}
	maps.Copy(want, digestTree.files)
	absent := []string{"pkg-link", ".#catalog.json", "pkg-b/fifo.json", "pkg-b", "nothing.json", "."}
	c := NewCache()
	c.racyWindow = testRacyWindow
	time.Sleep(2 * testRacyWindow)
	for _, read := range []string{"hashed", "cached"} {
		src, err := Read(context.Background(), dir, c)
		if err != nil {
			t.Fatal(err)
		}
		for name, content := range want {
			sum, ok := src.FileHash(name)
			if !ok || sum != sha256.Sum256([]byte(content)) {
				t.Errorf("%s: FileHash(%q) = %x, %v; want the SHA-256 of its content", read, name, sum, ok)
			}
		}
		for _, name := range absent {
			if sum, ok := src.FileHash(name); ok {
				t.Errorf("%s: FileHash(%q) = %x; want none", read, name, sum)
			}
		}
	}
	if len(c.files) != len(want) {
		t.Errorf("the second Read found %d files in the cache; want all %d", len(c.files), len(want))
	}
}

// Once a build has read a file through FS, FileHash gives the hash of the
// bytes read, not the walk's: an incremental build records it for the files
// it parses (index.Content.FileHash). A file read only in part, or still
// open, has none.
func TestFileHashAfterRead(t *testing.T) {
	tests := []struct {
		name string
		// read reads the file through f, or not at all when nil.
		read   func(t *testing.T, f fs.File)
		close  bool
		want   string
		wantOK bool
	}{
		{name: "not read", want: "walk", wantOK: true},
		{name: "read to its end", read: readAll, close: true, want: "edited", wantOK: true},
		{name: "still open", read: readAll, wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			name := "pkg/catalog.json"
			content := map[string]string{"walk": `{"schema":"olm.package","name":"pkg"}`, "edited": `{"schema":"olm.package","name":"pkg","description":"edited"}`}
			writeTree(t, dir, map[string]string{name: content["walk"]})
			src, err := Read(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, dir, map[string]string{name: content["edited"]})
			if tc.read != nil {
				f, err := src.FS.Open(name)
				if err != nil {
					t.Fatal(err)
				}
				tc.read(t, f)
				if tc.close {
					f.Close()
				} else {
					t.Cleanup(func() { f.Close() })
				}
			}
			sum, ok := src.FileHash(name)
			if ok != tc.wantOK || (ok && sum != sha256.Sum256([]byte(content[tc.want]))) {
				t.Errorf("FileHash = %x, %v; want the hash of the %s content, %v", sum, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func readAll(t *testing.T, f fs.File) {
	t.Helper()
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
}
