package unpack

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// extractor applies layers, in order, to a destination opened as an os.Root.
// The root guarantees that no write escapes the destination, even through a
// symbolic link planted by an earlier entry; planEntry guarantees that what
// is written is only plain files, directories and links that point inside.
//
// Entries are never written through a symbolic link: every parent of an
// entry must be a real directory (image builders record files at their real
// paths, so only a crafted layer does otherwise). That keeps the cost of each
// entry proportional to the length of its name. Following links in parents
// let a few chained links to deep directories cost every entry thousands of
// path lookups (8 hops of 100-deep chains: about 40 ms per entry).
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

	// layer is the index of the layer being applied, for error messages;
	// archive says it is a lone archive's (ExtractArchive), not a layer.
	layer   int
	archive bool
	// dirs holds the paths known to be real directories, as a tree, so that
	// parents are checked on disk once, and removing a directory forgets
	// exactly its subtree.
	dirs *dirNode
	// touched holds the paths written by the current layer and all their
	// ancestors. Whiteouts only delete lower-layer content, so anything in
	// touched survives a whiteout of the same layer whatever the entry order.
	touched map[string]bool
	// hashes holds the SHA-256 of each regular file written, by path,
	// taken as it was written; finish keeps those of the files left at the
	// end (see Result.FileHash).
	hashes map[string][sha256.Size]byte
	// parent is the directory a file was last written into, kept open
	// (see parentOf).
	parent openDir
}

// openDir is a directory below the destination opened as a root of its
// own, and its path.
type openDir struct {
	rel  string
	root *os.Root
}

func newExtractor(root *os.Root, configsDir string, maxBytes, maxFiles int64) *extractor {
	return &extractor{root: root, configsDir: configsDir, maxBytes: maxBytes, maxFiles: maxFiles, dirs: &dirNode{},
		hashes: map[string][sha256.Size]byte{}}
}

// dirNode is a directory known to exist, not as a link, below the configs
// directory; the root node is the configs directory itself.
type dirNode struct {
	children map[string]*dirNode
}

func (n *dirNode) child(name string) *dirNode {
	return n.children[name]
}

func (n *dirNode) add(name string) *dirNode {
	if n.children == nil {
		n.children = map[string]*dirNode{}
	}
	c := n.children[name]
	if c == nil {
		c = &dirNode{}
		n.children[name] = c
	}
	return c
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
			return &decodeError{err: fmt.Errorf("reading %s: %w", x.part(), err)}
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
	return &UnsafeEntryError{Layer: x.layer, Entry: entry, Reason: reason, Archive: x.archive}
}

