package datadir_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/test/dirtree"
)

// storeTree is an index store as internal/store leaves it: one catalog
// with its live database and its content directory, the current link, the
// history of its versions, a build a crash cut short; and one catalog of
// the layout before content directories, with its content file and gzip
// copy beside its database.
func storeTree(prefix string) dirtree.Tree {
	return dirtree.Tree{
		prefix + "demo/sha256-aa.0f1e.db":                       "db",
		prefix + "demo/sha256-aa.0f1e.db.content/segments.json": "{}",
		prefix + "demo/sha256-aa.0f1e.db.content/000000.all":    "all",
		prefix + "demo/sha256-aa.0f1e.db.content/000000.gz":     "gz",
		prefix + "demo/current":                                 "@sha256-aa.0f1e.db",
		prefix + "demo/history.json":                            "{}",
		prefix + "demo/.build-1a2b.db":                          "partial",
		prefix + "demo/.build-1a2b.db.content/000000.all":       "partial",
		prefix + "older/sha256-cc.0a0b.db":                      "db",
		prefix + "older/sha256-cc.0a0b.db.all":                  "all",
		prefix + "older/sha256-cc.0a0b.db.all.gz":               "gz",
		prefix + "older/current":                                "@sha256-cc.0a0b.db",
	}
}

func merge(trees ...dirtree.Tree) dirtree.Tree {
	out := dirtree.Tree{}
	for _, tr := range trees {
		maps.Copy(out, tr)
	}
	return out
}

func markOf(kind string, layout int) dirtree.Tree {
	b, _ := json.Marshal(map[string]any{"kind": kind, "layout": layout})
	return dirtree.Tree{datadir.LayoutFile: string(b)}
}

