package stress

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// idleAfterBuild is how long the server idles after its first build before
// its resident set is read: long enough for what the sync does after the
// swap to finish, as an operator would see it a moment later.
const idleAfterBuild = 3 * time.Second

// BenchmarkServeMemory runs `catalogd serve` on a catalog with an empty
// data directory, so that it builds the index first, and reports the
// server's memory as Linux counts it: its peak resident set (VmHWM, the
// build's peak: nothing before or after the build takes more) and its
// resident set idle after the build (VmRSS), split into RssFile (the
// binary's pages) and RssAnon (heaps, stacks). Catalogs: the bench
// catalog ($CATALOGD_BENCH_CATALOG, see benchenv.Catalog) and
// community-v4.20 where ../shared has it. Binaries: catalogd (also with
// --page-out-startup=false) and catalogd-package-api, the build with the
// package API (BenchmarkManagerMemory measures it with the API on). Goals on the
// bench catalog (issue 27): idle at most 48 MiB, peak at most 64 MiB, for
// catalogd (the package API's costs only who turns it on). Run with
// -benchtime 1x -count 3 (make bench-memory): each run is a new process.
func BenchmarkServeMemory(b *testing.B) {
	b.Run("catalogd", func(b *testing.B) {
		serveMemory(b, installBinary(b, binary), true)
	})
	// Serve gives back the executable's start-up pages once the catalogs
	// are synced (--page-out-startup); what it idles at without that, on
	// the bench catalog.
	b.Run("catalogd-keep-pages", func(b *testing.B) {
		serveMemory(b, installBinary(b, binary), false, "--page-out-startup=false")
	})
	// The binary with the package API (-tags manager,packageapi) on the bench
	// catalog only, to keep bench-memory short: what the two differ by is
	// what linking k8s.io/apiserver costs, the same on any catalog.
	b.Run("catalogd-package-api", func(b *testing.B) {
		serveMemory(b, installBinary(b, catalogdproc.Build(b, "catalogd-package-api")), false)
	})
}

// serveMemory is BenchmarkServeMemory for one installed binary, on the
// bench catalog and, when community is set, on community-v4.20, with the
// extra arguments given.
func serveMemory(b *testing.B, installed string, community bool, extra ...string) {
	type catalog struct {
		name string
		dir  func(b *testing.B) string
	}
	catalogs := []catalog{{"bench", benchenv.Catalog}}
	if community {
		catalogs = append(catalogs, catalog{"community-v4.20", func(b *testing.B) string { return fbcfacts.SharedCommunity(b) }})
	}
	for _, c := range catalogs {
		b.Run(c.name, func(b *testing.B) {
			dir := c.dir(b)
			var idle, anon, file, peak, build float64
			for range b.N {
				data := filepath.Join(b.TempDir(), "data")
				began := time.Now()
				s := startBinary(b, installed, append([]string{"--data-dir", data, "--catalog", "c=" + dir}, extra...)...)
				s.waitSynced(b)
				build += time.Since(began).Seconds()
				time.Sleep(idleAfterBuild)
				pid := s.Cmd.Process.Pid
				idle += benchenv.ProcessMemoryMiB(pid, "VmRSS")
				anon += benchenv.ProcessMemoryMiB(pid, "RssAnon")
				file += benchenv.ProcessMemoryMiB(pid, "RssFile")
				peak += benchenv.ProcessMemoryMiB(pid, "VmHWM")
				if _, _, bundles, lastErr := catalogCounts(b, s.base, "c"); bundles == 0 || lastErr != "" {
					b.Fatalf("the catalog serves %d bundles (last error %q); want it indexed", bundles, lastErr)
				}
				s.Kill(b)
			}
			n := float64(b.N)
			b.ReportMetric(idle/n, "idle-VmRSS-MiB")
			b.ReportMetric(anon/n, "idle-RssAnon-MiB")
			b.ReportMetric(file/n, "idle-RssFile-MiB")
			b.ReportMetric(peak/n, "VmHWM-MiB")
			b.ReportMetric(build/n, "start-to-served-s")
		})
	}
}

// installBinary copies the binary as a container runtime extracts an image
// layer, in 32 KiB writes, and returns the copy's path. How a binary's
// pages came into the page cache changes how much of it the kernel maps
// around each page touched: the same bytes measured 29-30 MiB of RssFile
// idle when copied this way (or by cat), 31-32 as the go command left
// them, 38-39 when written by one write call.
func installBinary(b *testing.B, src string) string {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(b.TempDir(), "catalogd")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, 32<<10)); err != nil {
		b.Fatal(err)
	}
	// Written back, as an image's files are long before they run: the
	// kernel pages out only clean pages (--page-out-startup), and a copy
	// a few seconds old still has dirty ones.
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return dst
}
