package catalogdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
)

// DefaultDebounce is how long Watch waits for a burst of changes to end.
// Editors and `cp -r` write several files, or one file in several steps;
// half a second covers those without making an edit feel slow to show.
const DefaultDebounce = 500 * time.Millisecond

// Watch calls onChange each time something under the directory at path
// changed and then nothing more changed for debounce (DefaultDebounce when
// zero or less), so a burst of writes makes one call. It returns nil when
// ctx ends, or an error when it cannot watch path at all. It logs through
// the logr.Logger in ctx, if any.
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

	fsw, err := w.start()
	if err != nil {
		return err
	}
	for {
		gone, err := w.run(ctx, fsw)
		closeErr := fsw.Close()
		if err != nil || !gone {
			return errors.Join(err, closeErr)
		}
		log.Info("catalog directory is gone; waiting for it to come back")
		onChange()
		if fsw, err = w.waitForRoot(ctx); fsw == nil {
			return err
		}
		log.Info("catalog directory is back; watching it again")
		onChange()
	}
}

type watcher struct {
	root     string
	debounce time.Duration
	onChange func()
	log      logr.Logger
}

// start makes a watcher and adds the whole tree.
func (w *watcher) start() (*fsnotify.Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch catalog directory: %w", err)
	}
	fi, err := os.Stat(w.root)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err == nil {
		err = addTree(fsw, w.root, w.root)
	}
	if err != nil {
		fsw.Close()
		return nil, fmt.Errorf("watch catalog directory: %w", rootErr(err))
	}
	return fsw, nil
}

// run handles events until ctx ends (gone=false) or the root goes (gone=true).
func (w *watcher) run(ctx context.Context, fsw *fsnotify.Watcher) (gone bool, err error) {
	// The timer runs only while a change waits for the end of its burst.
	// Since Go 1.23 a stopped or reset timer never delivers a stale tick.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	pending := false
	changed := func() {
		timer.Reset(w.debounce)
		pending = true
	}

	for {
		select {
		case <-ctx.Done():
			return false, nil

		case ev, ok := <-fsw.Events:
			if !ok {
				return false, errors.New("watch catalog directory: event stream closed")
			}
			if ev.Op == fsnotify.Chmod {
				continue // permissions and timestamps: the content is the same
			}
			w.log.V(2).Info("file event", "event", ev.String())
			if ev.Name == w.root && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				return true, nil
			}
			if ev.Has(fsnotify.Create) {
				// A new directory may already hold files (mkdir -p, mv, cp -r)
				// whose events came before it was watched; the change event
				// below covers them, and the watch covers later ones.
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					if err := addTree(fsw, w.root, ev.Name); err != nil {
						w.log.V(1).Info("could not watch new directory", "path", ev.Name, "error", err.Error())
					}
				}
			}
			changed()

		case err, ok := <-fsw.Errors:
			if !ok {
				return false, errors.New("watch catalog directory: error stream closed")
			}
			// Events were lost (overflow) or a watch failed: what changed is
			// unknown, so watch the tree afresh and treat it as a change.
			w.log.Error(err, "file watch error; rescanning the catalog directory")
			if err := addTree(fsw, w.root, w.root); err != nil {
				if _, statErr := os.Stat(w.root); errors.Is(statErr, fs.ErrNotExist) {
					return true, nil
				}
				w.log.Error(err, "rescanning the catalog directory")
			}
			changed()

		case <-timer.C:
			if pending {
				pending = false
				w.onChange()
			}
		}
	}
}

// waitForRoot checks every debounce period until the root is a directory
// again and returns a watcher on it, or nil when ctx ends first.
func (w *watcher) waitForRoot(ctx context.Context) (*fsnotify.Watcher, error) {
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
		fsw, err := w.start()
		if err != nil {
			w.log.V(1).Info("catalog directory is back but cannot be watched yet", "error", err.Error())
			continue
		}
		return fsw, nil
	}
}

// addTree watches dir and every directory below it. Links to directories
// are not followed, as Dir does not follow them either. Adding a directory
// that is already watched is harmless.
func addTree(fsw *fsnotify.Watcher, root, dir string) error {
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
		if err := fsw.Add(p); err != nil && !(p != dir && errors.Is(err, fs.ErrNotExist)) {
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
