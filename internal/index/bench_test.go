package index

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
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
		parse(b, dir)
	}
	benchenv.ReportCPU(b, cpu)
}

func parse(b *testing.B, dir string) {
	if err := declcfg.WalkMetasFS(context.Background(), os.DirFS(dir), func(_ string, _ *declcfg.Meta, err error) error {
		return err
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBuildToParse reports how many times longer a build takes than
// a parse of the same catalog. Each iteration times one of each, back to
// back, so that the ratio holds even when the machine's speed drifts from
// one benchmark to the next, as it does on a shared one.
func BenchmarkBuildToParse(b *testing.B) {
	dir := benchenv.Catalog(b)
	tmp := b.TempDir()
	var parsing, building time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		parse(b, dir)
		parsing += time.Since(start)
		path := filepath.Join(tmp, strconv.Itoa(i)+".db")
		i++
		start = time.Now()
		if _, err := Build(context.Background(), path, Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:bench"}, time.Now()); err != nil {
			b.Fatal(err)
		}
		building += time.Since(start)
		os.Remove(path)
	}
	b.ReportMetric(building.Seconds()/parsing.Seconds(), "build/parse")
}

// BenchmarkBuild indexes the catalog and reports the file size and the
// process's peak RSS during the builds.
func BenchmarkBuild(b *testing.B) {
	benchmarkBuild(b, benchenv.Catalog(b))
}

func benchmarkBuild(b *testing.B, dir string) {
	b.SetBytes(catalogBytes(b, dir))
	tmp := b.TempDir()
	runtime.GC()
	benchenv.ResetPeakRSS(b)
	cpu := benchenv.CPUTime()
	var size int64
	var stats Stats
	i := 0
	for b.Loop() {
		path := filepath.Join(tmp, strconv.Itoa(i)+".db")
		i++
		var err error
		if stats, err = Build(context.Background(), path, Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:bench"}, time.Now()); err != nil {
			b.Fatal(err)
		}
		size = 0
		for _, f := range Files(path) {
			info, err := os.Stat(f)
			if err != nil {
				b.Fatal(err)
			}
			size += info.Size()
		}
		RemoveFiles(path)
	}
	benchenv.ReportCPU(b, cpu)
	b.ReportMetric(benchenv.PeakRSSMiB(), "peak-RSS-MiB")
	// Every file of the index: the database, the content file and its
	// gzip copy.
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")
	b.ReportMetric(float64(stats.Bundles), "bundles")
}

// BenchmarkBuildCRDObjects indexes a catalog whose bundles carry their
// CRDs, MBs each, as olm.bundle.object ($CATALOGD_BENCH_CRD_CATALOG, which
// make bench generates at about 1.3 GB, or a 100-MB one made on the spot),
// and reports the peak RSS: the largest single blobs a catalog has must
// not raise the memory a build holds.
func BenchmarkBuildCRDObjects(b *testing.B) {
	dir := os.Getenv("CATALOGD_BENCH_CRD_CATALOG")
	if dir == "" {
		dir = b.TempDir()
		if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 4, Bundles: 12, BundleObjectBytes: 12000, CRDObjectBytes: 2_000_000, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	benchmarkBuild(b, dir)
}

// BenchmarkBuildReplacesChain indexes one package whose single channel is
// a replaces chain of n bundles, and reports the peak RSS: validating such
// a chain the way operator-registry does takes memory quadratic in n.
func BenchmarkBuildReplacesChain(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			fsys := fbcgen.ReplacesChain("chain", n, false)
			tmp := b.TempDir()
			runtime.GC()
			benchenv.ResetPeakRSS(b)
			i := 0
			var stats Stats
			for b.Loop() {
				path := filepath.Join(tmp, strconv.Itoa(i)+".db")
				i++
				var err error
				if stats, err = Build(context.Background(), path, Content{FS: fsys, Digest: "sha256:chain"}, time.Now()); err != nil {
					b.Fatal(err)
				}
				os.Remove(path)
			}
			if stats.Bundles != n || stats.Problems != 0 {
				b.Fatalf("stats %+v, want %d bundles and no problem", stats, n)
			}
			b.ReportMetric(benchenv.PeakRSSMiB(), "peak-RSS-MiB")
		})
	}
}
