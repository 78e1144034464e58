package index

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCheckFindsDamage: the check of a finished database, the whole one
// of a full build and the quick one of an incremental build, fails on a
// file whose pages were damaged after SQLite wrote them (a torn or lost
// write).
func TestCheckFindsDamage(t *testing.T) {
	damages := []struct {
		name string
		// damage changes the file of the index at path, whose table has
		// its root on page root (of size pageSize).
		damage func(t *testing.T, path string, root, pageSize int64)
	}{
		{"page type", func(t *testing.T, path string, root, pageSize int64) {
			writeAt(t, path, (root-1)*pageSize, []byte{0x7f})
		}},
		{"cell count", func(t *testing.T, path string, root, pageSize int64) {
			writeAt(t, path, (root-1)*pageSize+3, []byte{0xff, 0xff})
		}},
		{"zeroed page", func(t *testing.T, path string, root, pageSize int64) {
			writeAt(t, path, (root-1)*pageSize, make([]byte, pageSize))
		}},
		{"lost last page", func(t *testing.T, path string, root, pageSize int64) {
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, info.Size()-pageSize); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, mode := range []string{ModeFull, ModeIncremental} {
		for _, table := range []string{"blobs", "properties", "channel_entries"} {
			for _, d := range damages {
				t.Run(mode+"/"+table+"/"+d.name, func(t *testing.T) {
					path := filepath.Join(t.TempDir(), "index.db")
					if _, err := Build(context.Background(), path, Content{FS: os.DirFS(demoDir), Ref: demoDir, Digest: "sha256:test"}, time.Now()); err != nil {
						t.Fatal(err)
					}
					db, err := openForBuild(path)
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					var root, pageSize int64
					if err := db.Get(&root, `SELECT rootpage FROM sqlite_schema WHERE name = ?`, table); err != nil {
						t.Fatal(err)
					}
					if err := db.Get(&pageSize, `PRAGMA page_size`); err != nil {
						t.Fatal(err)
					}
					if err := checkDatabase(context.Background(), db, mode); err != nil {
						t.Fatalf("the undamaged file fails its check: %v", err)
					}
					// The pages are read anew, not from the connection's cache.
					db.Close()
					d.damage(t, path, root, pageSize)
					if db, err = openForBuild(path); err != nil {
						t.Fatal(err)
					}
					if err := checkDatabase(context.Background(), db, mode); err == nil {
						t.Errorf("the %s check passes a file whose %s table has a damaged page (%s)", mode, table, d.name)
					}
				})
			}
		}
	}
}

func writeAt(t *testing.T, path string, offset int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, offset); err != nil {
		t.Fatal(err)
	}
}
