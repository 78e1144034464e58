// Package catalogs owns the in-memory table of the catalogs a server knows
// about and what is known of each beyond its index: where it comes from, its
// priority and labels, whether its owner switched it off, and why its last
// rebuild failed and whether retrying can help. The catalog-sync service (internal/catalogsync) is its one writer;
// the HTTP API and the readiness check read it.
//
// Whether a catalog is Serving is not kept here: the store's live index is
// the one source of truth for that, and Catalog.State derives the state from
// it, so the table and the store can never disagree.
package catalogs

import (
	"sort"
	"sync"
)

// State says whether a catalog answers queries; Catalog.State computes it.
type State string

const (
	// Pending: known, not indexed yet; the first build has not run, or it
	// failed in a way a retry may get past (a registry down, a timeout).
	Pending State = "Pending"
	// Failed: not indexed, and the latest attempt failed on the content
	// itself (LastError says how): retrying that content cannot help, so
	// only a change of source (a new digest, an edit under --watch) can
	// make it serve.
	Failed State = "Failed"
	// Serving: indexed and answering (maybe from an older index, see LastError).
	Serving State = "Serving"
	// Unavailable: switched off by its owner.
	Unavailable State = "Unavailable"
)

// Catalog is what is known of one catalog besides its index.
type Catalog struct {
	Name     string
	Source   string
	Priority int32
	// Labels are the catalog's labels, which a resolve request's catalog
	// selector matches; nil when it has none. Read-only once in the table.
	Labels map[string]string
	// Unavailable says the catalog's owner switched it off.
	Unavailable bool
	// LastError says why the last rebuild failed; empty after a success.
	LastError string
	// ContentFailed says LastError is about the content the source holds
	// (an invalid catalog, a directory that is not one, a checksum that
	// does not match), which fails the same way however often it is
	// retried; false when there is no error or a retry may help.
	ContentFailed bool
	// NotPrebuilt says why the index of one content digest was built
	// rather than taken prebuilt from beside the catalog in its registry
	// (none published, none of this schema, a check failed). It is
	// recorded before that build starts, and describes the live index
	// only while the live index is of that digest: a reader never sees
	// one index described by the reason of another's build.
	NotPrebuilt NotPrebuilt
}

// NotPrebuilt is why the index of content Digest was built here.
type NotPrebuilt struct{ Digest, Reason string }

// State is the catalog's state given whether the store has a live index for
// it: a catalog serves iff it has one and its owner has not switched it off.
// Callers pass what they read from the store (an acquired snapshot, say), so
// the state shown matches the index that answers. A content failure makes
// a catalog Failed only while it has nothing to serve: one with a live
// index keeps Serving it, LastError saying that newer content failed.
func (c Catalog) State(indexed bool) State {
	switch {
	case c.Unavailable:
		return Unavailable
	case indexed:
		return Serving
	case c.ContentFailed:
		return Failed
	default:
		return Pending
	}
}

// Table is a concurrency-safe set of catalogs.
type Table struct {
	mu       sync.RWMutex
	catalogs map[string]Catalog
	// loaded is set once the table holds every catalog the server is meant
	// to serve; until then a name it lacks may still be one of them.
	loaded bool
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{catalogs: map[string]Catalog{}} }

// MarkLoaded records that the table now lists every catalog the server is
// meant to serve, so an unknown name is one it does not serve.
func (r *Table) MarkLoaded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaded = true
}

// Loaded reports whether MarkLoaded was called: before that, a name missing
// from the table may be a catalog that is about to be listed (a restart
// that has not read its catalogs yet), and should be answered "not yet",
// not "no such catalog".
func (r *Table) Loaded() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.loaded
}

// Put adds or replaces a catalog.
func (r *Table) Put(c Catalog) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.catalogs[c.Name] = c
}

// Update changes a known catalog in place; it reports false for an unknown one.
func (r *Table) Update(name string, change func(*Catalog)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.catalogs[name]
	if !ok {
		return false
	}
	change(&c)
	r.catalogs[name] = c
	return true
}

// Delete forgets a catalog.
func (r *Table) Delete(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.catalogs, name)
}

// Get returns one catalog.
func (r *Table) Get(name string) (Catalog, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.catalogs[name]
	return c, ok
}

// List returns every catalog, higher priority first, then by name: the order
// in which answers from several catalogs are given.
func (r *Table) List() []Catalog {
	r.mu.RLock()
	out := make([]Catalog, 0, len(r.catalogs))
	for _, c := range r.catalogs {
		out = append(out, c)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return out[i].Name < out[j].Name
	})
	return out
}
