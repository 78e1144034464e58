// Package sources_test measures `catalogd serve` from each kind of remote
// source, side by side on the same catalog: the acceptance figures
// (time to Serving, peak RSS) come from BenchmarkServe.
package sources_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/dirtree"
	"github.com/catalogd/catalogd/test/gittest"
	"github.com/catalogd/catalogd/test/registrytest"
)

var catalogd string

func TestMain(m *testing.M) { os.Exit(catalogdproc.Main(m, &catalogd)) }

// BenchmarkServe starts `catalogd serve` on an empty data directory with
// the bench catalog (benchenv.Catalog) from an image in a registry, a
// directory of a git repository over https (git http-backend) and a
// .tar.gz over HTTP, and reports the time until it serves (its start-up
// summary) and the process's peak RSS. Every server is on loopback.
func BenchmarkServe(b *testing.B) {
	dir := benchenv.Catalog(b)

	reg := registrytest.New(b)
	reg.PushCatalog(b, "catalogs/bench:v1", dir, registrytest.PushOptions{})

	gitServer := gittest.NewServer(b, true)
	repo := gittest.NewRepo(b, gitServer.Root, "bench")
	repo.CopyDir("catalog", dir)
	repo.Commit(map[string]string{"README.md": "bench\n"})
	repo.Push("main")
	caFile := filepath.Join(b.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, gitServer.CAPEM(), 0o644); err != nil {
		b.Fatal(err)
	}

	www := b.TempDir()
	dirtree.TarGz(b, filepath.Join(www, "bench.tar.gz"), dir)
	files := httptest.NewServer(http.FileServer(http.Dir(www)))
	b.Cleanup(files.Close)

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"image", []string{"--catalog", "bench=" + reg.Host + "/catalogs/bench:v1", "--insecure-registry", reg.Host}},
		{"git", []string{"--catalog", "bench=git::" + gitServer.RepoURL("bench") + "//catalog?ref=main", "--ca-file", caFile}},
		{"http", []string{"--catalog", "bench=" + files.URL + "/bench.tar.gz"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var peak float64
			var total time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				p, _ := catalogdproc.Serve(b, catalogd, append([]string{"--data-dir", b.TempDir(), "--page-out-startup=false"}, tc.args...)...)
				elapsed := time.Since(start)
				total += elapsed
				n++
				if out := p.Stdout.String(); !strings.Contains(out, "bench: ") || strings.Contains(out, "NOT INDEXED") {
					b.Fatalf("bench did not index:\n%s\n%s", out, p.Stderr)
				}
				peak = max(peak, benchenv.ProcessPeakRSSMiB(p.Cmd.Process.Pid))
				p.Kill(b)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-to-serving")
			b.ReportMetric(peak, "peak-RSS-MiB")
		})
	}
}
