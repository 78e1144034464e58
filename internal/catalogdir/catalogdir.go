// Package catalogdir owns turning a catalog directory into an index.Content and
// watching it for changes.
//
// The digest Read computes is what lets the index skip a rebuild when nothing
// changed and, the other way round, what makes every edit reach the index: it
// must change whenever anything the index reads changes, and stay the same
// otherwise; and an index must record the digest of what it read, which an
// edit during the build makes differ from the digest taken before it.
// Everything below is chosen for that.
package catalogdir

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/internal/index"
)

// Read returns the catalog in the directory at path as an
// index.Content: its files (FS), its absolute path as Ref, a digest of its
// content (Digest), and ReadDigest, the digest of what an index build read
// through FS. It stops early when ctx ends, and logs what it skips through
// the logr.Logger in ctx, if any.
//
// The digest is "sha256:" + hex of SHA-256 over one record per entry under
// path, in lexical order of their slash-separated relative paths. A record
// is the relative path, NUL, a kind byte, and then:
//
//   - 'f', a regular file: its size (8 bytes big-endian) and the SHA-256 of
//     its content (32 bytes);
//   - 'l', a link that is not followed: the length of the link text (8
//     bytes big-endian) and the text;
//   - 'o', anything else: nothing more.
//
// Relative paths cannot hold NUL, and what follows the kind byte has a
// fixed or a prefixed length, so no two different trees hash the same
// bytes. Each file is hashed on its own so that ReadDigest can put the
// digest together from the hashes of the files a build read.
//
// Files that a .indexignore excludes are included, and so is every
// .indexignore: the index reads through the same ignore rules, so hashing
// more than it reads can only cost a rebuild that was not needed (say,
// after an edit of an ignored README), while reimplementing the rules here
// and getting them slightly wrong would let a real change go unnoticed.
//
// Symbolic links are handled as the index reads them. A link to a regular
// file inside path counts as that file under the link's name. A link to a
// directory inside path is not descended into (fs.WalkDir does not either),
// nor is a dangling link (editors such as Emacs leave them as lock files
// while editing); both count as 'l' records, so re-pointing them changes
// the digest. A link that resolves outside path is an error: the index
// would read content the digest cannot vouch for.
//
// Named pipes, sockets and devices hold no catalog content and FS hides
// them; they are never opened (opening a pipe would block), but their names
// are hashed, so their appearing counts as a change. Names that are not
// valid UTF-8 cannot be read through an fs.FS at all; they are skipped, with
// everything below them, and logged, rather than failing the catalog.
//
// Digest is computed before the index reads the files, and a file may be
// edited in between. So FS lists the directory as the digest's walk saw
// it, and hashes each file as the build reads it (while reading: nothing is
// read twice); ReadDigest puts those hashes together with the walk's
// records of what the build did not open (ignored files, links, pipes).
// An index therefore records the digest of the content it holds: when a
// file changed between walk and read, that is not Digest, and a later
// Read of the then settled directory computes exactly what the index
// recorded, so the edit costs one build and never leaves an index that
// claims content it does not hold. A file the build opens but does not
// read to its end is hashed on to its end when closed, up to the size the
// walk saw; one that turns out longer, cannot be read, or is still open
// counts as a record of kind 'u', which no walk produces, so that the digest
// matches no directory and the next sync builds again.
//
// A tree of more entries than fbc.DefaultFiles is refused with the
// index's own error (fbc.Limits.CheckFiles), as soon as the walk passes
// the limit: the index would refuse it anyway, and walking on would hold
// every path of a tree of any size.
//
// cache, when not nil, holds the hashes of an earlier Read of the same
// directory: a file whose stat says it did not change since is not read
// again (see Cache). The content's FileHash gives the walk's hash of each
// file, so that an index build can tell unchanged files without reading
// them.
//
// Error messages name content by its path relative to the catalog directory
// and never include the directory's own path, which is the server's: callers
// that want it there add it.
func Read(ctx context.Context, path string, cache *Cache) (index.Content, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return index.Content{}, fmt.Errorf("read catalog directory: %w", rootErr(err))
	}
	// Links are checked against the real location of the root, so that a
	// root reached through a link (as /tmp is on some systems) still works.
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return index.Content{}, fmt.Errorf("read catalog directory: %w", rootErr(err))
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return index.Content{}, fmt.Errorf("read catalog directory: %w", rootErr(err))
	}
	if !fi.IsDir() {
		return index.Content{}, errors.New("read catalog directory: not a directory")
	}
	log := logr.FromContextOrDiscard(ctx)
	// The index reads with the default limits too (the Content's Limits are zero).
	rc := cache.begin(resolved, time.Now())
	snap, err := walkDir(ctx, log, resolved, fbc.Limits{}, rc)
	if err != nil {
		return index.Content{}, fmt.Errorf("digest catalog directory: %w", err)
	}
	rc.commit(resolved)
	return index.Content{
		FS:         &catalogFS{dir: abs, real: resolved, snap: snap},
		Ref:        abs,
		Digest:     digestEntries(snap.entries),
		ReadDigest: snap.readDigest,
		FileHash:   snap.fileHash,
	}, nil
}

