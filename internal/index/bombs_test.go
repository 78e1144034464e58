package index

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// TestBuildBombsTakeBoundedMemory builds the demo catalog with a file of
// each shape of issue 18 beside it, 64 MiB of it (16 MiB of deep nesting,
// which encoding/json decodes at a few MB/s), and checks two peaks of the
// build, whatever the file's size: the Go heap's, against what the reader
// needs (fbc's package doc), and the process's resident set's, which adds
// what the heap does not count: SQLite's memory, allocated outside the Go
// heap (the build's page cache and sorting, see openForBuild), and heap
// pages not yet given back. The reader used to keep what it skipped, and
// amplify it: 1 GB of spaces took 5 GB.
func TestBuildBombsTakeBoundedMemory(t *testing.T) {
	const mib = 1 << 20
	for _, bomb := range fbcgen.Bombs() {
		t.Run(bomb.Shape, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "catalog")
			if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
				t.Fatal(err)
			}
			size := int64(64 * mib)
			if bomb.Shape == "nesting" {
				size = 16 * mib
			}
			if err := bomb.Write(filepath.Join(dir, "zz-"+bomb.File), size); err != nil {
				t.Fatal(err)
			}
			bound := bomb.BoundMiB(40, fbc.DefaultBlobBytes)
			var stats Stats
			var err error
			debug.FreeOSMemory()
			benchenv.ResetPeakRSS(t)
			before := benchenv.RSSMiB()
			peak := benchenv.PeakHeapMiB(func() {
				stats, err = Build(context.Background(), filepath.Join(t.TempDir(), "index.db"), Content{FS: os.DirFS(dir), Digest: "sha256:bomb"}, time.Now())
			})
			grew := benchenv.PeakRSSMiB() - before
			if err := bomb.Check(err); err != nil {
				t.Errorf("build: %+v, %v", stats, err)
			}
			t.Logf("%d MiB of %s: peak heap %.1f MiB, resident set grew by %.1f MiB", size/mib, bomb.Shape, peak, grew)
			if peak > bound {
				t.Errorf("peak heap %.1f MiB building beside %d MiB of %s; want at most %.0f MiB", peak, size/mib, bomb.Shape, bound)
			}
			// SQLite's share: a 2 MiB page cache at up to twice its size as
			// its allocator rounds pages up, as much again for sorting, and
			// as much again for heap pages the runtime has yet to reuse.
			const sqliteAndSlack = 12
			if rssBound := bound + sqliteAndSlack; grew > rssBound {
				t.Errorf("resident set grew by %.1f MiB building beside %d MiB of %s; want at most %.0f MiB", grew, size/mib, bomb.Shape, rssBound)
			}
		})
	}
}
