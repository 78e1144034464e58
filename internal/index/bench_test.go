package index

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// benchCatalog returns the catalog to benchmark: $CATALOGD_BENCH_CATALOG
// (make bench generates ~8,000 bundles with bundle objects there), or a
// smaller one generated on the spot.
func benchCatalog(b *testing.B) string {
	b.Helper()
	if dir := os.Getenv("CATALOGD_BENCH_CATALOG"); dir != "" {
		return dir
	}
	dir := b.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 50, Bundles: 1000, BundleObjectBytes: 5500, Icons: true, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// resetPeakRSS starts a new peak-RSS measurement (Linux: writing 5 to
// clear_refs resets VmHWM).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSSMiB reads VmHWM, the peak resident set size since the last reset.
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

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

// BenchmarkParse is the baseline: parsing the catalog with declcfg alone.
func BenchmarkParse(b *testing.B) {
	dir := benchCatalog(b)
	b.SetBytes(catalogBytes(b, dir))
	for b.Loop() {
		n := 0
		if err := declcfg.WalkMetasFS(context.Background(), os.DirFS(dir), func(_ string, m *declcfg.Meta, err error) error {
			n++
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild indexes the catalog and reports the file size and the
// process's peak RSS during the builds.
func BenchmarkBuild(b *testing.B) {
	dir := benchCatalog(b)
	b.SetBytes(catalogBytes(b, dir))
	tmp := b.TempDir()
	resetPeakRSS()
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
	b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")
	b.ReportMetric(float64(stats.Bundles), "bundles")
}
