package grpcapi

import (
	"container/list"
	"sync"
)

// objectCache keeps the objects and CSV of the bundles answered lately,
// as JSON, within a budget of bytes, least recently used out first.
// Making them is most of a bundle's answer (a YAML object converted to
// JSON, a CSV made from olm.csv.metadata), where opm serve makes them once
// when it builds its cache; clients ask the same bundles (channel heads)
// again and again. Entries are keyed by index file, so a swap is never
// answered from an older version's entry; those age out.
type objectCache struct {
	mu     sync.Mutex
	budget int
	used   int
	order  *list.List // of *objectEntry, most recent first
	byKey  map[objectKey]*list.Element
}

type objectKey struct{ file, pkg, bundle string }

type objectEntry struct {
	key     objectKey
	objects []string
	csv     string
	size    int
}

func newObjectCache(budget int) *objectCache {
	return &objectCache{budget: budget, order: list.New(), byKey: map[objectKey]*list.Element{}}
}

// get returns the objects and CSV kept for k.
func (c *objectCache) get(k objectKey) ([]string, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil, "", false
	}
	c.order.MoveToFront(el)
	e := el.Value.(*objectEntry)
	return e.objects, e.csv, true
}

// put keeps the objects and CSV of k, unless they alone exceed the budget.
// The strings are shared with the caller's answers; nothing changes them.
func (c *objectCache) put(k objectKey, objects []string, csv string) {
	size := len(csv) + len(k.file) + len(k.pkg) + len(k.bundle)
	for _, o := range objects {
		size += len(o)
	}
	if size > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.order.PushFront(&objectEntry{key: k, objects: objects, csv: csv, size: size})
	c.used += size
	for c.used > c.budget {
		last := c.order.Back()
		e := last.Value.(*objectEntry)
		c.order.Remove(last)
		delete(c.byKey, e.key)
		c.used -= e.size
	}
}
