package sources_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/registrytest"
)

// BenchmarkPrebuilt starts `catalogd serve` on an empty data directory
// with the bench catalog from an image in a loopback registry (with the
// referrers API) whose index `catalogd index publish` pushed beside it,
// once taking that index (prebuilt) and once building its own
// (--prebuilt-index=false), and reports for each the time until it
// serves, the CPU the process used until then, its peak RSS, and the
// bytes it downloaded from the registry (blobs; manifests are kilobytes).
//
// $CATALOGD_BENCH_CRD_CATALOG, when set, is measured the same way
// (crd/...), beside the bench catalog (bench/...): both commands are
// allowed its 1.3 GB (--max-catalog-bytes). The registry keeps every blob
// in memory, so this process holds the image and the index while it runs.
func BenchmarkPrebuilt(b *testing.B) {
	b.Run("bench", func(b *testing.B) { benchmarkPrebuilt(b, benchenv.Catalog(b)) })
	if dir := os.Getenv("CATALOGD_BENCH_CRD_CATALOG"); dir != "" {
		b.Run("crd", func(b *testing.B) { benchmarkPrebuilt(b, dir) })
	}
}

// maxCatalogBytes lets both commands of BenchmarkPrebuilt fetch the CRD
// catalog, over unpack's default bound.
const maxCatalogBytes = "4Gi"

func benchmarkPrebuilt(b *testing.B, dir string) {
	reg := registrytest.New(b, registrytest.WithReferrers())
	reg.PushCatalog(b, "catalogs/bench:v1", dir, registrytest.PushOptions{})
	image := reg.Host + "/catalogs/bench:v1"
	_, sizes := reg.PublishIndex(b, catalogd, image, "--max-catalog-bytes", maxCatalogBytes)

	for _, tc := range []struct{ name, flag string }{
		{"build", "--prebuilt-index=false"},
		{"prebuilt", "--prebuilt-index=true"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var peak, cpu, downloaded float64
			var total time.Duration
			n := 0
			for b.Loop() {
				reg.Reset()
				start := time.Now()
				p, _ := catalogdproc.Serve(b, catalogd, "--data-dir", b.TempDir(), "--page-out-startup=false",
					"--catalog", "bench="+image, "--insecure-registry", reg.Host, "--max-catalog-bytes", maxCatalogBytes, tc.flag)
				total += time.Since(start)
				n++
				if out := p.Stdout.String(); !strings.Contains(out, "bench: ") || strings.Contains(out, "NOT INDEXED") {
					b.Fatalf("bench did not index:\n%s\n%s", out, p.Stderr)
				}
				cpu += benchenv.ProcessCPUSeconds(b, p.Cmd.Process.Pid)
				peak = max(peak, benchenv.ProcessPeakRSSMiB(p.Cmd.Process.Pid))
				p.Kill(b)
				downloaded += float64(reg.DownloadedBytes(sizes))
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-to-serving")
			b.ReportMetric(cpu/float64(n), "cpu-s-to-serving")
			b.ReportMetric(peak, "peak-RSS-MiB")
			b.ReportMetric(downloaded/float64(n)/(1<<20), "MiB-downloaded")
		})
	}
}
