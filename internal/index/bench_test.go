package index

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/test/benchenv"
)

func catalogBytes(b *testing.B, dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// BenchmarkParse is the baseline: parsing the catalog with declcfg alone,
// which parses files on every CPU at once.
func BenchmarkParse(b *testing.B) {
	dir := benchenv.Catalog(b)
	b.SetBytes(catalogBytes(b, dir))
	cpu := benchenv.CPUTime()
	for b.Loop() {
		if err := declcfg.WalkMetasFS(context.Background(), os.DirFS(dir), func(_ string, _ *declcfg.Meta, err error) error {
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	benchenv.ReportCPU(b, cpu)
}

// BenchmarkBuild indexes the catalog and reports the file size and the
// process's peak RSS during the builds.
func BenchmarkBuild(b *testing.B) {
	dir := benchenv.Catalog(b)
	b.SetBytes(catalogBytes(b, dir))
	tmp := b.TempDir()
	benchenv.ResetPeakRSS()
	cpu := benchenv.CPUTime()
	var size int64
	var stats Stats
	i := 0
	for b.Loop() {
		path := filepath.Join(tmp, strconv.Itoa(i)+".db")
		i++
		var err error
		if stats, err = Build(context.Background(), path, Source{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:bench"}, time.Now()); err != nil {
			b.Fatal(err)
		}
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		size = info.Size()
		os.Remove(path)
	}
	benchenv.ReportCPU(b, cpu)
	b.ReportMetric(benchenv.PeakRSSMiB(), "peak-RSS-MiB")
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")
	b.ReportMetric(float64(stats.Bundles), "bundles")
}
