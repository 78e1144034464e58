// Package source owns turning a catalog directory into an index.Source and
// watching it for changes.
//
// The digest Dir computes is what lets the index skip a rebuild when nothing
// changed and, the other way round, what makes every edit reach the index: it
// must change whenever anything the index reads changes, and stay the same
// otherwise. Everything below is chosen for that.
package source

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/index"
)

// Dir is DirContext without cancellation or logging.
func Dir(path string) (index.Source, error) {
	return DirContext(context.Background(), path)
}

// DirContext returns the catalog in the directory at path as an
// index.Source: its files (FS), its absolute path as Ref, and a digest of
// its content. It stops early when ctx ends, and logs what it skips through
// the logr.Logger in ctx, if any.
//
// The digest is "sha256:" + hex of SHA-256 over every regular file under
// path, in lexical order of their slash-separated relative paths, each as
// relative path, NUL, 'f', size (8 bytes big-endian), content. Files that a
// .indexignore excludes are included, and so is every .indexignore: the index
// reads through the same ignore rules, so hashing more than it reads can
// only cost a rebuild that was not needed (say, after an edit of an ignored
// README), while reimplementing the rules here and getting them slightly
// wrong would let a real change go unnoticed.
//
// Symbolic links are handled as the index reads them. A link to a regular
// file inside path counts as that file under the link's name. A link to a
// directory inside path is not descended into (fs.WalkDir does not either),
// nor is a dangling link (editors such as Emacs leave them as lock files
// while editing); both count as relative path, NUL, 'l', length, link text,
// so re-pointing them changes the digest. A link that resolves outside path
// is an error: the index would read content the digest cannot vouch for.
//
// Named pipes, sockets and devices hold no catalog content and FS hides
// them; they are never opened (opening a pipe would block), but their names
// are hashed, so their appearing counts as a change. Names that are not
// valid UTF-8 cannot be read through an fs.FS at all; they are skipped, with
// everything below them, and logged, rather than failing the catalog.
//
// A tree of more entries than index.DefaultFiles is refused with the
// index's own error (index.Limits.CheckFiles), as soon as the walk passes
// the limit: the index would refuse it anyway, and walking on would hold
// every path of a tree of any size.
//
// Error messages name content by its path relative to the catalog directory
// and never include the directory's own path, which is the server's: callers
// that want it there add it.
func DirContext(ctx context.Context, path string) (index.Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return index.Source{}, fmt.Errorf("read catalog directory: %w", rootErr(err))
	}
	// Links are checked against the real location of the root, so that a
	// root reached through a link (as /tmp is on some systems) still works.
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return index.Source{}, fmt.Errorf("read catalog directory: %w", rootErr(err))
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return index.Source{}, fmt.Errorf("read catalog directory: %w", rootErr(err))
	}
	if !fi.IsDir() {
		return index.Source{}, errors.New("read catalog directory: not a directory")
	}
	log := logr.FromContextOrDiscard(ctx)
	// The index reads with the default limits too (Source.Limits is zero).
	digest, err := digestDir(ctx, log, resolved, index.Limits{})
	if err != nil {
		return index.Source{}, fmt.Errorf("digest catalog directory: %w", err)
	}
	return index.Source{FS: FS(abs), Ref: abs, Digest: digest}, nil
}

// rootErr drops the path from an error about the catalog directory itself.
func rootErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// entry is one thing the digest covers.
type entry struct {
	rel  string // slash-separated, relative to the root
	kind byte   // 'f': regular file at abs; 'l': unfollowed link with text link
	abs  string
	link string
}

// digestDir hashes the tree under root, which must be a real (link-free)
// absolute path. It fails as soon as the tree holds more entries than
// limits allow, before it has listed them all (see readDir).
func digestDir(ctx context.Context, log logr.Logger, root string, limits index.Limits) (string, error) {
	var entries []entry
	seen := 0
	var walk func(dir, relDir string) error
	walk = func(dir, relDir string) error {
		list, err := readDir(dir, &seen, limits)
		if err != nil {
			return relPathErr(cmp.Or(relDir, "."), err)
		}
		for _, d := range list {
			if err := ctx.Err(); err != nil {
				return err
			}
			p, rel := filepath.Join(dir, d.Name()), path.Join(relDir, d.Name())
			var err error
			if !utf8.ValidString(d.Name()) {
				log.Info("skipping a catalog file whose name is not valid UTF-8", "path", strconv.Quote(rel))
				continue
			}
			switch t := d.Type(); {
			case t.IsDir():
				err = walk(p, rel)
			case t.IsRegular():
				entries = append(entries, entry{rel: rel, kind: 'f', abs: p})
			case t&fs.ModeSymlink != 0:
				var e entry
				if e, err = linkEntry(root, p, rel); err == nil {
					entries = append(entries, e)
				}
			default:
				// Sockets, pipes and devices hold no catalog content; their names
				// are hashed so that their appearing still counts as a change.
				log.V(1).Info("skipping a catalog entry that is not a file, directory or link", "path", rel, "type", t.String())
				entries = append(entries, entry{rel: rel, kind: 'o'})
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return "", err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })

	h := sha256.New()
	for _, e := range entries {
		if err := writeEntry(h, e); err != nil {
			return "", err
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// readDirBatch is how many entries readDir reads at a time.
const readDirBatch = 1024

// readDir lists the directory at dir, sorted by name, as os.ReadDir does,
// but a batch at a time, adding each batch to *seen and checking it
// against limits: a directory of millions of entries fails at the limit
// rather than after its whole listing is held in memory.
func readDir(dir string, seen *int, limits index.Limits) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var list []fs.DirEntry
	for {
		batch, err := f.ReadDir(readDirBatch)
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

// linkEntry decides how the link at p counts (see Dir).
func linkEntry(root, p, rel string) (entry, error) {
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
		return entry{rel: rel, kind: 'f', abs: target}, nil
	}
	return entry{rel: rel, kind: 'l', link: text}, nil
}

func inside(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// writeEntry adds one entry to h. Relative paths cannot hold NUL, and every
// variable-length part after it is length-prefixed, so no two different
// trees hash the same bytes.
func writeEntry(h hash.Hash, e entry) error {
	var size [8]byte
	h.Write([]byte(e.rel))
	h.Write([]byte{0, e.kind})
	switch e.kind {
	case 'f':
		f, err := openNonBlocking(e.abs)
		if err != nil {
			return fmt.Errorf("read %s: %w", e.rel, rootErr(err))
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("read %s: %w", e.rel, rootErr(err))
		}
		if !fi.Mode().IsRegular() {
			// Replaced since the walk; the caller will see the change.
			return fmt.Errorf("read %s: no longer a regular file", e.rel)
		}
		binary.BigEndian.PutUint64(size[:], uint64(fi.Size()))
		h.Write(size[:])
		n, err := io.Copy(h, f)
		if err != nil {
			return fmt.Errorf("read %s: %w", e.rel, rootErr(err))
		}
		if n != fi.Size() {
			// Written to while being read: the caller will see another
			// change event and read it again once the writer is done.
			return fmt.Errorf("read %s: file changed while being read (%d bytes, then %d)", e.rel, fi.Size(), n)
		}
	case 'l':
		binary.BigEndian.PutUint64(size[:], uint64(len(e.link)))
		h.Write(size[:])
		h.Write([]byte(e.link))
	}
	return nil
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
