// Package benchenv gives benchmarks their catalog and their resource
// figures: the catalog `make bench` generates (or a smaller one made on the
// spot), the process's resident memory as Linux reports it, the peak heap
// of one call, and the CPU time it used.
package benchenv

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// Catalog returns the catalog to benchmark: $CATALOGD_BENCH_CATALOG (make
// bench generates about 8,000 bundles with bundle objects there), or a
// 1,000-bundle one generated into a temporary directory.
func Catalog(b *testing.B) string {
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

// ResetPeakRSS starts a new peak measurement: writing 5 to clear_refs resets
// VmHWM. Where the peak cannot be reset, or the resident set not read, it
// skips tb saying so: a peak that counts earlier runs, or reads 0, would
// measure nothing.
func ResetPeakRSS(tb testing.TB) {
	tb.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("the peak resident set cannot be reset here, so it cannot be measured: %v", err)
	}
	if PeakRSSMiB() == 0 || RSSMiB() == 0 {
		tb.Skip("/proc/self/status gives no resident set figures here, so it cannot be measured")
	}
}

// PeakRSSMiB is the peak resident set size since the last reset.
func PeakRSSMiB() float64 { return statusMiB("self", "VmHWM") }

// RSSMiB is the resident set size now.
func RSSMiB() float64 { return statusMiB("self", "VmRSS") }

// ProcessPeakRSSMiB is the peak resident set size of the running process
// pid. Read while it runs: a child's rusage maxrss, read after it exits,
// can count memory of the parent it was forked from.
func ProcessPeakRSSMiB(pid int) float64 { return statusMiB(strconv.Itoa(pid), "VmHWM") }

// ProcessMemoryMiB is the figure field of /proc/<pid>/status of the
// running process pid, in MiB: VmRSS, VmHWM, RssAnon (its heaps and
// stacks) or RssFile (the pages of its binary and other mapped files).
func ProcessMemoryMiB(pid int, field string) float64 { return statusMiB(strconv.Itoa(pid), field) }

// statusMiB reads a memory figure of /proc/<proc>/status, 0 if unavailable.
func statusMiB(proc, field string) float64 {
	f, err := os.Open("/proc/" + proc + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// CPUTime is the CPU time (user and system) the process has used. Wall time
// on a shared machine varies from run to run; CPU time varies much less, so
// benchmarks report both.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the CPU seconds per operation used since start.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((CPUTime()-start).Seconds()/float64(b.N), "cpu-s/op")
}

// ForcedCollections is how many garbage collections the process has had
// forced (runtime.GC, debug.FreeOSMemory), as the runtime counts them.
func ForcedCollections() uint64 {
	sample := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// heapObjects is the runtime/metrics figure PeakHeap samples: the bytes of
// heap objects, live or not yet swept, which is what the heap must hold.
const heapObjects = "/memory/classes/heap/objects:bytes"

// PeakHeapMiB runs f and returns the most heap it made the process hold at
// once, above what was in use when it started, in MiB: sampled every
// millisecond through runtime/metrics, which does not stop the world. A
// test of a memory bound asserts on it: unlike RSS, it is not kept high by
// what an earlier test took.
func PeakHeapMiB(f func()) float64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: heapObjects}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	peak := base
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	<-sampled
	peak = max(peak, read())
	return float64(peak-base) / (1 << 20)
}

// ProcessCPUSeconds is the CPU time (user and system) process pid has used
// so far, from /proc/PID/stat: a child measured while it still runs, which
// its rusage cannot give until it exits.
func ProcessCPUSeconds(tb testing.TB, pid int) float64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	const ticks = 100 // USER_HZ on Linux
	return (utime + stime) / ticks
}
