package packageapi

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
)

// maxQueued bounds the events waiting for a slow watch client beyond the
// current state it was sent first; past it the watch ends, and the client
// watches again from the last resourceVersion it saw (or lists again).
const maxQueued = 10000

// watcher is one watch: the cache queues the events it matches, and a
// goroutine hands them to the client, so the cache never waits for one.
type watcher struct {
	c         *cache
	match     func(*pkgv1.PackageManifest) bool
	namespace string
	bookmarks bool

	result chan watch.Event
	wake   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	queue []watch.Event
	limit int
}

func newWatcher(c *cache, namespace string, match func(*pkgv1.PackageManifest) bool, bookmarks bool) *watcher {
	w := &watcher{c: c, match: match, namespace: namespace, bookmarks: bookmarks,
		result: make(chan watch.Event), wake: make(chan struct{}, 1), done: make(chan struct{}), limit: maxQueued}
	go w.pump()
	return w
}

// send queues ev if it matches; the cache calls it holding its lock.
func (w *watcher) send(ev event) {
	if !w.match(ev.e.obj) {
		return
	}
	w.push(watch.Event{Type: ev.typ, Object: inNamespace(ev.e.obj, w.namespace)})
}

// initialEventsEnd queues the bookmark that ends the initial events of a
// watch that asked for them with bookmarks (sendInitialEvents, as
// informers streaming their list do).
func (w *watcher) initialEventsEnd(rv uint64) {
	if !w.bookmarks {
		return
	}
	mark := &pkgv1.PackageManifest{
		TypeMeta: metav1.TypeMeta{Kind: "PackageManifest", APIVersion: pkgv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: strconv.FormatUint(rv, 10),
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		},
	}
	w.push(watch.Event{Type: watch.Bookmark, Object: mark})
}

func (w *watcher) push(ev watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	over := len(w.queue) > w.limit
	w.mu.Unlock()
	if over {
		w.close()
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pump hands the queued events to the client until the watch ends.
func (w *watcher) pump() {
	defer close(w.result)
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, ev := range batch {
			select {
			case w.result <- ev:
			case <-w.done:
				return
			}
		}
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
	}
}

// close ends the watch; the cache calls it, holding its lock, when it stops
// or when the client falls too far behind.
func (w *watcher) close() {
	w.once.Do(func() { close(w.done) })
}

// Stop ends the watch at the client's request.
func (w *watcher) Stop() {
	w.close()
	w.c.unwatch(w)
}

// ResultChan is where the client reads the events.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// inNamespace is obj as an answer in namespace shows it: packages of
// cluster catalogs appear in every namespace. The copy is shallow; no
// answer modifies what it shares.
func inNamespace(obj *pkgv1.PackageManifest, namespace string) *pkgv1.PackageManifest {
	out := *obj
	out.Namespace = namespace
	return &out
}
