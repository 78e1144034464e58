package catalogdir

import (
	"io/fs"
	"syscall"
)

// statSig is the identity of a file as Cache compares it.
func statSig(fi fs.FileInfo) (fileSig, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileSig{}, false
	}
	return fileSig{
		size:  fi.Size(),
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		ino:   st.Ino,
		dev:   uint64(st.Dev), // a uint32 on some architectures
	}, true
}
