package query

import (
	"container/list"
	"sync"
	"unsafe"
)

// resolveCacheBytes bounds what one open index file keeps of the packages
// resolution has parsed. Without a bound it grows to the whole catalog: on
// the 8,000-bundle bench catalog, 6.4 MiB by resolveSize's estimate, 7.3
// MiB of heap, 18 MiB of RSS. A fixed budget, not a share of the memory
// plan, because the index files open at once are few (one per catalog, two
// during a swap) and the packages one resolver keeps asking about are few:
// 4 MiB holds the widest bench package (509 bundles, 429 KiB) nine times
// over, or about 190 packages of the bench catalog's average size, and a
// package read again costs a few milliseconds.
const resolveCacheBytes = 4 << 20

// resolveCache keeps parsed packages for resolution within a byte budget,
// evicting the least recently used. Sizes are estimates of the memory a
// package's bundles hold, not exact. A package larger than the whole
// budget is not kept.
type resolveCache struct {
	mu     sync.Mutex
	budget int
	used   int
	lru    list.List // of *resolveCached, most recently used first
	byPkg  map[string]*list.Element
}

type resolveCached struct {
	pkg    string
	parsed resolvePackage
	size   int
}

// get returns a kept package, marking it recently used.
func (rc *resolveCache) get(pkg string) (resolvePackage, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.byPkg[pkg]
	if !ok {
		return resolvePackage{}, false
	}
	rc.lru.MoveToFront(e)
	return e.Value.(*resolveCached).parsed, true
}

// put keeps a parsed package, evicting the least recently used packages
// until the budget holds it. Of two callers that parsed the same package
// at once, the first kept wins.
func (rc *resolveCache) put(pkg string, parsed resolvePackage) {
	size := resolveSize(pkg, parsed)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, ok := rc.byPkg[pkg]; ok || size > rc.budget {
		return
	}
	for rc.used+size > rc.budget {
		oldest := rc.lru.Back()
		old := oldest.Value.(*resolveCached)
		rc.lru.Remove(oldest)
		delete(rc.byPkg, old.pkg)
		rc.used -= old.size
	}
	if rc.byPkg == nil {
		rc.byPkg = map[string]*list.Element{}
	}
	rc.byPkg[pkg] = rc.lru.PushFront(&resolveCached{pkg: pkg, parsed: parsed, size: size})
	rc.used += size
}

// resolveSize estimates the memory a parsed package holds: its structs,
// strings and parsed versions.
func resolveSize(pkg string, parsed resolvePackage) int {
	const (
		bundleSize  = int(unsafe.Sizeof(resolveBundle{}))
		entrySize   = int(unsafe.Sizeof(resolveEntry{}))
		stringSize  = int(unsafe.Sizeof(""))
		versionSize = 160 // a Masterminds version and its original text
		cachedSize  = 128 // the list element, map entry and resolveCached
	)
	bundles := parsed.bundles
	n := cachedSize + len(pkg) + cap(bundles)*bundleSize + cap(parsed.releaseOrder)*int(unsafe.Sizeof(0))
	for _, b := range bundles {
		n += len(b.name) + len(b.version) + len(b.release) + len(b.image) + len(b.deprecation)
		for _, ch := range b.channels {
			n += stringSize + len(ch)
		}
		for _, vr := range []versionRelease{b.vr, b.vrRelease} {
			n += len(vr.version.Pre)*int(unsafe.Sizeof(vr.version.Pre[0])) + len(vr.release)*int(unsafe.Sizeof(vr.release[0]))
		}
		if b.mm != nil {
			n += versionSize
		}
		for _, e := range b.entries {
			n += entrySize + len(e.channel) + len(e.replaces)
			for _, s := range e.skips {
				n += stringSize + len(s)
			}
		}
	}
	return n
}
