package catalogdir

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readBytes is the bytes this process has read through read(2) and its
// kin so far (rchar of /proc/self/io): what hashing a file costs, counted
// by the kernel rather than by the code under test.
func readBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io to count the bytes read: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// A Read through a Cache reads only the files that changed since the last
// Read, and the cache holds the files of the last Read only.
func TestCacheReadsOnlyChangedFiles(t *testing.T) {
	const big = 8 << 20
	tests := []struct {
		name   string
		window time.Duration
		// change is made between the second and the third Read.
		change func(t *testing.T, dir string)
		// wantRead says which of the three Reads read the big file.
		wantRead [3]bool
		// wantFiles is the number of files the cache holds at the end.
		wantFiles int
	}{
		{name: "unchanged", window: testRacyWindow, change: func(*testing.T, string) {},
			wantRead: [3]bool{true, false, false}, wantFiles: 3},
		{name: "small file edited", window: testRacyWindow, change: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"a/catalog.json": `{"schema":"olm.package","name":"b"}`})
		}, wantRead: [3]bool{true, false, false}, wantFiles: 3},
		{name: "big file edited in place, times put back", window: testRacyWindow, change: func(t *testing.T, dir string) {
			editKeepingTimes(t, filepath.Join(dir, "big/catalog.json"), `{"x":"`+strings.Repeat("y", big-8)+`"}`)
		}, wantRead: [3]bool{true, false, true}, wantFiles: 3},
		{name: "big file removed", window: testRacyWindow, change: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "big/catalog.json")); err != nil {
				t.Fatal(err)
			}
		}, wantRead: [3]bool{true, false, false}, wantFiles: 2},
		{name: "every file within the racy window", window: time.Hour, change: func(*testing.T, string) {},
			wantRead: [3]bool{true, true, true}, wantFiles: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"a/catalog.json":   `{"schema":"olm.package","name":"a"}`,
				"big/catalog.json": `{"x":"` + strings.Repeat("x", big-8) + `"}`,
				"c/catalog.yaml":   "schema: olm.package\nname: c\n",
			})
			c := NewCache()
			c.racyWindow = tc.window
			for i := range 3 {
				if i == 2 {
					tc.change(t, dir)
				}
				time.Sleep(2 * testRacyWindow)
				before := readBytes(t)
				src, err := Read(context.Background(), dir, c)
				if err != nil {
					t.Fatal(err)
				}
				read := readBytes(t) - before
				if got := read >= big; got != tc.wantRead[i] {
					t.Errorf("Read %d read %d bytes; want the %d-byte file read: %v", i+1, read, big, tc.wantRead[i])
				}
				if want := digestOf(t, dir); src.Digest != want {
					t.Errorf("Read %d: digest %s; a Read without cache says %s", i+1, src.Digest, want)
				}
			}
			if got := len(c.files); got != tc.wantFiles {
				t.Errorf("cache holds %d files; want %d", got, tc.wantFiles)
			}
		})
	}
}
