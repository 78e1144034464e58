// Package catalogs owns the list of catalogs a server knows about and what is
// known of each beyond its index: where it comes from, its priority, whether
// its owner switched it off, and why its last rebuild failed. The controller
// and `catalogd serve` write it; the query API reads it.
package catalogs

import (
	"sort"
	"sync"
)

// State says whether a catalog answers queries.
type State string

const (
	// Pending: known, not indexed yet.
	Pending State = "Pending"
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
	State    State
	// LastError says why the last rebuild failed; empty after a success.
	LastError string
}

// Registry is a concurrency-safe set of catalogs.
type Registry struct {
	mu       sync.RWMutex
	catalogs map[string]Catalog
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{catalogs: map[string]Catalog{}} }

// Put adds or replaces a catalog.
func (r *Registry) Put(c Catalog) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.catalogs[c.Name] = c
}

// Update changes a known catalog in place; it reports false for an unknown one.
func (r *Registry) Update(name string, change func(*Catalog)) bool {
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
func (r *Registry) Delete(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.catalogs, name)
}

// Get returns one catalog.
func (r *Registry) Get(name string) (Catalog, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.catalogs[name]
	return c, ok
}

// List returns every catalog, higher priority first, then by name: the order
// in which answers from several catalogs are given.
func (r *Registry) List() []Catalog {
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