// rootErr drops the path from an error about the catalog directory itself.
func rootErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// entry is one record of the digest (see Read).
type entry struct {
	rel  string // slash-separated, relative to the root
	kind byte   // 'f', 'l', 'o' or 'u'
	size int64  // 'f': of the content
	sum  [sha256.Size]byte
	link string // 'l': the link text
}

// walkDir walks the tree under root, which must be a real (link-free)
// absolute path, hashing every file in it that rc does not know unchanged.
// It fails as soon as the tree holds more entries than limits allow,
// before it has listed them all (see listDir).
func walkDir(ctx context.Context, log logr.Logger, root string, limits fbc.Limits, rc *readCache) (*snapshot, error) {
	snap := &snapshot{listings: map[string][]fs.DirEntry{".": {}}, reads: map[string]read{}}
	seen := 0
	buf := make([]byte, hashBufferBytes)
	var walk func(dir, relDir string) error
	walk = func(dir, relDir string) error {
		list, err := listDir(dir, &seen, limits)
		if err != nil {
			return relPathErr(cmp.Or(relDir, "."), err)
		}
		for _, d := range list {
			if err := ctx.Err(); err != nil {
				return err
			}
			p, rel := filepath.Join(dir, d.Name()), path.Join(relDir, d.Name())
			if !utf8.ValidString(d.Name()) {
				log.Info("skipping a catalog file whose name is not valid UTF-8", "path", strconv.Quote(rel))
				continue
			}
			var e entry
			switch t := d.Type(); {
			case t.IsDir():
				snap.listings[rel] = []fs.DirEntry{}
				snap.list(rel, d)
				if err := walk(p, rel); err != nil {
					return err
				}
				continue
			case t.IsRegular():
				e, err = fileEntry(rel, p, rc, buf)
			case t&fs.ModeSymlink != 0:
				e, err = linkEntry(root, p, rel, rc, buf)
			default:
				// Sockets, pipes and devices hold no catalog content; their names
				// are hashed so that their appearing still counts as a change.
				log.V(1).Info("skipping a catalog entry that is not a file, directory or link", "path", rel, "type", t.String())
				e = entry{rel: rel, kind: 'o'}
			}
			if err != nil {
				return err
			}
			if e.kind == 'f' {
				snap.list(rel, d)
			}
			snap.entries = append(snap.entries, e)
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return nil, err
	}
	sort.Slice(snap.entries, func(i, j int) bool { return snap.entries[i].rel < snap.entries[j].rel })
	snap.at = make(map[string]int, len(snap.entries))
	for i, e := range snap.entries {
		snap.at[e.rel] = i
	}
	return snap, nil
}

// listDirBatch is how many entries listDir reads at a time.
const listDirBatch = 1024

// listDir lists the directory at dir, sorted by name, as os.ReadDir does,
// but a batch at a time, adding each batch to *seen and checking it
// against limits: a directory of millions of entries fails at the limit
// rather than after its whole listing is held in memory.
func listDir(dir string, seen *int, limits fbc.Limits) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var list []fs.DirEntry
	for {
		batch, err := f.ReadDir(listDirBatch)
		list = append(list, batch...)
		*seen += len(batch)
		if err := limits.CheckFiles(*seen); err != nil {
			return nil, err
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return list, nil
}

// hashBufferBytes is the size of the one buffer a walk hashes every file
// through. A buffer per file (io.Copy's) made hashing the bench catalog's
// 300 files 10 MB of garbage, which a server that has just given its
// build's memory back grew its heap again by when it checked the
// directory once more after the build.
const hashBufferBytes = 32 << 10

// fileEntry hashes the regular file at abs, reading it through buf, unless
// rc knows its hash.
func fileEntry(rel, abs string, rc *readCache, buf []byte) (entry, error) {
	if rc != nil {
		if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
			if sum, ok := rc.lookup(rel, fi); ok {
				return entry{rel: rel, kind: 'f', size: fi.Size(), sum: sum}, nil
			}
		}
	}
	f, err := openNonBlocking(abs)
	if err != nil {
		return entry{}, fmt.Errorf("read %s: %w", rel, rootErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return entry{}, fmt.Errorf("read %s: %w", rel, rootErr(err))
	}
	if !fi.Mode().IsRegular() {
		// Replaced since it was listed; the caller will see the change.
		return entry{}, fmt.Errorf("read %s: no longer a regular file", rel)
	}
	h := sha256.New()
	// Only the reader: an *os.File's WriteTo would copy through a buffer
	// of its own.
	n, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf)
	if err != nil {
		return entry{}, fmt.Errorf("read %s: %w", rel, rootErr(err))
	}
	if n != fi.Size() {
		// Written to while being read: the caller will see another
		// change event and read it again once the writer is done.
		return entry{}, fmt.Errorf("read %s: file changed while being read (%d bytes, then %d)", rel, fi.Size(), n)
	}
	e := entry{rel: rel, kind: 'f', size: n}
	h.Sum(e.sum[:0])
	// The stat taken before reading: an edit during the read moves the
	// ctime past it, so the next Read hashes the file again.
	rc.store(rel, fi, e.sum)
	return e, nil
}

// linkEntry decides how the link at p counts (see Dir).
func linkEntry(root, p, rel string, rc *readCache, buf []byte) (entry, error) {
	text, err := os.Readlink(p)
	if err != nil {
		return entry{}, relPathErr(rel, err)
	}
	target, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return entry{rel: rel, kind: 'l', link: text}, nil
	}
	if err != nil {
		return entry{}, fmt.Errorf("resolve link %s: %w", rel, relPathErr(rel, err))
	}
	if !inside(root, target) {
		return entry{}, fmt.Errorf("link %s points outside the catalog directory", rel)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return entry{}, fmt.Errorf("resolve link %s: %w", rel, relPathErr(rel, err))
	}
	if fi.Mode().IsRegular() {
		return fileEntry(rel, target, rc, buf)
	}
	return entry{rel: rel, kind: 'l', link: text}, nil
}

func inside(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// digestEntries is the digest of entries, sorted by rel (see Read).
func digestEntries(entries []entry) string {
	h := sha256.New()
	var size [8]byte
	for _, e := range entries {
		h.Write([]byte(e.rel))
		h.Write([]byte{0, e.kind})
		switch e.kind {
		case 'f':
			binary.BigEndian.PutUint64(size[:], uint64(e.size))
			h.Write(size[:])
			h.Write(e.sum[:])
		case 'l':
			binary.BigEndian.PutUint64(size[:], uint64(len(e.link)))
			h.Write(size[:])
			h.Write([]byte(e.link))
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// relPathErr replaces the absolute path in a *fs.PathError with rel.
func relPathErr(rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: rel, Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s %s: %w", le.Op, rel, le.Err)
	}
	return err
}
