package packageapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/store"
)

// Indexes gives read access to the live index of each catalog and tells of
// their changes; *store.Store provides it.
type Indexes interface {
	Acquire(catalog string) (*store.Snapshot, error)
	Catalogs() []string
	Watch(fn func(catalog string))
}

// Catalogs says what is known of a catalog besides its index (its labels
// and priority); *catalogs.Table provides it.
type Catalogs interface {
	Get(name string) (catalogs.Catalog, bool)
}

// maxEvents bounds the events kept for watches that resume from a
// resourceVersion: a watch from before the oldest of them gets 410 Gone
// and lists again, as from an API server whose watch cache moved on.
const maxEvents = 10000

// entry is one package of one catalog as the API serves it. obj is never
// modified once made (answers copy it before setting their namespace).
type entry struct {
	catalog  string
	priority int32
	digest   string
	obj      *pkgv1.PackageManifest
}

// event is a change of one entry, numbered by the resourceVersion it got.
type event struct {
	rv  uint64
	typ watch.EventType
	e   *entry
}

// cache holds the manifest of every package of every live index, and the
// recent changes to them. One goroutine (run) changes it, catalog by
// catalog, when the store tells of a swap or removal; answers read it.
//
// resourceVersions count changes: every ADDED, MODIFIED or DELETED takes
// the next number, and a list answers with the last one given, so a
// watch from a list's resourceVersion sees exactly the changes after it.
// The count starts at base, the process's start time in milliseconds, so
// that a restarted replica does not hand out numbers it handed out before.
type cache struct {
	idx  Indexes
	cats Catalogs
	log  logr.Logger
	// dirty holds the catalogs to look at again; kick wakes run.
	dirtyMu sync.Mutex
	dirty   map[string]bool
	kick    chan struct{}

	mu sync.RWMutex
	// loaded is closed once every catalog live at start-up is in.
	loaded   chan struct{}
	rv       uint64
	floor    uint64 // the oldest resourceVersion a watch can resume from
	byCat    map[string]map[string]*entry
	list     []*entry // every entry, by name, then priority (highest first), then catalog
	events   []event  // oldest first, at most maxEvents
	watchers map[*watcher]struct{}
}

func newCache(idx Indexes, cats Catalogs, base uint64, log logr.Logger) *cache {
	c := &cache{idx: idx, cats: cats, log: log, dirty: map[string]bool{}, kick: make(chan struct{}, 1),
		loaded: make(chan struct{}), rv: base, floor: base, byCat: map[string]map[string]*entry{},
		watchers: map[*watcher]struct{}{}}
	idx.Watch(c.mark)
	return c
}

// mark notes that catalog's live index changed; it never blocks.
func (c *cache) mark(catalog string) {
	c.dirtyMu.Lock()
	c.dirty[catalog] = true
	c.dirtyMu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// run loads every live index, then follows the store's changes until ctx
// ends.
func (c *cache) run(ctx context.Context) {
	for _, name := range c.idx.Catalogs() {
		c.mark(name)
	}
	c.syncDirty(ctx)
	close(c.loaded)
	for {
		select {
		case <-ctx.Done():
			c.stopWatchers()
			return
		case <-c.kick:
			c.syncDirty(ctx)
		}
	}
}

func (c *cache) syncDirty(ctx context.Context) {
	c.dirtyMu.Lock()
	names := make([]string, 0, len(c.dirty))
	for name := range c.dirty {
		names = append(names, name)
	}
	clear(c.dirty)
	c.dirtyMu.Unlock()
	slices.Sort(names)
	converted := 0
	for _, name := range names {
		n, err := c.sync(ctx, name)
		converted += n
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// The catalog keeps its previous manifests; its next change
			// tries again.
			c.log.Error(err, "updating package manifests", "catalog", name)
		}
	}
	// Converting packages reads and decodes every head's CSV, garbage
	// several times the manifests kept. The Go runtime would return it
	// to the kernel only gradually, and it comes right after the store
	// gave back its build's; syncs follow swaps, which are rare, so
	// collecting and returning it at once costs little.
	if converted > 0 {
		debug.FreeOSMemory()
	}
}

