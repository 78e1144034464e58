package index

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// TestBuildPathsWithURICharacters builds into directories whose names hold
// the characters a SQLite URI gives a meaning ('#', '?', '%') and a space:
// the index is written to exactly the path given, nothing else appears
// beside it, and FileURI opens it again read-only.
func TestBuildPathsWithURICharacters(t *testing.T) {
	for _, name := range []string{"seed#0", "what?mode=memory", "100%25 sure", "a b", "#?%&=;"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "index.db")
			src := fbcgen.ReplacesChain("p", 3, false)
			stats, err := Build(context.Background(), path, Content{FS: src, Digest: "sha256:uri"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && p != root && p != dir && filepath.Dir(p) != ContentDir(path) {
					got = append(got, p)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if want := Files(path); !slices.Equal(got, want) {
				t.Fatalf("build wrote %q, want only %q", got, want)
			}
			db, err := sqlx.Open("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if n := count(t, db, "SELECT count(*) FROM bundles"); n != stats.Bundles || n != 3 {
				t.Errorf("index at %s has %d bundles, build said %d, catalog has 3", path, n, stats.Bundles)
			}
		})
	}
}
