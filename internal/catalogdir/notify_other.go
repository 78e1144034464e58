//go:build !linux

package catalogdir

import (
	"fmt"
	"os"

	"github.com/fsnotify/fsnotify"
)

// fsnotifyNotifier is a notifier where inotify is not there. fsnotify
// cannot report a file closed after writing on every system, so every
// change is reported as opWriting and waits out the debounce.
type fsnotifyNotifier struct {
	root   string
	w      *fsnotify.Watcher
	events chan fileEvent
	stop   chan struct{}
	exited chan struct{}
}

func newNotifier(root string) (notifier, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("start file watcher: %w", err)
	}
	n := &fsnotifyNotifier{root: root, w: w, events: make(chan fileEvent),
		stop: make(chan struct{}), exited: make(chan struct{})}
	go n.convert()
	return n, nil
}

func (n *fsnotifyNotifier) Events() <-chan fileEvent { return n.events }
func (n *fsnotifyNotifier) Errors() <-chan error     { return n.w.Errors }
func (n *fsnotifyNotifier) Add(dir string) error     { return n.w.Add(dir) }

func (n *fsnotifyNotifier) Close() error {
	close(n.stop)
	err := n.w.Close()
	<-n.exited
	return err
}

func (n *fsnotifyNotifier) convert() {
	defer close(n.exited)
	defer close(n.events)
	for {
		var e fsnotify.Event
		var ok bool
		select {
		case <-n.stop:
			return
		case e, ok = <-n.w.Events:
		}
		if !ok {
			return
		}
		if e.Op == fsnotify.Chmod {
			continue // permissions and timestamps: the content is the same
		}
		ev := fileEvent{path: e.Name, op: opWriting}
		switch {
		case e.Name == n.root && e.Has(fsnotify.Remove|fsnotify.Rename):
			ev.op = opRootGone
		case e.Has(fsnotify.Create):
			if fi, err := os.Lstat(e.Name); err == nil && fi.IsDir() {
				ev.op = opDirAdded
			}
		}
		select {
		case n.events <- ev:
		case <-n.stop:
			return
		}
	}
}
