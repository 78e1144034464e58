package catalogdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyMask is what each watched directory reports. IN_CLOSE_WRITE is
// why this is inotify itself rather than fsnotify, which does not let a
// caller ask for it: a file closed after writing, like one renamed into
// place, is a save that is complete when its event arrives, so the watch
// need not wait out the debounce for it. IN_ATTRIB (permissions, times)
// is left out, as the content is the same.
const inotifyMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// inotifyNotifier is a notifier on Linux's inotify: one watch per
// directory, events read on a goroutine of its own.
type inotifyNotifier struct {
	root   string
	file   *os.File // non-blocking, so that Close ends a Read in progress
	events chan fileEvent
	errs   chan error
	stop   chan struct{}
	exited chan struct{}

	mu   sync.Mutex
	dirs map[int]string // watch descriptor → the directory it watches
}

func newNotifier(root string) (notifier, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("start inotify: %w", err)
	}
	n := &inotifyNotifier{
		root:   root,
		file:   os.NewFile(uintptr(fd), "inotify"),
		events: make(chan fileEvent),
		errs:   make(chan error),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
		dirs:   map[int]string{},
	}
	go n.read()
	return n, nil
}

func (n *inotifyNotifier) Events() <-chan fileEvent { return n.events }
func (n *inotifyNotifier) Errors() <-chan error     { return n.errs }

// Add watches dir. Adding a directory already watched is harmless: the
// kernel hands back the same descriptor.
func (n *inotifyNotifier) Add(dir string) error {
	wd, err := unix.InotifyAddWatch(int(n.file.Fd()), dir, inotifyMask)
	if errors.Is(err, unix.ENOSPC) {
		err = fmt.Errorf("%w (the limit of inotify watches is reached: raise the sysctl fs.inotify.max_user_watches)", err)
	}
	if err != nil {
		return &fs.PathError{Op: "watch", Path: dir, Err: err}
	}
	n.mu.Lock()
	n.dirs[wd] = dir
	n.mu.Unlock()
	return nil
}

// Close stops reading, waits for the reading goroutine to end and closes
// the inotify descriptor, which removes every watch.
func (n *inotifyNotifier) Close() error {
	close(n.stop)
	err := n.file.Close()
	<-n.exited
	return err
}

// read turns what the kernel reports into fileEvents until Close, or
// until reading fails: then it reports the error and closes Events.
func (n *inotifyNotifier) read() {
	defer close(n.exited)
	defer close(n.events)
	// Room for many events at once; each is a header and a name of at
	// most NAME_MAX bytes, so one always fits.
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		size, err := n.file.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				n.sendErr(fmt.Errorf("read inotify events: %w", err))
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= size; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameAt := off + unix.SizeofInotifyEvent
			end := nameAt + int(raw.Len)
			if end > size {
				n.sendErr(errors.New("read inotify events: an event runs past what was read"))
				return
			}
			name := string(trimNUL(buf[nameAt:end]))
			off = end
			if !n.handle(int(raw.Wd), raw.Mask, name) {
				return
			}
		}
	}
}

// handle sends what one inotify event means, reporting false once Close
// was called.
func (n *inotifyNotifier) handle(wd int, mask uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return n.sendErr(errors.New("inotify queue overflowed: events were lost"))
	}
	n.mu.Lock()
	dir, known := n.dirs[wd]
	if mask&unix.IN_IGNORED != 0 {
		delete(n.dirs, wd) // the directory went; its descriptor may be reused
	}
	n.mu.Unlock()
	if !known {
		return true // an event queued before its watch was removed
	}
	if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
		// A directory below the root that went is reported by its parent too.
		if dir == n.root {
			return n.send(fileEvent{path: dir, op: opRootGone})
		}
		return true
	}
	if name == "" {
		return true
	}
	ev := fileEvent{path: filepath.Join(dir, name)}
	isDir := mask&unix.IN_ISDIR != 0
	switch {
	case isDir && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		ev.op = opDirAdded
	case mask&(unix.IN_CREATE|unix.IN_MODIFY) != 0:
		ev.op = opWriting
	case mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_DELETE) != 0:
		ev.op = opSaved
	default:
		return true
	}
	return n.send(ev)
}

func (n *inotifyNotifier) send(ev fileEvent) bool {
	select {
	case n.events <- ev:
		return true
	case <-n.stop:
		return false
	}
}

func (n *inotifyNotifier) sendErr(err error) bool {
	select {
	case n.errs <- err:
		return true
	case <-n.stop:
		return false
	}
}

// trimNUL cuts the NUL bytes that pad a name in an inotify event.
func trimNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
