package pageout

import (
	"os"

	"golang.org/x/sys/unix"
)

// pageOut advises MADV_PAGEOUT on [addr, addr+n), a mapping of this
// process; madvise takes the range as numbers, so no Go pointer is made
// of memory Go did not allocate.
func pageOut(addr, n uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(addr), uintptr(n), unix.MADV_PAGEOUT)
	switch {
	case errno == unix.EINVAL:
		return ErrUnsupported
	case errno != 0:
		return errno
	}
	return nil
}

// readAlone advises MADV_RANDOM on [addr, addr+n): a page touched after
// the range was paged out is read from the file alone, without the
// read-around that would bring back the pages about it.
func readAlone(addr, n uint64) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(addr), uintptr(n), unix.MADV_RANDOM); errno != 0 {
		return errno
	}
	return nil
}

// dropCache advises POSIX_FADV_DONTNEED on the whole file at path: the
// kernel drops its clean pages that no process maps from the page cache.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
