package fbc

import (
	"context"
	"os"
	"testing"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// BenchmarkWalkCommunity walks the real community catalog (YAML), the read
// `catalogd validate` spends most of its time in.
func BenchmarkWalkCommunity(b *testing.B) {
	fsys := os.DirFS(fbcfacts.SharedCommunity(b))
	cpu := benchenv.CPUTime()
	for b.Loop() {
		if err := Walk(context.Background(), fsys, Limits{}, func(context.Context, Blob) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	benchenv.ReportCPU(b, cpu)
}
