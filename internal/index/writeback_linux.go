package index

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing f's dirty pages to disk without waiting
// for them, so that the sync before the file is published (package
// store) finds most of them written: an incremental build's copy of the
// previous database is written while the build goes on. Advisory: an
// error only leaves the work to the sync.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
