package gitsource

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Modes of tree entries (git's, in octal).
const (
	modeDir     = 0o40000
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeGitlink = 0o160000
)

// treeItem is one entry of a tree object.
type treeItem struct {
	mode uint32
	name string
	hash plumbing.Hash
}

// readObject reads a whole object of type typ. Only commits, tags and
// trees are read so: blobs are streamed.
func readObject(s objectStore, typ plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	obj, err := s.EncodedObject(typ, h)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	return b, nil
}

// headerHash reads the hash of the header line "PREFIX HEX" of a commit or
// tag object ("tree ", "object ").
func headerHash(obj plumbing.EncodedObject, prefix string) (plumbing.Hash, error) {
	r, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() && sc.Text() != "" {
		if hex, ok := strings.CutPrefix(sc.Text(), prefix); ok && isObjectID(hex) {
			return plumbing.NewHash(hex), nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("%s %s has no %q line", obj.Type(), obj.Hash(), strings.TrimSpace(prefix))
}

// parseTree reads a tree object's entries: "MODE NAME\0" and 20 bytes of
// hash, each. A name must be one path element.
func parseTree(b []byte) ([]treeItem, error) {
	var items []treeItem
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 1 || nul < sp+2 || len(b) < nul+1+20 {
			return nil, errors.New("malformed tree object")
		}
		var mode uint32
		for _, c := range b[:sp] {
			if c < '0' || c > '7' {
				return nil, errors.New("malformed tree object")
			}
			mode = mode<<3 | uint32(c-'0')
		}
		name := string(b[sp+1 : nul])
		if name == "." || name == ".." || strings.Contains(name, "/") {
			// git writes no such entry; one that does is hostile.
			return nil, fmt.Errorf("tree entry %q is not a file name", name)
		}
		var h plumbing.Hash
		copy(h[:], b[nul+1:nul+21])
		items = append(items, treeItem{mode: mode, name: name, hash: h})
		b = b[nul+21:]
	}
	return items, nil
}

// directoryTree finds the tree of dir (slash separated, empty for the root)
// in commit. What the commit holds decides a missing or non-directory
// path, so those errors are terminal.
func directoryTree(s objectStore, commit, dir string) (plumbing.Hash, error) {
	obj, err := s.EncodedObject(plumbing.CommitObject, plumbing.NewHash(commit))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", commit, err)
	}
	tree, err := headerHash(obj, "tree ")
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", commit, err)
	}
	if dir == "" {
		return tree, nil
	}
	walked := ""
	for _, name := range strings.Split(dir, "/") {
		b, err := readObject(s, plumbing.TreeObject, tree)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		items, err := parseTree(b)
		if err != nil {
			return plumbing.ZeroHash, source.Terminal(fmt.Errorf("tree %s of commit %s: %w", tree, commit, err))
		}
		walked = path.Join(walked, name)
		i := findItem(items, name)
		switch {
		case i < 0:
			return plumbing.ZeroHash, source.Terminal(fmt.Errorf("directory %q does not exist at commit %s", walked, commit))
		case items[i].mode != modeDir:
			return plumbing.ZeroHash, source.Terminal(fmt.Errorf("%q is not a directory at commit %s: the directory must name the catalog's directory", walked, commit))
		}
		tree = items[i].hash
	}
	return tree, nil
}

func findItem(items []treeItem, name string) int {
	for i, it := range items {
		if it.name == name {
			return i
		}
	}
	return -1
}

// extractTree writes tree as a tar stream into the extractor, which
// writes it to dst with an image layer's rules. Symbolic links stay links
// (the extractor refuses one that leaves dst), executable bits are kept,
// submodules (gitlinks) are left out, LFS pointer files stay as they are.
func extractTree(ctx context.Context, x Extractor, s objectStore, tree plumbing.Hash, dst string, log logr.Logger) (unpack.Result, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		tw := tar.NewWriter(pw)
		err := writeTree(ctx, tw, s, tree, "", log)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
		done <- err
	}()
	res, err := x.ExtractArchive(ctx, pr, dst)
	// Stops the writer if the extractor stopped reading first.
	pr.CloseWithError(errExtractionEnded)
	if werr := <-done; err != nil && werr != nil && !errors.Is(werr, errExtractionEnded) {
		// What the tree's writer failed at says more than the read error
		// the extractor saw.
		return unpack.Result{}, werr
	}
	return res, err
}

// errExtractionEnded stops the tree's writer once the extractor returned.
var errExtractionEnded = errors.New("extraction ended")

// writeTree writes the entries of tree under prefix, depth first.
func writeTree(ctx context.Context, tw *tar.Writer, s objectStore, tree plumbing.Hash, prefix string, log logr.Logger) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := readObject(s, plumbing.TreeObject, tree)
	if err != nil {
		return err
	}
	items, err := parseTree(b)
	if err != nil {
		return source.Terminal(fmt.Errorf("tree %s: %w", tree, err))
	}
	for _, it := range items {
		name := path.Join(prefix, it.name)
		switch it.mode {
		case modeDir:
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}); err != nil {
				return err
			}
			if err := writeTree(ctx, tw, s, it.hash, name, log); err != nil {
				return err
			}
		case modeGitlink:
			log.V(1).Info("submodule left out", "path", name, "commit", it.hash.String())
		case modeSymlink:
			target, err := readObject(s, plumbing.BlobObject, it.hash)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: string(target), Mode: 0o777}); err != nil {
				return err
			}
		default:
			if err := writeBlob(tw, s, it, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeBlob writes a file, streaming its content from the object store.
func writeBlob(tw *tar.Writer, s objectStore, it treeItem, name string) error {
	obj, err := s.EncodedObject(plumbing.BlobObject, it.hash)
	if err != nil {
		return fmt.Errorf("read blob %s (%s): %w", it.hash, name, err)
	}
	mode := int64(0o644)
	if it.mode == modeExec {
		mode = 0o755
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: obj.Size(), Mode: mode}); err != nil {
		return err
	}
	r, err := obj.Reader()
	if err != nil {
		return fmt.Errorf("read blob %s (%s): %w", it.hash, name, err)
	}
	defer r.Close()
	if _, err := io.Copy(tw, r); err != nil {
		return fmt.Errorf("read blob %s (%s): %w", it.hash, name, err)
	}
	return nil
}
