// Package source owns turning a catalog directory into an index.Source and
// watching it for changes.
//
// The digest Dir computes is what lets the index skip a rebuild when nothing
// changed and, the other way round, what makes every edit reach the index: it
// must change whenever anything the index reads changes, and stay the same
// otherwise. Everything below is chosen for that.
package source

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/catalogd/catalogd/internal/index"
)

// Dir returns the catalog in the directory at path as an index.Source: its
// files (os.DirFS), its absolute path as Ref, and a digest of its content.
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
func Dir(path string) (index.Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return index.Source{}, fmt.Errorf("read catalog directory %s: %w", path, err)
	}
	// Links are checked against the real location of the root, so that a
	// root reached through a link (as /tmp is on some systems) still works.
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return index.Source{}, fmt.Errorf("read catalog directory %s: %w", path, err)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return index.Source{}, fmt.Errorf("read catalog directory %s: %w", path, err)
	}
	if !fi.IsDir() {
		return index.Source{}, fmt.Errorf("read catalog directory %s: not a directory", path)
	}
	digest, err := digestDir(resolved)
	if err != nil {
		return index.Source{}, fmt.Errorf("digest catalog directory %s: %w", path, err)
	}
	return index.Source{FS: os.DirFS(abs), Ref: abs, Digest: digest}, nil
}

// entry is one thing the digest covers.
type entry struct {
	rel  string // slash-separated, relative to the root
	kind byte   // 'f': regular file at abs; 'l': unfollowed link with text link
	abs  string
	link string
}

// digestDir hashes the tree under root, which must be a real (link-free)
// absolute path.
func digestDir(root string) (string, error) {
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t.IsRegular():
			entries = append(entries, entry{rel: rel, kind: 'f', abs: p})
			return nil
		case t&fs.ModeSymlink != 0:
			e, err := linkEntry(root, p, rel)
			if err != nil {
				return err
			}
			entries = append(entries, e)
			return nil
		default:
			// Sockets, pipes and devices hold no catalog content; their names
			// are hashed so that their appearing still counts as a change.
			entries = append(entries, entry{rel: rel, kind: 'o'})
			return nil
		}
	})
	if err != nil {
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

// linkEntry decides how the link at p counts (see Dir).
func linkEntry(root, p, rel string) (entry, error) {
	text, err := os.Readlink(p)
	if err != nil {
		return entry{}, err
	}
	target, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return entry{rel: rel, kind: 'l', link: text}, nil
	}
	if err != nil {
		return entry{}, fmt.Errorf("resolve link %s: %w", rel, err)
	}
	if !inside(root, target) {
		return entry{}, fmt.Errorf("link %s points outside the catalog directory (to %s)", rel, target)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return entry{}, fmt.Errorf("resolve link %s: %w", rel, err)
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
		f, err := os.Open(e.abs)
		if err != nil {
			return fmt.Errorf("read %s: %w", e.rel, err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("read %s: %w", e.rel, err)
		}
		binary.BigEndian.PutUint64(size[:], uint64(fi.Size()))
		h.Write(size[:])
		n, err := io.Copy(h, f)
		if err != nil {
			return fmt.Errorf("read %s: %w", e.rel, err)
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
