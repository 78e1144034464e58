package catalogdir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// neverDebounce is a debounce longer than any test runs: a call that comes
// while it is set came because Watch saw the change was complete.
const neverDebounce = time.Hour

// TestCompleteSavesNeedNoDebounce: on Linux, where inotify reports a file
// closed after writing, a save that is complete when its event arrives
// makes its call at once, and one call for a burst of such saves.
func TestCompleteSavesNeedNoDebounce(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
	}{
		{name: "written and closed", change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "catalog.json"), `{"v":2}`)
		}},
		{name: "new file written and closed", change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "sub", "other.json"), `{}`)
		}},
		{name: "renamed over the old file", change: func(t *testing.T, dir string) {
			tmp := filepath.Join(t.TempDir(), "saving.json")
			write(t, tmp, `{"v":3}`)
			if err := os.Rename(tmp, filepath.Join(dir, "catalog.json")); err != nil {
				t.Skipf("cannot rename across temp directories here: %v", err)
			}
		}},
		{name: "editor's temporary file renamed over the old one", change: func(t *testing.T, dir string) {
			tmp := filepath.Join(dir, ".catalog.json.swp")
			write(t, tmp, `{"v":3}`)
			if err := os.Rename(tmp, filepath.Join(dir, "catalog.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "removed", change: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "sub", "inner", "catalog.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "directory created", change: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "new"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "burst of files copied in", change: func(t *testing.T, dir string) {
			for i := range 30 {
				write(t, filepath.Join(dir, fmt.Sprintf("pkg-%d", i), "catalog.json"), fmt.Sprint(i))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, rec, base := watchedCatalog(t, neverDebounce)

			tc.change(t, dir)
			waitFor(t, rec, base+1)
		})
	}
}

// TestOpenWriteWaitsForClose: a file being written makes no call while it
// is open, however long, when the debounce has not passed; closing it
// makes the call.
func TestOpenWriteWaitsForClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	write(t, filepath.Join(dir, "catalog.json"), "{}")
	rec := startWatch(t, dir, neverDebounce)
	base := rec.count()

	f, err := os.OpenFile(filepath.Join(dir, "catalog.json"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(`{"half":`); err != nil {
		t.Fatal(err)
	}
	// A saved change would have made its call after settle; ten times that
	// gives a loaded machine room, and a call now would be one too early.
	time.Sleep(10 * settle)
	if n := rec.count(); n != base {
		t.Fatalf("%d calls while the file was still open for writing", n-base)
	}
	if _, err := f.WriteString(`true}`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, rec, base+1)
}
