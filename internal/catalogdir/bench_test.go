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

// BenchmarkRead digests the benchmark catalog: what every poll or watch
// event of a directory catalog costs, changed or not.
func BenchmarkRead(b *testing.B) {
	dir := benchenv.Catalog(b)
	b.SetBytes(treeBytes(b, dir))
	cpu := benchenv.CPUTime()
	for b.Loop() {
		if _, err := Read(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
	benchenv.ReportCPU(b, cpu)
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
		src, err := Read(context.Background(), dir)
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
