package catalogdir

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/test/benchenv"
)

// BenchmarkRead digests the benchmark catalog: what every watch event of a
// directory catalog costs. uncached hashes every file, as a first Read
// does; cached reads through the Cache an earlier Read filled, as every
// later Read of an unchanged file does (a stat per file).
func BenchmarkRead(b *testing.B) {
	dir := benchenv.Catalog(b)
	size := treeBytes(b, dir)
	for _, cached := range []bool{false, true} {
		name := "uncached"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			var c *Cache
			if cached {
				// A catalog generated a moment ago is within the racy
				// window, whose files the cache does not keep yet.
				time.Sleep(defaultRacyWindow)
				c = NewCache()
				if _, err := Read(context.Background(), dir, c); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(size)
			cpu := benchenv.CPUTime()
			for b.Loop() {
				if _, err := Read(context.Background(), dir, c); err != nil {
					b.Fatal(err)
				}
			}
			benchenv.ReportCPU(b, cpu)
		})
	}
}

// BenchmarkReadBuild digests and indexes the benchmark catalog through the
// FS Read returns: what a sync of a changed directory catalog costs.
func BenchmarkReadBuild(b *testing.B) {
	dir := benchenv.Catalog(b)
	b.SetBytes(treeBytes(b, dir))
	tmp := b.TempDir()
	cpu := benchenv.CPUTime()
	i := 0
	for b.Loop() {
		src, err := Read(context.Background(), dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(tmp, strconv.Itoa(i)+".db")
		i++
		if _, err := index.Build(b.Context(), path, src, time.Now()); err != nil {
			b.Fatal(err)
		}
		os.Remove(path)
	}
	benchenv.ReportCPU(b, cpu)
}

// treeBytes is the size of the regular files under dir.
func treeBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}
