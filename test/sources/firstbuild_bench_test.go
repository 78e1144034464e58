package sources_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/catalogdproc"
)

// BenchmarkFirstBuild is our side of issue 35's table: `catalogd serve`
// of the bench catalog (benchenv.Catalog) as a directory, on an empty data
// directory, from the process's start until it serves (its start-up
// summary), as a whole process: wall time, CPU (user+sys, from the
// kernel's accounting of the process, killed once it serves) and peak
// RSS. Run it with -benchtime 1x and -count for one process per figure
// (make bench-firstbuild); upstream's side is measured by a harness of its
// own, outside this repository.
func BenchmarkFirstBuild(b *testing.B) {
	dir := benchenv.Catalog(b)
	var wall, cpu time.Duration
	var peak float64
	n := 0
	for b.Loop() {
		start := time.Now()
		p, _ := catalogdproc.Serve(b, catalogd, "--data-dir", b.TempDir(), "--page-out-startup=false", "--catalog", "bench="+dir)
		wall += time.Since(start)
		if out := p.Stdout.String(); !strings.Contains(out, "bench: ") || strings.Contains(out, "NOT INDEXED") {
			b.Fatalf("bench did not index:\n%s\n%s", out, p.Stderr)
		}
		peak = max(peak, benchenv.ProcessPeakRSSMiB(p.Cmd.Process.Pid))
		p.Kill(b)
		ru := p.Cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		n++
	}
	b.ReportMetric(wall.Seconds()/float64(n), "s-to-serving")
	b.ReportMetric(cpu.Seconds()/float64(n), "cpu-s-to-serving")
	b.ReportMetric(peak, "peak-RSS-MiB")
}
