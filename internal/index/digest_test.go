package index

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// packageDigests reads every package's digest from an index.
func packageDigests(t *testing.T, db *sqlx.DB) map[string]string {
	t.Helper()
	var rows []struct {
		Name   string `db:"name"`
		Digest string `db:"digest"`
	}
	if err := db.Select(&rows, `SELECT name, digest FROM packages`); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.Name] = r.Digest
	}
	return out
}

// TestPackageDigests: the same content in another layout, format and order
// gives every package the same digest; an edit changes the digests of the
// packages an independent diff says it changed, and only those; a blob of
// a custom schema counts for the package it names, and a blob naming no
// package for none.
func TestPackageDigests(t *testing.T) {
	for _, fx := range fbcfacts.Fixtures("../../test/testdata/demo") {
		t.Run(fx.Name, func(t *testing.T) {
			src := fbcfacts.Load(t, fx.Dir(t))
			dirs := t.TempDir()
			write := func(name string, blobs []fbcfacts.Blob, layout fbcchange.Layout) (string, map[string]string) {
				dir := filepath.Join(dirs, name)
				fbcchange.Write(t, dir, blobs, layout)
				db, _ := buildDir(t, dir)
				return dir, packageDigests(t, db)
			}
			_, perPackage := write("per-package", src.Blobs, fbcchange.PerPackage)
			_, oneYAML := write("one-yaml", src.Blobs, fbcchange.OneYAMLReversed)
			if len(perPackage) != len(src.Packages) {
				t.Fatalf("%d digests for %d packages", len(perPackage), len(src.Packages))
			}
			for pkg, d := range perPackage {
				if d == "" || oneYAML[pkg] != d {
					t.Errorf("%s: digest %q in one layout, %q in another", pkg, d, oneYAML[pkg])
				}
			}

			if len(src.Packages) < 5 {
				return // too few packages to edit
			}
			edited, _ := fbcchange.Edit(t, src)
			editedDir, after := write("edited", edited, fbcchange.PerPackage)
			want := fbcchange.Diff(t, src, fbcfacts.Load(t, editedDir))
			for pkg, d := range perPackage {
				_, changed := want.Changed[pkg]
				_, kept := after[pkg]
				if kept && changed == (after[pkg] == d) {
					t.Errorf("%s: digest %s -> %s, but the diff says changed=%v", pkg, d, after[pkg], changed)
				}
			}

			names := make([]string, 0, len(src.Packages))
			for n := range src.Packages {
				names = append(names, n)
			}
			slices.Sort(names)
			custom := append(slices.Clone(src.Blobs),
				fbcfacts.Blob{Schema: "example.custom", Package: names[0], Doc: map[string]any{"schema": "example.custom", "package": names[0], "v": 1.0}},
				fbcfacts.Blob{Schema: "example.custom", Doc: map[string]any{"schema": "example.custom", "v": 2.0}})
			_, withCustom := write("custom", custom, fbcchange.PerPackage)
			for pkg, d := range perPackage {
				if (withCustom[pkg] != d) != (pkg == names[0]) {
					t.Errorf("%s: digest %s -> %s with custom blobs of %s and of no package", pkg, d, withCustom[pkg], names[0])
				}
			}
		})
	}
}
