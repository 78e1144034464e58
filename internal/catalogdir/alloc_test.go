package catalogdir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadHashesThroughOneBuffer: reading a directory's digest allocates
// about what its listing takes, not a buffer per file. catalogd serve
// reads the digest again right after a build, when the build's memory has
// just been given back; 300 files allocated 10 MB there, which grew the
// heap of an idle server again.
func TestReadHashesThroughOneBuffer(t *testing.T) {
	dir := t.TempDir()
	const files = 300
	content := bytes.Repeat([]byte("{}\n"), 20<<10)
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.json", i)), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("f000.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Read(t.Context(), dir, nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	const bound = 1 << 20 // the listing and entries, and one buffer
	t.Logf("reading the digest of %d files allocated %d KiB", files+1, allocated>>10)
	if allocated > bound {
		t.Errorf("reading the digest of %d files allocated %d KiB; want at most %d KiB", files+1, allocated>>10, bound>>10)
	}
}
