package unpack

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// extractor applies layers, in order, to a destination opened as an os.Root.
// The root guarantees that no write escapes the destination, even through a
// symbolic link planted by an earlier entry; planEntry guarantees that what
// is written is only plain files, directories and links that point inside.
type extractor struct {
	root       *os.Root
	configsDir string
	maxBytes   int64
	maxFiles   int64

	// bytes and files count everything written so far, across layers.
	bytes int64
	files int64
	// seen records that some layer had something at or below configsDir.
	seen bool

	// layer is the index of the layer being applied, for error messages.
	layer int
	// dirs caches paths known to be directories, so that parents are not
	// checked again for every file. It is cleared whenever anything is
	// removed.
	dirs map[string]bool
	// touched holds the paths written by the current layer and all their
	// ancestors. Whiteouts only delete lower-layer content, so anything in
	// touched survives a whiteout of the same layer whatever the entry order.
	touched map[string]bool
}

func newExtractor(root *os.Root, configsDir string, maxBytes, maxFiles int64) *extractor {
	return &extractor{root: root, configsDir: configsDir, maxBytes: maxBytes, maxFiles: maxFiles, dirs: map[string]bool{}}
}

// apply extracts one layer's tar stream. It checks ctx between entries, so a
// cancelled unpack stops at the next entry even if the stream keeps flowing;
// the stream itself (layerStream) checks it within entries.
func (x *extractor) apply(ctx context.Context, layer int, r io.Reader) error {
	x.layer = layer
	x.touched = map[string]bool{}
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &decodeError{err: fmt.Errorf("reading layer %d: %w", layer, err)}
		}
		p, err := planEntry(hdr, x.configsDir)
		if err != nil {
			return x.unsafe(hdr.Name, err.Error())
		}
		if err := x.do(p, hdr, tr); err != nil {
			return err
		}
	}
}

func (x *extractor) unsafe(entry, reason string) error {
	return &UnsafeEntryError{Layer: x.layer, Entry: entry, Reason: reason}
}

func (x *extractor) do(p plan, hdr *tar.Header, body io.Reader) error {
	switch p.act {
	case actSkip:
		return nil
	case actRoot:
		x.seen = true
		return nil
	case actWhiteout:
		x.seen = true
		if p.rel == "." {
			return x.removeLowerChildren(".")
		}
		return x.removeLower(p.rel)
	case actOpaque:
		x.seen = true
		return x.removeLowerChildren(p.rel)
	}

	x.seen = true
	switch p.act {
	case actDir:
		return x.mkdir(p.rel, hdr)
	case actFile:
		return x.writeFile(p.rel, hdr, body)
	case actSymlink:
		if err := x.prepare(p.rel, hdr); err != nil {
			return err
		}
		if err := x.root.Symlink(p.link, p.rel); err != nil {
			return fmt.Errorf("creating symbolic link %s: %w", p.rel, err)
		}
	case actHardlink:
		info, err := x.root.Lstat(p.link)
		if errors.Is(err, fs.ErrNotExist) {
			return x.unsafe(hdr.Name, fmt.Sprintf("hard link target %q does not exist", hdr.Linkname))
		}
		if err != nil {
			return fmt.Errorf("checking hard link target %s: %w", p.link, err)
		}
		if info.IsDir() {
			return x.unsafe(hdr.Name, fmt.Sprintf("hard link target %q is a directory", hdr.Linkname))
		}
		if err := x.prepare(p.rel, hdr); err != nil {
			return err
		}
		if err := x.root.Link(p.link, p.rel); err != nil {
			return fmt.Errorf("creating hard link %s: %w", p.rel, err)
		}
	}
	x.markTouched(p.rel)
	return nil
}

// count charges one new filesystem object of size bytes against the limits.
func (x *extractor) count(entry string, size int64) error {
	if x.files+1 > x.maxFiles {
		return &LimitError{Limit: "MaxFiles", Max: x.maxFiles, Entry: entry}
	}
	if size > x.maxBytes-x.bytes {
		return &LimitError{Limit: "MaxTotalBytes", Max: x.maxBytes, Entry: entry}
	}
	x.files++
	x.bytes += size
	return nil
}