func TestOpen(t *testing.T) {
	earlierData := merge(storeTree("index/"), dirtree.Tree{
		"unpack/unpack-123/fbc/catalog.json": "{}",
		"tmp/unpack-456/fbc/catalog.json":    "{}",
	})
	earlierCache := merge(
		storeTree("0123456789abcdef01234567/index/"), dirtree.Tree{"0123456789abcdef01234567/lock": ""},
		dirtree.Tree{"unpack/unpack-9/fbc/catalog.json": "{}"},
	)
	tests := []struct {
		name    string
		kind    datadir.Kind
		missing bool
		tree    dirtree.Tree
		want    datadir.State
		wantErr error
		// wantMsg are parts of the error message a person acts on.
		wantMsg []string
	}{
		{name: "missing", kind: datadir.Data, missing: true, want: datadir.Created},
		{name: "empty", kind: datadir.Data, want: datadir.Created},
		{name: "a new filesystem's root", kind: datadir.Data, tree: dirtree.Tree{"lost+found/": ""}, want: datadir.Created},
		{name: "an earlier catalogd's on a filesystem's root", kind: datadir.Data, tree: merge(storeTree("index/"), dirtree.Tree{"lost+found/": ""}), want: datadir.Adopted},
		{name: "only a stopped process's temporary mark", kind: datadir.Data, tree: dirtree.Tree{".catalogd-layout-0a0b": "x"}, want: datadir.Created},
		{name: "marked", kind: datadir.Data, tree: merge(markOf("data", datadir.Layout), storeTree("index/")), want: datadir.Marked},
		{name: "marked, with a file a person put there", kind: datadir.Data, tree: merge(markOf("data", datadir.Layout), dirtree.Tree{"notes.txt": "mine"}), want: datadir.Marked},
		{name: "earlier catalogd's data directory", kind: datadir.Data, tree: earlierData, want: datadir.Adopted},
		{name: "earlier catalogd's data directory, index only", kind: datadir.Data, tree: storeTree("index/"), want: datadir.Adopted},
		{name: "earlier catalogd's empty index", kind: datadir.Data, tree: dirtree.Tree{"index/": ""}, want: datadir.Adopted},
		{name: "earlier kubectl-catalog cache", kind: datadir.Cache, tree: earlierCache, want: datadir.Adopted},
		{
			name: "a home directory", kind: datadir.Data,
			tree:    dirtree.Tree{".bashrc": "alias ll='ls -l'", "tmp/notes.txt": "keep me", "unpack/photos/a.jpg": "jpeg", "src/main.go": "package main"},
			wantErr: datadir.ErrNotCatalogds, wantMsg: []string{"data directory", "is not empty", `".bashrc"`, "and 1 more", "--data-dir"},
		},
		{
			name: "one file", kind: datadir.Data, tree: dirtree.Tree{"notes.txt": "mine"},
			wantErr: datadir.ErrNotCatalogds, wantMsg: []string{`"notes.txt"`, "new or empty directory"},
		},
		{
			name: "catalogd's names holding a person's files", kind: datadir.Data,
			tree:    merge(storeTree("index/"), dirtree.Tree{"tmp/notes.txt": "keep me", "unpack/unpack-1/fbc/catalog.json": "{}"}),
			wantErr: datadir.ErrNotCatalogds,
		},
		{
			name: "a person's file in an unpack directory's place", kind: datadir.Data,
			tree:    merge(storeTree("index/"), dirtree.Tree{"unpack/unpack-notes.txt": "keep me"}),
			wantErr: datadir.ErrNotCatalogds,
		},
		{
			name: "tmp and unpack without an index", kind: datadir.Data,
			tree:    dirtree.Tree{"tmp/unpack-1/fbc/catalog.json": "{}", "unpack/unpack-2/": ""},
			wantErr: datadir.ErrNotCatalogds,
		},
		{
			name: "a file in the index directory", kind: datadir.Data,
			tree:    merge(storeTree("index/"), dirtree.Tree{"index/README": "mine"}),
			wantErr: datadir.ErrNotCatalogds,
		},
		{
			name: "a directory inside a catalog's index", kind: datadir.Data,
			tree:    merge(storeTree("index/"), dirtree.Tree{"index/demo/backup/": ""}),
			wantErr: datadir.ErrNotCatalogds,
		},
		{
			name: "a file in a catalog's index that the store does not name", kind: datadir.Data,
			tree:    merge(storeTree("index/"), dirtree.Tree{"index/demo/notes.txt": "mine"}),
			wantErr: datadir.ErrNotCatalogds,
		},
		{
			name: "a cache entry with a file of a person's", kind: datadir.Cache,
			tree:    merge(earlierCache, dirtree.Tree{"0123456789abcdef01234567/notes.txt": "mine"}),
			wantErr: datadir.ErrNotCatalogds, wantMsg: []string{"cache directory", "XDG_CACHE_HOME"},
		},
		{
			name: "a cache given as a data directory", kind: datadir.Data,
			tree:    merge(markOf("cache", datadir.Layout), earlierCache),
			wantErr: datadir.ErrNotCatalogds, wantMsg: []string{`marked as a catalogd "cache" directory`},
		},
		{
			name: "an earlier data directory given as a cache", kind: datadir.Cache,
			tree:    earlierData,
			wantErr: datadir.ErrNotCatalogds,
		},
		{
			name: "a newer layout", kind: datadir.Data,
			tree:    merge(markOf("data", datadir.Layout+1), storeTree("index/")),
			wantErr: datadir.ErrNewerLayout, wantMsg: []string{"newer catalogd", "this one knows up to"},
		},
		{
			name: "a mark that is not JSON", kind: datadir.Data,
			tree:    dirtree.Tree{datadir.LayoutFile: "layout: 1"},
			wantMsg: []string{"is not catalogd's mark"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if !tc.missing {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tc.tree.Write(t, dir)
			before := dirtree.Read(t, dir)

			state, err := datadir.Open(dir, tc.kind)
			if tc.wantErr != nil || tc.wantMsg != nil {
				if err == nil {
					t.Fatalf("Open succeeded (%v), want an error", state)
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Errorf("error %q is not %q", err, tc.wantErr)
				}
				for _, part := range append(tc.wantMsg, dir) {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not say %q", err, part)
					}
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q is more than one line", err)
				}
				if after := dirtree.Read(t, dir); !maps.Equal(after, before) {
					t.Errorf("a refused directory changed:\nbefore %v\nafter  %v", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if state != tc.want {
				t.Errorf("state %v, want %v", state, tc.want)
			}
			// Everything that was there is still there, and the mark says
			// which kind of directory this is.
			after := dirtree.Read(t, dir)
			for p, content := range before {
				if got, ok := after[p]; !ok || got != content {
					if !strings.HasPrefix(p, ".catalogd-layout-") {
						t.Errorf("%s changed: %q, was %q", p, got, content)
					}
				}
			}
			var m struct {
				Kind   string
				Layout int
			}
			if err := json.Unmarshal([]byte(after[datadir.LayoutFile]), &m); err != nil || m.Kind != tc.kind.Name || m.Layout != datadir.Layout {
				t.Errorf("mark %q (%v), want kind %q layout %d", after[datadir.LayoutFile], err, tc.kind.Name, datadir.Layout)
			}
			// A second start finds its own mark.
			if again, err := datadir.Open(dir, tc.kind); err != nil || again != datadir.Marked {
				t.Errorf("second Open: %v, %v; want Marked", again, err)
			}
		})
	}
}

// TestRemoveDataLeftovers checks that only unpack directories go, with an
// earlier manager's tmp/ once it is empty, and that the index stays.
func TestRemoveDataLeftovers(t *testing.T) {
	tests := []struct {
		name        string
		tree        dirtree.Tree
		wantRemoved int
		wantLeft    dirtree.Tree
	}{
		{
			name:        "earlier layout",
			tree:        merge(storeTree("index/"), dirtree.Tree{"unpack/unpack-1/fbc/catalog.json": "{}", "tmp/unpack-2/fbc/catalog.json": "{}"}),
			wantRemoved: 2,
			wantLeft: merge(storeTree("index/"), dirtree.Tree{"index/": "", "index/demo/": "", "index/older/": "", "unpack/": "",
				"index/demo/sha256-aa.0f1e.db.content/": "", "index/demo/.build-1a2b.db.content/": ""}),
		},
		{
			name:        "a person's files beside leftovers",
			tree:        dirtree.Tree{"unpack/unpack-1/x": "", "unpack/mine.txt": "keep", "tmp/unpack-2/": "", "tmp/mine.txt": "keep"},
			wantRemoved: 2,
			wantLeft:    dirtree.Tree{"unpack/": "", "unpack/mine.txt": "keep", "tmp/": "", "tmp/mine.txt": "keep"},
		},
		{name: "nothing to remove", tree: dirtree.Tree{}, wantLeft: dirtree.Tree{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.tree.Write(t, dir)
			n, err := datadir.RemoveDataLeftovers(dir)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.wantRemoved {
				t.Errorf("removed %d, want %d", n, tc.wantRemoved)
			}
			if got := dirtree.Read(t, dir); !maps.Equal(got, tc.wantLeft) {
				t.Errorf("left\n %v\nwant\n %v", got, tc.wantLeft)
			}
		})
	}
}

// TestRemoveLeftoversAge checks that an entry younger than minAge, which
// another process may be writing, stays.
func TestRemoveLeftoversAge(t *testing.T) {
	dir := t.TempDir()
	dirtree.Tree{"unpack-old/fbc/a": "", "unpack-new/fbc/a": "", "other-old/": ""}.Write(t, dir)
	old := time.Now().Add(-2 * time.Hour)
	for _, n := range []string{"unpack-old", "other-old"} {
		if err := os.Chtimes(filepath.Join(dir, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	n, err := datadir.RemoveLeftovers(dir, "unpack-", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := dirtree.Tree{"unpack-new/": "", "unpack-new/fbc/": "", "unpack-new/fbc/a": "", "other-old/": ""}
	if got := dirtree.Read(t, dir); n != 1 || !maps.Equal(got, want) {
		t.Errorf("removed %d, left %v; want 1 removed, %v left", n, got, want)
	}
}

// FuzzOpenMark opens a directory whose mark holds anything: Open either
// accepts it as this kind's or refuses it, and never changes it.
func FuzzOpenMark(f *testing.F) {
	f.Add([]byte(`{"kind":"data","layout":1}`))
	f.Add([]byte(`{"kind":"data","layout":2}`))
	f.Add([]byte(`{"kind":"cache","layout":1}`))
	f.Add([]byte(`{"kind":"data","layout":-1}`))
	f.Add([]byte(`{"kind":"data"}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, mark []byte) {
		dir := t.TempDir()
		dirtree.Tree{"index/": ""}.Write(t, dir)
		if err := os.WriteFile(filepath.Join(dir, datadir.LayoutFile), mark, 0o644); err != nil {
			t.Fatal(err)
		}
		before := dirtree.Read(t, dir)
		state, err := datadir.Open(dir, datadir.Data)
		if err == nil && state != datadir.Marked {
			t.Errorf("a marked directory opened as %v", state)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q is more than one line", err)
		}
		if after := dirtree.Read(t, dir); !maps.Equal(after, before) {
			t.Errorf("Open changed a marked directory: %v, was %v", after, before)
		}
	})
}
