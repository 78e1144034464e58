package catalogdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
)

// DefaultDebounce is how long Watch waits for a burst of changes to end
// when it cannot tell that a save is complete: a file written and not yet
// closed, or every change where the system does not report closes.
// Editors and `cp -r` write several files, or one file in several steps;
// half a second covers those without making an edit feel slow to show.
const DefaultDebounce = 500 * time.Millisecond

// settle is how long Watch waits after a save that is complete when its
// event arrives (a file closed after writing, renamed into place or
// removed, a directory moved in) while no other file is being written:
// long enough that the saves of a burst (an editor's temporary file and
// its rename, `cp -r`, `git checkout`), which follow each other within
// microseconds, still end in one call, short beside any build.
const settle = 30 * time.Millisecond

// Watch calls onChange each time something under the directory at path
// changed and the change is complete, so that a burst of writes makes one
// call. A change is complete once every file written since the last call
// was closed, renamed into place or removed and nothing more happened for
// a moment (settle), or, where that cannot be told (a file kept open, or a
// system whose notifications do not report closes), once nothing more
// changed for debounce (DefaultDebounce when zero or less). It returns nil
// when ctx ends, or an error when it cannot watch path at all. It logs
// through the logr.Logger in ctx, if any.
//
// Directories are watched, not files, so editors that save by writing a new
// file and renaming it over the old one are seen like any other write.
// Directories created (or moved in) later are watched too. When path itself
// is removed or renamed away, onChange is called (the content is gone), and
// Watch checks every debounce period for the directory to come back; when it
// does, it is watched again and onChange is called once more.
//
// onChange runs on Watch's goroutine: changes during a call are collected and
// make one more call after it returns.
func Watch(ctx context.Context, path string, debounce time.Duration, onChange func()) error {
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	root, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("watch catalog directory: %w", rootErr(err))
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("dir", root)
	w := &watcher{root: root, debounce: debounce, onChange: onChange, log: log}

	n, err := w.start()
	if err != nil {
		return err
	}
	for {
		gone, err := w.run(ctx, n)
		closeErr := n.Close()
		if err != nil || !gone {
			return errors.Join(err, closeErr)
		}
		log.Info("catalog directory is gone; waiting for it to come back")
		onChange()
		if n, err = w.waitForRoot(ctx); n == nil {
			return err
		}
		log.Info("catalog directory is back; watching it again")
		onChange()
	}
}

// notifier reports changes under the directories added to it: inotify on
// Linux (notify_linux.go), fsnotify elsewhere (notify_other.go).
type notifier interface {
	Add(dir string) error
	Events() <-chan fileEvent
	// Errors reports events lost or a watch that failed. Events is
	// closed when no more can come.
	Errors() <-chan error
	Close() error
}

// fileEvent is one change a notifier saw.
type fileEvent struct {
	path string
	op   eventOp
}

type eventOp uint8

const (
	// opWriting: a file was created or written, and is complete only
	// when it is closed (opSaved for the same path) or the debounce ends.
	opWriting eventOp = iota
	// opSaved: a change complete when it is reported: a file closed after
	// writing, renamed into place or away, or removed.
	opSaved
	// opDirAdded: a directory was created or moved in; it may already hold
	// files whose events came before it was watched.
	opDirAdded
	// opRootGone: the watched directory itself was removed or renamed.
	opRootGone
)

type watcher struct {
	root     string
	debounce time.Duration
	onChange func()
	log      logr.Logger
}

// start makes a notifier and adds the whole tree.
func (w *watcher) start() (notifier, error) {
	n, err := newNotifier(w.root)
	if err != nil {
		return nil, fmt.Errorf("watch catalog directory: %w", err)
	}
	fi, err := os.Stat(w.root)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err == nil {
		err = addTree(n, w.root, w.root)
	}
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("watch catalog directory: %w", rootErr(err))
	}
	return n, nil
}

