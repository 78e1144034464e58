package catalogdir

import (
	"crypto/sha256"
	"io/fs"
	"sync"
	"time"
)

// Cache remembers the hash of each file Read hashed in one catalog
// directory, so that the next Read of the same directory hashes only the
// files that changed: every save under --watch makes a Read, and hashing a
// catalog of a GB anew for each would cost seconds where a walk of stat
// calls costs milliseconds. Whoever reads one directory repeatedly owns a
// Cache and passes it to every Read; it holds the files of the last Read
// only, so it stays the size of the directory. A Cache is safe for
// concurrent use; Reads of another directory through it start it afresh.
//
// A file's hash is reused only when its size, modification time, inode,
// device and status change time (ctime, nanoseconds) are all what they were
// when it was hashed. An edit that keeps the size and puts the
// modification time back (touch -d, tar, rsync -t) still moves the ctime,
// which no user can set. A file whose times were within racyWindow of the
// Read that hashed it is hashed again next time: a filesystem stamps times
// from a clock that ticks in steps (milliseconds on Linux), so an edit in
// the same step as an earlier one leaves every field alike; once the file
// is older than the step, any edit moves its ctime.
type Cache struct {
	mu    sync.Mutex
	root  string
	files map[string]cachedFile
	// racyWindow is how recent a file's times may be for its hash to be
	// kept; a field so that tests can make it short.
	racyWindow time.Duration
}

// defaultRacyWindow is far more than the step of any local filesystem's
// clock, and covers a network filesystem's clock running a little ahead;
// it costs one more hash of a file edited within it, and only that.
const defaultRacyWindow = time.Second

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{racyWindow: defaultRacyWindow}
}

// cachedFile is a file's identity when it was hashed, and its hash.
type cachedFile struct {
	sig fileSig
	sum [sha256.Size]byte
}

// fileSig is what tells that a file is unchanged without reading it.
type fileSig struct {
	size, mtime, ctime int64 // times in nanoseconds since the epoch
	ino, dev           uint64
}

// recent reports whether a time of sig is within window of start (or
// after it): the file may yet change without its times moving.
func (s fileSig) recent(start time.Time, window time.Duration) bool {
	limit := start.Add(-window).UnixNano()
	return s.mtime >= limit || s.ctime >= limit
}

// readCache is one Read's use of a Cache: the hashes the last Read left to
// look up, and the ones this Read keeps for the next.
type readCache struct {
	c     *Cache
	start time.Time
	prev  map[string]cachedFile
	next  map[string]cachedFile
}

// begin starts a Read of root through c; nil when c is nil.
func (c *Cache) begin(root string, start time.Time) *readCache {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.files
	if c.root != root {
		prev = nil
	}
	return &readCache{c: c, start: start, prev: prev, next: map[string]cachedFile{}}
}

// lookup returns the hash of the file at rel if fi, its stat now, says it
// is unchanged since it was hashed.
func (r *readCache) lookup(rel string, fi fs.FileInfo) ([sha256.Size]byte, bool) {
	if r == nil {
		return [sha256.Size]byte{}, false
	}
	sig, ok := statSig(fi)
	if !ok {
		return [sha256.Size]byte{}, false
	}
	cf, ok := r.prev[rel]
	if !ok || cf.sig != sig {
		return [sha256.Size]byte{}, false
	}
	r.next[rel] = cf
	return cf.sum, true
}

// store keeps the hash of the file at rel, whose stat before it was read
// is fi, unless its times are too recent to tell a later edit by.
func (r *readCache) store(rel string, fi fs.FileInfo, sum [sha256.Size]byte) {
	if r == nil {
		return
	}
	sig, ok := statSig(fi)
	if !ok || sig.recent(r.start, r.c.racyWindow) {
		return
	}
	r.next[rel] = cachedFile{sig: sig, sum: sum}
}

// commit makes this Read's hashes the cache's: files gone from the
// directory leave it. A Read that failed does not commit, and the next
// starts from the last complete one.
func (r *readCache) commit(root string) {
	if r == nil {
		return
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.c.root, r.c.files = root, r.next
}