// sync brings one catalog's manifests in line with its live index:
// packages whose digest is unchanged keep their manifest and make no
// event; the others are read and converted again. It returns how many
// packages it converted.
func (c *cache) sync(ctx context.Context, catalog string) (int, error) {
	c.mu.RLock()
	old := c.byCat[catalog]
	c.mu.RUnlock()

	next := map[string]*entry{}
	converted := 0
	snap, err := c.idx.Acquire(catalog)
	switch {
	case errors.Is(err, store.ErrNotIndexed):
		// Removed: every package goes.
	case err != nil:
		return 0, err
	default:
		defer snap.Release()
		if next, converted, err = c.read(ctx, catalog, snap, old); err != nil {
			return converted, err
		}
	}

	var changes []event
	for name, e := range next {
		switch prev, ok := old[name]; {
		case !ok:
			changes = append(changes, event{typ: watch.Added, e: e})
		case prev != e:
			changes = append(changes, event{typ: watch.Modified, e: e})
		}
	}
	for name, e := range old {
		if _, ok := next[name]; !ok {
			changes = append(changes, event{typ: watch.Deleted, e: e})
		}
	}
	slices.SortFunc(changes, func(a, b event) int { return strings.Compare(a.e.obj.Name, b.e.obj.Name) })

	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range changes {
		c.rv++
		changes[i].rv = c.rv
		// A changed entry is new, so it can take its resourceVersion now;
		// a deleted one is sent as a copy carrying the deletion's.
		if changes[i].typ == watch.Deleted {
			gone := *changes[i].e
			obj := *gone.obj
			obj.ResourceVersion = strconv.FormatUint(c.rv, 10)
			gone.obj = &obj
			changes[i].e = &gone
		} else {
			changes[i].e.obj.ResourceVersion = strconv.FormatUint(c.rv, 10)
		}
	}
	if len(next) == 0 {
		delete(c.byCat, catalog)
	} else {
		c.byCat[catalog] = next
	}
	c.list = c.list[:0]
	for _, pkgs := range c.byCat {
		for _, e := range pkgs {
			c.list = append(c.list, e)
		}
	}
	slices.SortFunc(c.list, compareEntries)
	c.events = append(c.events, changes...)
	if over := len(c.events) - maxEvents; over > 0 {
		c.floor = c.events[over-1].rv
		c.events = slices.Delete(c.events, 0, over)
	}
	for w := range c.watchers {
		select {
		case <-w.done: // ended by falling behind
			delete(c.watchers, w)
			continue
		default:
		}
		for _, ev := range changes {
			w.send(ev)
		}
	}
	if len(changes) > 0 {
		c.log.V(1).Info("package manifests changed", "catalog", catalog, "changes", len(changes), "resourceVersion", c.rv)
	}
	return converted, nil
}

// compareEntries orders entries by package name, then the order in which
// a get chooses among catalogs serving the same package: highest priority
// first, then catalog name.
func compareEntries(a, b *entry) int {
	return cmp.Or(strings.Compare(a.obj.Name, b.obj.Name), cmp.Compare(b.priority, a.priority), strings.Compare(a.catalog, b.catalog))
}

// read converts the packages of a live index, reusing old's entry for
// each package whose digest did not change, and says how many it
// converted (also when it fails part way).
func (c *cache) read(ctx context.Context, catalog string, snap *store.Snapshot, old map[string]*entry) (next map[string]*entry, converted int, err error) {
	sums, err := snap.Catalog.PackageSummaries(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list packages of catalog %q: %w", catalog, err)
	}
	meta := catalogMeta{Name: catalog, Created: snap.Info.BuiltAt}
	var priority int32
	if cat, ok := c.cats.Get(catalog); ok {
		meta.Labels, priority = cat.Labels, cat.Priority
	}
	next = make(map[string]*entry, len(sums.Items))
	var made []string
	for _, sum := range sums.Items {
		if prev, ok := old[sum.Name]; ok && prev.digest == sum.Digest && prev.priority == priority {
			next[sum.Name] = prev
			continue
		}
		converted++
		d, err := readPackage(ctx, snap.Catalog, sum)
		if err != nil {
			return nil, converted, fmt.Errorf("read package %q of catalog %q: %w", sum.Name, catalog, err)
		}
		m, ok := toManifest(meta, d)
		if !ok {
			continue
		}
		next[sum.Name] = &entry{catalog: catalog, priority: priority, digest: sum.Digest, obj: m}
		made = append(made, sum.Name)
	}
	// Packed once every package is converted, so that the packed copies
	// share nothing with any conversion's garbage.
	ms := make([]*pkgv1.PackageManifest, len(made))
	for i, name := range made {
		ms[i] = next[name].obj
	}
	pack(ms)
	for i, name := range made {
		next[name].obj = ms[i]
	}
	return next, converted, nil
}

// snapshot returns the entries and the resourceVersion they are at.
func (c *cache) snapshot() ([]*entry, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.list), c.rv
}

// find returns the entries of the named package, in the order get
// chooses among them.
func (c *cache) find(name string) []*entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, _ := slices.BinarySearchFunc(c.list, name, func(e *entry, name string) int { return strings.Compare(e.obj.Name, name) })
	var out []*entry
	for ; i < len(c.list) && c.list[i].obj.Name == name; i++ {
		out = append(out, c.list[i])
	}
	return out
}

// watch registers w to receive the changes after resourceVersion from.
// From 0, or when the client asked for initial events (sendInitialEvents,
// where from is only the oldest state it accepts), w first receives the
// current state as ADDED events, then the changes after it.
func (c *cache) watch(w *watcher, from uint64, initial bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case from > c.rv:
		return storage.NewTooLargeResourceVersionError(from, c.rv, 1)
	case from != 0 && !initial && from < c.floor:
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, c.floor))
	}
	if from == 0 || initial {
		for _, e := range c.list {
			w.send(event{rv: c.rv, typ: watch.Added, e: e})
		}
		if initial {
			w.initialEventsEnd(c.rv)
		}
	} else {
		i, _ := slices.BinarySearchFunc(c.events, from, func(ev event, rv uint64) int { return cmp.Compare(ev.rv, rv+1) })
		for _, ev := range c.events[i:] {
			w.send(ev)
		}
	}
	c.watchers[w] = struct{}{}
	return nil
}

func (c *cache) unwatch(w *watcher) {
	c.mu.Lock()
	delete(c.watchers, w)
	c.mu.Unlock()
}

func (c *cache) stopWatchers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		w.close()
		delete(c.watchers, w)
	}
}