// run handles events until ctx ends (gone=false) or the root goes (gone=true).
func (w *watcher) run(ctx context.Context, n notifier) (gone bool, err error) {
	// The timer runs only while a change waits to be complete. Since Go
	// 1.23 a stopped or reset timer never delivers a stale tick.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	pending := false
	// writing holds the files written since the last call and not yet
	// closed: while any is, a change waits for the debounce.
	writing := map[string]struct{}{}
	changed := func() {
		pending = true
		if len(writing) == 0 {
			timer.Reset(settle)
		} else {
			timer.Reset(w.debounce)
		}
	}

	for {
		select {
		case <-ctx.Done():
			return false, nil

		case ev, ok := <-n.Events():
			if !ok {
				return false, errors.New("watch catalog directory: event stream ended")
			}
			w.log.V(2).Info("file event", "path", ev.path, "op", ev.op.String())
			switch ev.op {
			case opRootGone:
				return true, nil
			case opWriting:
				writing[ev.path] = struct{}{}
			case opSaved:
				delete(writing, ev.path)
			case opDirAdded:
				// The change covers files that came with the directory
				// (mkdir -p, mv, cp -r) before it was watched; the watch
				// covers later ones.
				if err := addTree(n, w.root, ev.path); err != nil {
					w.log.V(1).Info("could not watch new directory", "path", ev.path, "error", err.Error())
				}
			}
			changed()

		case err, ok := <-n.Errors():
			if !ok {
				return false, errors.New("watch catalog directory: error stream ended")
			}
			// Events were lost (overflow) or a watch failed: what changed is
			// unknown, so watch the tree afresh and treat it as a change
			// whose files may still be being written.
			w.log.Error(err, "file watch error; rescanning the catalog directory")
			if err := addTree(n, w.root, w.root); err != nil {
				if _, statErr := os.Stat(w.root); errors.Is(statErr, fs.ErrNotExist) {
					return true, nil
				}
				w.log.Error(err, "rescanning the catalog directory")
			}
			writing[w.root] = struct{}{}
			changed()

		case <-timer.C:
			if pending {
				// A file still open after the debounce is taken as it is,
				// as before closes were known: its next write or close
				// makes another call.
				pending = false
				clear(writing)
				w.onChange()
			}
		}
	}
}

func (op eventOp) String() string {
	switch op {
	case opWriting:
		return "writing"
	case opSaved:
		return "saved"
	case opDirAdded:
		return "directory added"
	case opRootGone:
		return "root gone"
	}
	return fmt.Sprintf("eventOp(%d)", uint8(op))
}

// waitForRoot checks every debounce period until the root is a directory
// again and returns a watcher on it, or nil when ctx ends first.
func (w *watcher) waitForRoot(ctx context.Context) (notifier, error) {
	tick := time.NewTicker(w.debounce)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case <-tick.C:
		}
		if fi, err := os.Stat(w.root); err != nil || !fi.IsDir() {
			continue
		}
		n, err := w.start()
		if err != nil {
			w.log.V(1).Info("catalog directory is back but cannot be watched yet", "error", err.Error())
			continue
		}
		return n, nil
	}
}

// addTree watches dir and every directory below it. Links to directories
// are not followed, as Dir does not follow them either. Adding a directory
// that is already watched is harmless.
func addTree(n notifier, root, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked: nothing to watch
			}
			return relTo(root, p, err)
		}
		if !d.IsDir() {
			return nil
		}
		if err := n.Add(p); err != nil && !(p != dir && errors.Is(err, fs.ErrNotExist)) {
			return relTo(root, p, err)
		}
		return nil
	})
}

// relTo names p relative to root in err, so that the server's path of the
// catalog directory stays out of it.
func relTo(root, p string, err error) error {
	rel, relErr := filepath.Rel(root, p)
	if relErr != nil || rel == "." {
		return rootErr(err)
	}
	return fmt.Errorf("%s: %w", filepath.ToSlash(rel), rootErr(err))
}