// prepare makes room for a non-directory at rel: it charges the limits,
// creates missing parents and removes whatever a lower layer left at rel, so
// a new file never writes through an old link or into an old hard link's
// shared inode.
func (x *extractor) prepare(rel string, hdr *tar.Header) error {
	size := int64(0)
	if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == '\x00' {
		size = hdr.Size
	}
	if err := x.count(hdr.Name, size); err != nil {
		return err
	}
	if err := x.mkdirParents(rel, hdr); err != nil {
		return err
	}
	if _, err := x.root.Lstat(rel); err == nil {
		if err := x.remove(rel); err != nil {
			return fmt.Errorf("replacing %s: %w", rel, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking %s: %w", rel, err)
	}
	return nil
}

// mkdirParents creates the missing parent directories of rel, charging each
// against MaxFiles, so that one entry with a deep name cannot create a large
// number of directories for free. Parents that are symbolic links to
// directories are followed; the root keeps that inside the destination.
func (x *extractor) mkdirParents(rel string, hdr *tar.Header) error {
	dir := path.Dir(rel)
	if dir == "." || x.dirs[dir] {
		return nil
	}
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		if x.dirs[p] {
			continue
		}
		info, err := x.root.Stat(p)
		switch {
		case err == nil && info.IsDir():
		case err == nil:
			return x.unsafe(hdr.Name, fmt.Sprintf("parent %q is not a directory", p))
		case errors.Is(err, fs.ErrNotExist):
			if err := x.count(hdr.Name, 0); err != nil {
				return err
			}
			if err := x.root.Mkdir(p, 0o755); err != nil {
				return fmt.Errorf("creating directory %s: %w", p, err)
			}
		default:
			return fmt.Errorf("checking parent %s of %s: %w", p, rel, err)
		}
		x.dirs[p] = true
	}
	return nil
}

// remove deletes rel and everything below it. Directories known to exist may
// be gone afterwards, so that knowledge is dropped.
func (x *extractor) remove(rel string) error {
	clear(x.dirs)
	return x.root.RemoveAll(rel)
}

func (x *extractor) writeFile(rel string, hdr *tar.Header, body io.Reader) error {
	if err := x.prepare(rel, hdr); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if hdr.Mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := x.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("creating %s: %w", rel, err)
	}
	// The tar reader yields exactly hdr.Size bytes, which count charged.
	w := &fileWriter{f: f}
	_, err = io.Copy(w, body)
	if closeErr := f.Close(); err == nil && closeErr != nil {
		w.err = closeErr
		err = closeErr
	}
	if err != nil {
		err = fmt.Errorf("writing %s: %w", rel, err)
		if w.err == nil {
			// Reading the entry failed, not writing it (a truncated entry).
			return &decodeError{err: err}
		}
		return err
	}
	x.markTouched(rel)
	return nil
}

// mkdir creates a directory entry. An existing directory is kept with its
// lower-layer children, as in an overlay; anything else at rel is replaced.
func (x *extractor) mkdir(rel string, hdr *tar.Header) error {
	info, err := x.root.Lstat(rel)
	switch {
	case err == nil && info.IsDir():
		x.dirs[rel] = true
		x.markTouched(rel)
		return nil
	case err == nil:
		if err := x.remove(rel); err != nil {
			return fmt.Errorf("replacing %s with a directory: %w", rel, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("checking %s: %w", rel, err)
	}
	if err := x.count(hdr.Name, 0); err != nil {
		return err
	}
	if err := x.mkdirParents(rel, hdr); err != nil {
		return err
	}
	if err := x.root.Mkdir(rel, 0o755); err != nil {
		return fmt.Errorf("creating directory %s: %w", rel, err)
	}
	x.dirs[rel] = true
	x.markTouched(rel)
	return nil
}

func (x *extractor) markTouched(rel string) {
	for p := rel; p != "." && !x.touched[p]; p = path.Dir(p) {
		x.touched[p] = true
	}
}

// removeLower deletes rel as lower layers left it: entirely if the current
// layer wrote nothing at or below it, otherwise only the parts it did not
// write.
func (x *extractor) removeLower(rel string) error {
	info, err := x.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking whiteout target %s: %w", rel, err)
	}
	if !x.touched[rel] {
		if err := x.remove(rel); err != nil {
			return fmt.Errorf("applying whiteout of %s: %w", rel, err)
		}
		return nil
	}
	if !info.IsDir() {
		return nil
	}
	return x.removeLowerChildren(rel)
}

// removeLowerChildren deletes the lower-layer children of directory rel.
func (x *extractor) removeLowerChildren(rel string) error {
	info, err := x.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking %s: %w", rel, err)
	}
	if !info.IsDir() {
		return nil
	}
	entries, err := fs.ReadDir(x.root.FS(), rel)
	if err != nil {
		return fmt.Errorf("listing %s: %w", rel, err)
	}
	for _, e := range entries {
		if err := x.removeLower(path.Join(rel, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// finish checks the extracted tree and counts it. Each symbolic link was
// checked lexically when written, but later entries can change what its path
// components resolve to (a directory replaced by a link to "..", say), so
// every link is resolved again on disk through the root; one that escapes, or
// loops, is refused. Dangling links that stay inside are harmless and kept.
func (x *extractor) finish() (files, size int64, err error) {
	err = fs.WalkDir(x.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if _, err := x.root.Stat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &UnsafeEntryError{Layer: -1, Entry: p, Reason: "symbolic link does not resolve inside the configs directory: " + err.Error()}
			}
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			size += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("checking extracted files: %w", err)
	}
	return files, size, nil
}

// fileWriter remembers a write error, so that writeFile can tell it from an
// error reading the entry.
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}
