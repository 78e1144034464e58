package catalogdir

import (
	"crypto/sha256"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"sync"
)

// snapshot is a catalog directory as Read's walk saw it, and what an
// index build then read of it: FS serves the walk's listings, so the build
// reads exactly the entries the digest covers, and records the hash of
// every file the build reads, so that readDigest can tell the digest of
// what the build read (see Read).
type snapshot struct {
	// listings holds, by slash-separated path ("." for the root), the
	// directories and files FS lists in each directory, in name order.
	listings map[string][]fs.DirEntry
	// entries are the digest's records, sorted by rel; at finds one by rel.
	entries []entry
	at      map[string]int

	mu    sync.Mutex
	opens int
	// reads holds, by path, the record of the last open of each file read
	// through FS: kind 'u' until it is closed.
	reads map[string]read
}

// read is the record of one open of a file; seq orders the opens.
type read struct {
	seq   int
	entry entry
}

// list adds d, at rel, to the listing of its directory.
func (s *snapshot) list(rel string, d fs.DirEntry) {
	parent := path.Dir(rel)
	s.listings[parent] = append(s.listings[parent], d)
}

// readDir returns the walk's listing of the directory name.
func (s *snapshot) readDir(name string) ([]fs.DirEntry, error) {
	entries, ok := s.listings[name]
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return slices.Clone(entries), nil
}

// track returns f, the regular file name opened through FS, as a file that
// hashes what is read from it and records that when closed.
func (s *snapshot) track(f *os.File, name string) fs.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opens++
	s.reads[name] = read{seq: s.opens, entry: entry{rel: name, kind: 'u'}}
	t := &trackedFile{f: &file{File: f, name: name}, snap: s, seq: s.opens, h: sha256.New(), walkSize: -1}
	if i, ok := s.at[name]; ok && s.entries[i].kind == 'f' {
		t.walkSize = s.entries[i].size
	}
	return t
}

// closed records the last open of a file, unless a later open replaced it.
func (s *snapshot) closed(seq int, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reads[e.rel].seq == seq {
		s.reads[e.rel] = read{seq: seq, entry: e}
	}
}

// readDigest is the digest of the directory with every file read through
// FS as it was read, and everything else as the walk saw it.
func (s *snapshot) readDigest() string {
	s.mu.Lock()
	entries := slices.Clone(s.entries)
	added := false
	for rel, r := range s.reads {
		if i, ok := s.at[rel]; ok {
			entries[i] = r.entry
		} else {
			entries = append(entries, r.entry)
			added = true
		}
	}
	s.mu.Unlock()
	if added {
		sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	}
	return digestEntries(entries)
}

// trackedFile is a regular file opened through a Read FS. It has no
// methods but fs.File's, so that every byte read passes through Read and
// is hashed (an *os.File's WriteTo or ReadAt would bypass it).
type trackedFile struct {
	f    *file
	snap *snapshot
	seq  int
	h    hash.Hash
	// n is the bytes hashed; eof says they are the whole file, failed that
	// a read failed, so the hash is not the file's.
	n           int64
	eof, failed bool
	// walkSize is the file's size at the walk, -1 if it had no such file.
	walkSize int64
	closed   bool
}

func (t *trackedFile) Read(p []byte) (int, error) {
	n, err := t.f.Read(p)
	t.h.Write(p[:n])
	t.n += int64(n)
	switch {
	case err == io.EOF:
		t.eof = true
	case err != nil:
		t.failed = true
	}
	return n, err
}

func (t *trackedFile) Stat() (fs.FileInfo, error) { return t.f.Stat() }

// Close records the file's hash. A reader may stop before the end (a
// parser that failed, or was cancelled); the rest is hashed first, up to
// the size the walk saw: the digest counts whole files, and such a file is
// typically the one that decides whether the content is bad.
func (t *trackedFile) Close() error {
	if t.closed {
		return t.f.Close()
	}
	t.closed = true
	if !t.eof && !t.failed && t.n <= t.walkSize {
		rest := t.walkSize - t.n + 1
		m, err := io.Copy(t.h, io.LimitReader(t.f, rest))
		t.n += m
		t.eof = err == nil && m < rest
		t.failed = err != nil
	}
	e := entry{rel: t.f.name, kind: 'u'}
	if t.eof && !t.failed {
		e = entry{rel: t.f.name, kind: 'f', size: t.n}
		t.h.Sum(e.sum[:0])
	}
	t.snap.closed(t.seq, e)
	return t.f.Close()
}

// fileHash returns the hash of the regular file name (a link to one counts
// as that file) as the build last read it through FS to its end, or, for a
// file it has not read, the walk's hash, the one the digest holds. An
// incremental build plans with the walk's hashes and records, for each
// file it parses, the hash of the bytes it read: a file edited after the
// walk must not be recorded with the walk's hash, or reverting the edit
// would look like no change and leave the edit served.
func (s *snapshot) fileHash(name string) ([sha256.Size]byte, bool) {
	s.mu.Lock()
	r, read := s.reads[name]
	s.mu.Unlock()
	if read {
		return r.entry.sum, r.entry.kind == 'f'
	}
	i, ok := s.at[name]
	if !ok || s.entries[i].kind != 'f' {
		return [sha256.Size]byte{}, false
	}
	return s.entries[i].sum, true
}
