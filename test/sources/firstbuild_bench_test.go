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
// RSS. With the default flags, which give back the executable's start-up
// pages before the build (--page-out-startup), and without that
// (keep-pages), which shows what the build itself holds beside all that
// start-up mapped. Run it with -benchtime 1x and -count for one process
// per figure (make bench-firstbuild); upstream's side is measured by a
// harness of its own, outside this repository.
func BenchmarkFirstBuild(b *testing.B) {
	dir := benchenv.Catalog(b)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"keep-pages", []string{"--page-out-startup=false"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var wall, cpu time.Duration
			var peak float64
			n := 0
			for b.Loop() {
				start := time.Now()
				args := append([]string{"--data-dir", b.TempDir(), "--catalog", "bench=" + dir}, tc.flags...)
				p, _ := catalogdproc.Serve(b, catalogd, args...)
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
		})
	}
}
