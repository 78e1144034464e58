// Package dirtree lays out directories by hand and reads them back, so that
// a test can say exactly what a directory held before catalogd touched it
// and prove that nothing of it was lost or changed.
package dirtree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Tree maps slash-separated paths under a root to what is there: a path
// ending in "/" is a directory, a value starting with "@" a symlink to the
// rest of it, anything else a file with that content.
type Tree map[string]string

// Write lays tr out under root.
func (tr Tree) Write(t testing.TB, root string) {
	t.Helper()
	for p, content := range tr {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(p, "/"):
			err = os.MkdirAll(full, 0o755)
		case strings.HasPrefix(content, "@"):
			err = os.Symlink(content[1:], full)
		default:
			err = os.WriteFile(full, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Read reads root back as a Tree: every directory, link and file with its
// bytes. A missing root is an empty Tree.
func Read(t testing.TB, root string) Tree {
	t.Helper()
	got := Tree{}
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return got
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			got[rel+"/"] = ""
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			got[rel] = "@" + target
			return err
		default:
			b, err := os.ReadFile(path)
			got[rel] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Files reads the regular files of fsys, by path, with their contents:
// what a catalog source delivers, as the index reads it.
func Files(t testing.TB, fsys fs.FS) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		got[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Diff lists the paths of before that are gone or differ in after, and the
// paths after added, each sorted.
func Diff(before, after Tree) (lost, added []string) {
	for p, content := range before {
		if got, ok := after[p]; !ok || got != content {
			lost = append(lost, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			added = append(added, p)
		}
	}
	slices.Sort(lost)
	slices.Sort(added)
	return lost, added
}
