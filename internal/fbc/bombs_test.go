package fbc

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// bombBytes is the size of the files TestBombsTakeBoundedMemory reads: far
// more than the bound, so that a reader that keeps what it skips, or
// amplifies it, breaks the bound many times over.
const bombBytes = 128 << 20

// TestBombsTakeBoundedMemory walks a file of each shape of issue 18 and
// checks the heap the walk took at its peak: a constant for what is not a
// blob (the reader drops it as it reads), the limit per blob for a long
// string (refused once over it). Before the reader dropped them, 1 GB of
// spaces took 5 GB; the figures of a GB of each shape through the binary
// are test/stress's BenchmarkBombs.
func TestBombsTakeBoundedMemory(t *testing.T) {
	for _, bomb := range fbcgen.Bombs() {
		t.Run(bomb.Shape, func(t *testing.T) {
			dir := t.TempDir()
			size := int64(bombBytes)
			if bomb.Shape == "nesting" {
				// Decoded blob by blob by encoding/json, at about 8 MB/s:
				// enough to show the walk holds no more than a few blobs.
				size = 16 << 20
			}
			if err := bomb.Write(filepath.Join(dir, bomb.File), size); err != nil {
				t.Fatal(err)
			}
			limits := Limits{}.withDefaults()
			// What is not a blob: the walk's byte budget and its chunks.
			bound := bomb.BoundMiB(16, limits.BlobBytes)
			var blobs int
			var err error
			peak := benchenv.PeakHeapMiB(func() {
				err = Walk(context.Background(), os.DirFS(dir), limits, func(context.Context, Blob) error {
					blobs++
					return nil
				})
			})
			if err := bomb.Check(err); err != nil {
				t.Errorf("walk: %v", err)
			}
			t.Logf("%d MiB of %s: %d blobs, peak heap %.1f MiB", size>>20, bomb.Shape, blobs, peak)
			if peak > bound {
				t.Errorf("peak heap %.1f MiB reading %d MiB of %s; want at most %.0f MiB", peak, size>>20, bomb.Shape, bound)
			}
		})
	}
}

// TestWalkAheadTakesLittleMemory walks a catalog of many small blobs for a
// consumer slower than the parser, as the index's loader is, so that the
// parser runs ahead as far as the walk lets it, and checks the heap the
// walk holds. What it holds ahead is what every build holds on top of the
// server's own heap, twice over under the collector's default pacing: with
// a 4 MiB budget the walk took 13 MiB here (objects not yet swept
// included) and raised the server's peak on the bench catalog by 8 MiB
// (make bench-memory); with 1 MiB, 5 MiB.
//
// The consumer is slow because it collects the heap every few blobs; each
// collection measures exactly what is live then (the parsed blobs waiting
// and being parsed among it), which the bound must cover at every instant
// of a correct walk, rather than sampling the whole process's heap on a
// clock.
func TestWalkAheadTakesLittleMemory(t *testing.T) {
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 20, Bundles: 1500, BundleObjectBytes: 5500, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	const boundMiB = 4
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() float64 {
		runtime.GC()
		metrics.Read(sample)
		return float64(sample[0].Value.Uint64()) / (1 << 20)
	}
	base := live()
	var blobs int
	var held float64
	err := Walk(context.Background(), os.DirFS(dir), Limits{}, func(context.Context, Blob) error {
		if blobs++; blobs%10 == 0 {
			held = max(held, live()-base)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d blobs, at most %.1f MiB live beside the heap before the walk", blobs, held)
	if held > boundMiB {
		t.Errorf("the walk held up to %.1f MiB walking small blobs; want at most %d MiB", held, boundMiB)
	}
}
