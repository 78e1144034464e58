package stress

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// BenchmarkBombs gives `catalogd serve` the demo catalog with a file of
// each refused shape of issue 18 beside it (spaces, newlines, YAML
// separators, comment lines, one JSON string), $CATALOGD_BOMB_MIB MiB of
// it (default 1024; a comma-separated list runs each size, to show the
// time linear in the bytes), and reports the server's peak RSS (VmHWM)
// once the sync refused the file, and the time from start to then. Before
// the reader dropped what is not a blob, 1 GB of spaces took 5,372 MiB;
// the goal is at most 150 MiB for each. The file is refused, so the demo
// is not served, and lastError must say why.
func BenchmarkBombs(b *testing.B) {
	sizes := []int64{1024}
	if env := os.Getenv("CATALOGD_BOMB_MIB"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n <= 0 {
				b.Fatalf("CATALOGD_BOMB_MIB=%q: want MiB, or a comma-separated list of them", env)
			}
			sizes = append(sizes, n)
		}
	}
	for _, bomb := range fbcgen.Bombs() {
		if bomb.Refused == "" {
			continue // deep nesting is a valid catalog: fbc's and index's tests bound it
		}
		for _, mib := range sizes {
			b.Run(bomb.Shape+"/"+strconv.FormatInt(mib, 10)+"MiB", func(b *testing.B) {
				for range b.N {
					benchmarkBomb(b, bomb, mib<<20)
				}
			})
		}
	}
}

func benchmarkBomb(b *testing.B, bomb fbcgen.Bomb, size int64) {
	b.StopTimer()
	root := b.TempDir()
	dir := filepath.Join(root, "catalog")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		b.Fatal(err)
	}
	if err := bomb.Write(filepath.Join(dir, "zz-"+bomb.File), size); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	began := time.Now()
	s := start(b, "--data-dir", filepath.Join(root, "data"), "--catalog", "c="+dir)
	s.waitSynced(b)
	synced := time.Since(began)
	b.StopTimer()
	rss := benchenv.ProcessPeakRSSMiB(s.Cmd.Process.Pid)
	if _, _, _, lastErr := catalogCounts(b, s.base, "c"); !strings.Contains(lastErr, bomb.Refused) {
		b.Errorf("lastError %q; want the file refused: %q", lastErr, bomb.Refused)
	}
	s.Kill(b)
	b.ReportMetric(rss, "VmHWM-MiB")
	b.ReportMetric(synced.Seconds(), "sync-s")
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")
}