// part names what is being applied, for error messages.
func (x *extractor) part() string {
	if x.archive {
		return "the archive"
	}
	return fmt.Sprintf("layer %d", x.layer)
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
		if ok, err := x.parents(p.rel, hdr, false); !ok || err != nil {
			return err
		}
		return x.removeLower(p.rel)
	case actOpaque:
		x.seen = true
		if p.rel == "." {
			return x.removeLowerChildren(".")
		}
		if ok, err := x.parents(p.rel, hdr, false); !ok || err != nil {
			return err
		}
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
		ok, err := x.parents(p.link, hdr, false)
		if err != nil {
			return err
		}
		if !ok {
			return x.unsafe(hdr.Name, fmt.Sprintf("hard link target %q does not exist", hdr.Linkname))
		}
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
		// The same inode: the same content, unless the target is no file.
		if sum, ok := x.hashes[p.link]; ok && info.Mode().IsRegular() {
			x.hashes[p.rel] = sum
		} else {
			delete(x.hashes, p.rel)
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
	dir, name, err := x.parentOf(rel)
	if err != nil {
		return fmt.Errorf("opening the directory of %s: %w", rel, err)
	}
	if _, err := dir.Lstat(name); err == nil {
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
// number of directories for free.
func (x *extractor) mkdirParents(rel string, hdr *tar.Header) error {
	_, err := x.parents(rel, hdr, true)
	return err
}

// parents checks that every parent of rel is a real directory, not a
// symbolic link (see extractor), creating missing ones when create is set.
// Without create it reports false, and no error, when a parent is missing.
// Each parent is looked up on disk once: its parents are then known to be
// real directories, so the lookup follows no link.
func (x *extractor) parents(rel string, hdr *tar.Header, create bool) (bool, error) {
	dir := path.Dir(rel)
	if dir == "." {
		return true, nil
	}
	node := x.dirs
	start := 0
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		name, p := dir[start:i], dir[:i]
		start = i + 1
		if c := node.child(name); c != nil {
			node = c
			continue
		}
		info, err := x.root.Lstat(p)
		switch {
		case err == nil && info.IsDir():
		case err == nil && info.Mode()&fs.ModeSymlink != 0:
			return false, x.unsafe(hdr.Name, fmt.Sprintf("parent %q is a symbolic link; entries are not written through links", p))
		case err == nil:
			return false, x.unsafe(hdr.Name, fmt.Sprintf("parent %q is not a directory", p))
		case errors.Is(err, fs.ErrNotExist) && !create:
			return false, nil
		case errors.Is(err, fs.ErrNotExist):
			if err := x.count(hdr.Name, 0); err != nil {
				return false, err
			}
			if err := x.root.Mkdir(p, 0o755); err != nil {
				return false, fmt.Errorf("creating directory %s: %w", p, err)
			}
		default:
			return false, fmt.Errorf("checking parent %s of %s: %w", p, rel, err)
		}
		node = node.add(name)
	}
	return true, nil
}

// parentOf returns the directory rel is in, opened, and rel's name in it.
// Through the destination's root, each lookup and create opens every
// parent of the entry in turn (six opens and closes for an empty file
// three directories deep, most of the time of unpacking 99,000 of them);
// a layer lists a directory's files together, so the directory last used
// is kept open and the next file there is found by its name alone. Its
// parents are real directories (parents checked them) and stay so while it
// is open: remove, the one way a directory goes or is replaced, closes it.
func (x *extractor) parentOf(rel string) (*os.Root, string, error) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return x.root, name, nil
	}
	if x.parent.root == nil || x.parent.rel != dir {
		x.closeParent()
		r, err := x.root.OpenRoot(dir)
		if err != nil {
			return nil, "", err
		}
		x.parent = openDir{rel: dir, root: r}
	}
	return x.parent.root, name, nil
}

// closeParent closes the directory parentOf kept open, if any. Every
// extraction closes it once done, whatever the outcome.
func (x *extractor) closeParent() {
	if x.parent.root != nil {
		x.parent.root.Close()
		x.parent = openDir{}
	}
}

// remove deletes rel and everything below it, and forgets the directories
// that were there.
func (x *extractor) remove(rel string) error {
	x.closeParent()
	node := x.dirs
	dir, base := path.Split(rel)
	if dir != "" {
		for name := range strings.SplitSeq(strings.TrimSuffix(dir, "/"), "/") {
			if node = node.child(name); node == nil {
				break
			}
		}
	}
	if node != nil {
		delete(node.children, base)
	}
	return x.root.RemoveAll(rel)
}

// markDir records that rel, whose parents are known, is a real directory.
func (x *extractor) markDir(rel string) {
	node := x.dirs
	for name := range strings.SplitSeq(rel, "/") {
		node = node.add(name)
	}
}

func (x *extractor) writeFile(rel string, hdr *tar.Header, body io.Reader) error {
	if err := x.prepare(rel, hdr); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if hdr.Mode&0o111 != 0 {
		perm = 0o755
	}
	dir, name, err := x.parentOf(rel)
	if err != nil {
		return fmt.Errorf("opening the directory of %s: %w", rel, err)
	}
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("creating %s: %w", rel, err)
	}
	// The tar reader yields exactly hdr.Size bytes, which count charged.
	// They are hashed on their way to the file: an incremental index build
	// tells unchanged files by their hash, without reading them again.
	w := &fileWriter{f: f}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(w, h), body)
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
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	x.hashes[rel] = sum
	x.markTouched(rel)
	return nil
}

