package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	catalogdclient "github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/registrytest"
)

// BenchmarkPrebuiltManager is test/sources' BenchmarkPrebuilt for a
// cluster: a ClusterCatalog of the bench catalog's image in a loopback
// registry (with the referrers API, its index published beside it), served
// by a `catalogd manager` on envtest's API server, once taking the
// published index (prebuilt) and once building its own
// (--prebuilt-index=false). Each run starts a manager on an empty data
// directory and waits until it is ready, then creates the ClusterCatalog,
// and reports the time until the API server shows it Serving, the CPU the
// manager used in between, the manager's peak RSS, and the bytes it
// downloaded from the registry (blobs; manifests are kilobytes). The
// condition is read from the API server, not from the manager, so that
// waiting costs the measured process nothing.
//
// $CATALOGD_BENCH_CRD_CATALOG, when set, is measured the same way
// (crd/...), beside the bench catalog (bench/...).
func BenchmarkPrebuiltManager(b *testing.B) {
	c, kubeconfig := startAPIServer(b)
	b.Run("bench", func(b *testing.B) { benchmarkPrebuiltManager(b, c, kubeconfig, "bench", benchenv.Catalog(b)) })
	if dir := os.Getenv("CATALOGD_BENCH_CRD_CATALOG"); dir != "" {
		b.Run("crd", func(b *testing.B) { benchmarkPrebuiltManager(b, c, kubeconfig, "crd", dir) })
	}
}

// maxCatalogBytes lets the managers of BenchmarkPrebuiltManager fetch the
// CRD catalog, over unpack's default bound.
const maxCatalogBytes = "4Gi"

func benchmarkPrebuiltManager(b *testing.B, c client.Client, kubeconfig, label, dir string) {
	reg := registrytest.New(b, registrytest.WithReferrers())
	reg.PushCatalog(b, "catalogs/bench:v1", dir, registrytest.PushOptions{})
	image := reg.Host + "/catalogs/bench:v1"
	_, sizes := reg.PublishIndex(b, binary, image, "--max-catalog-bytes", maxCatalogBytes)

	ctx := context.Background()
	for _, tc := range []struct{ name, flag, mode string }{
		{"build", "--prebuilt-index=false", "full"},
		{"prebuilt", "--prebuilt-index=true", "prebuilt"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var peak, cpu, downloaded float64
			var total time.Duration
			n := 0
			for b.Loop() {
				n++
				m := startManager(b, "--kubeconfig", kubeconfig, "--data-dir", b.TempDir(), "--page-out-startup=false",
					"--insecure-registry", reg.Host, "--max-catalog-bytes", maxCatalogBytes, tc.flag)
				await.Until(b, "the manager to be ready", time.Minute, func() error {
					code, _, body, err := get(m.probe + "/readyz")
					if err == nil && code != http.StatusOK {
						err = fmt.Errorf("/readyz: %d %s", code, body)
					}
					return err
				})
				reg.Reset()
				name := fmt.Sprintf("%s-%s-%d", label, tc.name, n)
				obj := &catalogdv1.ClusterCatalog{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
						Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: image},
					}},
				}
				pid := m.cmd.Process.Pid
				cpu0 := benchenv.ProcessCPUSeconds(b, pid)
				start := time.Now()
				if err := c.Create(ctx, obj); err != nil {
					b.Fatal(err)
				}
				await.Until(b, name+" to be Serving", 10*time.Minute, func() error {
					var got catalogdv1.ClusterCatalog
					if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &got); err != nil {
						return err
					}
					if !meta.IsStatusConditionTrue(got.Status.Conditions, catalogdv1.TypeServing) {
						return fmt.Errorf("conditions %+v", got.Status.Conditions)
					}
					return nil
				})
				total += time.Since(start)
				cpu += benchenv.ProcessCPUSeconds(b, pid) - cpu0
				peak = max(peak, benchenv.ProcessPeakRSSMiB(pid))
				checkBuildMode(b, m.api+"/catalogs/"+name, tc.mode)
				downloaded += float64(reg.DownloadedBytes(sizes))
				if err := c.Delete(ctx, obj); err != nil {
					b.Fatal(err)
				}
				m.stop(b)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-to-serving")
			b.ReportMetric(cpu/float64(n), "cpu-s-to-serving")
			b.ReportMetric(peak, "peak-RSS-MiB")
			b.ReportMetric(downloaded/float64(n)/(1<<20), "MiB-downloaded")
		})
	}
}

// checkBuildMode fails b unless the catalog at url says its index came
// the way mode says (build.mode of /catalogs/NAME), so that the prebuilt
// figures are never those of a build that fell back.
func checkBuildMode(b *testing.B, url, mode string) {
	b.Helper()
	code, _, body, err := get(url)
	if err != nil || code != http.StatusOK {
		b.Fatalf("GET %s: %d %s %v", url, code, body, err)
	}
	var d catalogdclient.CatalogDetail
	if err := json.Unmarshal(body, &d); err != nil {
		b.Fatal(err)
	}
	if string(d.Build.Mode) != mode {
		b.Fatalf("GET %s: build %+v; want mode %q", url, d.Build, mode)
	}
}
