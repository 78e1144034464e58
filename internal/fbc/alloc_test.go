package fbc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestSmallFilesTakeSmallBuffers: a walk allocates for each file about
// what the file holds, not a whole read chunk and a channel sized for a
// long file. An image of 99,000 empty files beside a small catalog spent
// most of its build's time and memory allocating those (about 160 KiB a
// file).
func TestSmallFilesTakeSmallBuffers(t *testing.T) {
	dir := t.TempDir()
	const files = 2000
	for i := range files {
		name := filepath.Join(dir, fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d.json", i))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		content := []byte{}
		if i%2 == 1 {
			content = []byte(`{"schema":"olm.package","name":"p` + fmt.Sprint(i) + `"}` + "\n")
		}
		if err := os.WriteFile(name, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blobs := 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := Walk(context.Background(), os.DirFS(dir), Limits{}, func(context.Context, Blob) error {
		blobs++
		return nil
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if blobs != files/2 {
		t.Fatalf("walked %d blobs; the files hold %d", blobs, files/2)
	}
	perFile := (after.TotalAlloc - before.TotalAlloc) / files
	const bound = 8 << 10 // a file's name, its input and blob, an open file
	t.Logf("walking %d small files allocated %d bytes a file", files, perFile)
	if perFile > bound {
		t.Errorf("walking %d small files allocated %d KiB a file; want at most %d KiB", files, perFile>>10, bound>>10)
	}
}