// mkdir creates a directory entry. An existing directory is kept with its
// lower-layer children, as in an overlay; anything else at rel is replaced.
func (x *extractor) mkdir(rel string, hdr *tar.Header) error {
	if err := x.mkdirParents(rel, hdr); err != nil {
		return err
	}
	info, err := x.root.Lstat(rel)
	switch {
	case err == nil && info.IsDir():
		x.markDir(rel)
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
	if err := x.root.Mkdir(rel, 0o755); err != nil {
		return fmt.Errorf("creating directory %s: %w", rel, err)
	}
	x.markDir(rel)
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
// checked lexically when written, and from a real directory, since nothing
// is written through a link; so no link can resolve outside. finish checks
// that again, as a second line of defence, by resolving every link in memory
// over the tree it walks: on disk, each resolution could cost a lookup per
// component of every link it passes through. A link that escapes, or loops,
// is refused. Dangling links that stay inside are harmless and kept.
//
// It returns the hashes of the regular files in the tree by path, and of
// each link that resolves to one under the link's path, as
// catalogdir.FS shows it.
func (x *extractor) finish() (files, size int64, hashes map[string][sha256.Size]byte, err error) {
	links := map[string]string{}
	hashes = map[string][sha256.Size]byte{}
	err = fs.WalkDir(x.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := x.root.Readlink(p)
			if err != nil {
				return err
			}
			links[p] = target
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			size += info.Size()
			// Every regular file was written (or hard linked) last by
			// writeFile or do, which recorded its hash; entries of files
			// removed since are left out here.
			if sum, ok := x.hashes[p]; ok {
				hashes[p] = sum
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, nil, fmt.Errorf("checking extracted files: %w", err)
	}
	r := linkResolver{links: links, done: map[string]resolution{}}
	for p := range links {
		if reason := r.check(p); reason != "" {
			return 0, 0, nil, fmt.Errorf("checking extracted files: %w", &UnsafeEntryError{Layer: -1, Entry: p, Reason: reason})
		}
	}
	for p := range links {
		if target, _ := r.link(p); target != "" {
			if sum, ok := hashes[target]; ok {
				hashes[p] = sum
			}
		}
	}
	return files, size, hashes, nil
}

// linkResolver resolves symbolic links lexically over a known tree: links
// maps each link's path to its target, and every other path is a real
// directory, a file or nothing. Because a path is resolved from a real
// directory, ".." in a target is its lexical parent, as the kernel sees it.
type linkResolver struct {
	links map[string]string
	// done holds each link resolved so far, so each is resolved once. A
	// link being resolved has an entry with busy set: meeting it again is a
	// cycle.
	done map[string]resolution
}

type resolution struct {
	busy   bool
	path   string
	reason string
}

// check returns why the link at p is unsafe, or "".
func (r *linkResolver) check(p string) string {
	_, reason := r.link(p)
	return reason
}

// link resolves the link at p to a path, or says why it cannot.
func (r *linkResolver) link(p string) (string, string) {
	if d, ok := r.done[p]; ok {
		if d.busy {
			return "", "symbolic link loops"
		}
		return d.path, d.reason
	}
	r.done[p] = resolution{busy: true}
	var res resolution
	target := path.Join(path.Dir(p), r.links[p])
	if path.IsAbs(target) || target == ".." || strings.HasPrefix(target, "../") {
		res.reason = "symbolic link resolves outside the configs directory"
	} else {
		res.path, res.reason = r.path(target)
	}
	r.done[p] = res
	return res.path, res.reason
}

// path resolves the clean relative path p, following links in every
// component.
func (r *linkResolver) path(p string) (string, string) {
	if p == "." {
		return ".", ""
	}
	cur := "."
	for name := range strings.SplitSeq(p, "/") {
		next := path.Join(cur, name)
		if _, ok := r.links[next]; ok {
			resolved, reason := r.link(next)
			if reason != "" {
				return "", reason
			}
			next = resolved
		}
		cur = next
	}
	return cur, ""
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
