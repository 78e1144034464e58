package pageout

import (
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestDropCache: dropCache takes a file's clean pages that no process
// maps out of the page cache, and leaves the pages a process maps. The
// file is written, synced and read whole first, cached as a binary just
// extracted from an image is.
func TestDropCache(t *testing.T) {
	const size = 8 << 20
	path := filepath.Join(t.TempDir(), "exe")
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, f); err != nil {
		t.Fatal(err)
	}
	// The first MiB is mapped and read, as the pages of a running
	// program are.
	const mapped = 1 << 20
	m, err := unix.Mmap(int(f.Fd()), 0, mapped, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m) //nolint:errcheck // a read-only mapping of a test
	var sum int
	for i := 0; i < len(m); i += os.Getpagesize() {
		sum += int(m[i])
	}
	t.Logf("read the mapped MiB (byte sum %d)", sum)
	pages := size / os.Getpagesize()
	mappedPages := mapped / os.Getpagesize()
	if before := cachedPages(t, f, 0, size); before < pages*9/10 {
		t.Skipf("only %d of %d pages cached after reading the file whole: cannot tell a drop from eviction here", before, pages)
	}
	if err := dropCache(path); err != nil {
		t.Fatal(err)
	}
	// A large folio that holds a mapped page stays whole: on ext4 up to
	// 2 MiB of it (measured: 256 of these 1,792 pages, Linux 6.18).
	if got := cachedPages(t, f, mapped, size); got > (pages-mappedPages)/4 {
		t.Errorf("%d of the %d unmapped pages still cached after dropCache, want at most a quarter", got, pages-mappedPages)
	}
	if got := cachedPages(t, f, 0, mapped); got != mappedPages {
		t.Errorf("%d of the %d mapped pages cached after dropCache, want all", got, mappedPages)
	}
}

// cachedPages counts the pages of f in [off, end) that are in the page
// cache (mincore over a mapping that nothing touches).
func cachedPages(t *testing.T, f *os.File, off, end int) int {
	t.Helper()
	b, err := unix.Mmap(int(f.Fd()), int64(off), end-off, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b) //nolint:errcheck // a read-only mapping of a test
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
