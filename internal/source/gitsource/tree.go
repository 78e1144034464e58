package gitsource

import (
	"archive/tar"
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

// headerHash reads the hash of the header line "PREFIX HEX" of a commit or
// tag object ("tree ", "object ").
func headerHash(typ plumbing.ObjectType, h plumbing.Hash, b []byte, prefix string) (plumbing.Hash, error) {
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			break
		}
		if hex, ok := strings.CutPrefix(line, prefix); ok && isObjectID(hex) {
			return plumbing.NewHash(hex), nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("%s %s has no %q line", typ, h, strings.TrimSpace(prefix))
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
func directoryTree(s objects, commit, dir string) (plumbing.Hash, error) {
	h := plumbing.NewHash(commit)
	b, err := s.object(plumbing.CommitObject, h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", commit, err)
	}
	tree, err := headerHash(plumbing.CommitObject, h, b, "tree ")
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", commit, err)
	}
	if dir == "" {
		return tree, nil
	}
	walked := ""
	for _, name := range strings.Split(dir, "/") {
		b, err := s.object(plumbing.TreeObject, tree)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", tree, err)
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

// treeFile is a file (or link) of the directory's tree: its path and mode.
type treeFile struct {
	name string
	mode uint32
}

// treePlan is what a directory's tree holds: its directories, in the
// order met, and its files by blob, so that the blobs can be written in
// whichever order they come.
type treePlan struct {
	dirs  []string
	files map[plumbing.Hash][]treeFile
	// order is the blobs in the order met: a local repository's blobs
	// are read so.
	order []plumbing.Hash
}

func (p *treePlan) wants(h plumbing.Hash) bool {
	_, ok := p.files[h]
	return ok
}

// planTree lists tree's entries into plan, depth first, under prefix.
// Submodules (gitlinks) are left out.
func planTree(ctx context.Context, s objects, tree plumbing.Hash, prefix string, plan *treePlan, log logr.Logger) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := s.object(plumbing.TreeObject, tree)
	if err != nil {
		return fmt.Errorf("read tree %s: %w", tree, err)
	}
	items, err := parseTree(b)
	if err != nil {
		return source.Terminal(fmt.Errorf("tree %s: %w", tree, err))
	}
	for _, it := range items {
		name := path.Join(prefix, it.name)
		switch it.mode {
		case modeDir:
			plan.dirs = append(plan.dirs, name)
			if err := planTree(ctx, s, it.hash, name, plan, log); err != nil {
				return err
			}
		case modeGitlink:
			log.V(1).Info("submodule left out", "path", name, "commit", it.hash.String())
		default:
			if _, ok := plan.files[it.hash]; !ok {
				plan.order = append(plan.order, it.hash)
			}
			plan.files[it.hash] = append(plan.files[it.hash], treeFile{name: name, mode: it.mode})
		}
	}
	return nil
}

// extractTree writes tree as a tar stream into the extractor, which
// writes it to dst with an image layer's rules: its directories first,
// then each file as its blob comes. Symbolic links stay links (the
// extractor refuses one that leaves dst), executable bits are kept,
// submodules (gitlinks) are left out, LFS pointer files stay as they are.
func extractTree(ctx context.Context, x Extractor, s objects, tree plumbing.Hash, dst string, log logr.Logger) (unpack.Result, error) {
	plan := &treePlan{files: map[plumbing.Hash][]treeFile{}}
	if err := planTree(ctx, s, tree, "", plan, log); err != nil {
		return unpack.Result{}, err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		tw := tar.NewWriter(pw)
		err := writeTree(ctx, tw, s, plan)
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

// writeTree writes plan's directories, then its files as s gives their
// blobs.
func writeTree(ctx context.Context, tw *tar.Writer, s objects, plan *treePlan) error {
	for _, dir := range plan.dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	return s.blobs(ctx, plan, func(f treeFile, size int64, r io.Reader) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Size: size, Mode: 0o644}
		switch f.mode {
		case modeSymlink:
			target, err := io.ReadAll(r)
			if err != nil {
				return fmt.Errorf("read link %s: %w", f.name, err)
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: f.name, Linkname: string(target), Mode: 0o777})
		case modeExec:
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, r); err != nil {
			return fmt.Errorf("read %s: %w", f.name, err)
		}
		return nil
	})
}
