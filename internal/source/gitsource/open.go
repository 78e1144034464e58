package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// open chooses the repository's transport from its URL: https (or http,
// without credentials), ssh in either form, file:// only when the Client
// allows local repositories.
func (f *fetcher) open(tmp string) (repository, error) {
	count := &counter{max: f.client.opts.MaxDownloadBytes}
	raw := f.spec.URL
	if e, ok := parseSSH(raw); ok {
		opts := f.client.opts
		c := &sshConn{endpoint: e, auth: f.auth, dir: tmp, count: count, dialer: opts.DialContext, idle: opts.IdleTimeout}
		return &wireRepo{conn: c, count: count, spec: f.spec}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the repository URL is not a URL: %w", err)
	}
	switch u.Scheme {
	case "https", "http":
		c, err := f.client.newHTTPConn(u, f.auth, count)
		if err != nil {
			return nil, err
		}
		return &wireRepo{conn: c, count: count, spec: f.spec}, nil
	case "file":
		if !f.client.opts.AllowLocal {
			return nil, errors.New("a file:// repository is read only by catalogd serve, catalogd validate and kubectl catalog, not by a ClusterCatalog: use an https or ssh URL")
		}
		return openLocal(u.Path)
	}
	return nil, fmt.Errorf("the repository URL %q is neither https://, ssh:// nor user@host:path", raw)
}

// localRepo is a repository on this machine, read in place: its objects
// need no fetch.
type localRepo struct {
	storage *filesystem.Storage
	path    string
}

// openLocal opens a checkout (DIR/.git) or a bare repository (DIR).
func openLocal(dir string) (*localRepo, error) {
	gitDir := dir
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err == nil && fi.IsDir() {
		gitDir = filepath.Join(dir, ".git")
	}
	if fi, err := os.Stat(filepath.Join(gitDir, "objects")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a git repository (no objects directory; a linked worktree is not read: name its main checkout)", dir)
	}
	s := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRUDefault(), filesystem.Options{LargeObjectThreshold: 1 << 20})
	return &localRepo{storage: s, path: dir}, nil
}

func (l *localRepo) refs(context.Context) (*refList, error) {
	list := &refList{refs: map[string]plumbing.Hash{}, peeled: map[string]plumbing.Hash{}}
	iter, err := l.storage.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("read the refs of %s: %w", l.path, err)
	}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference {
			return nil
		}
		name := r.Name().String()
		list.refs[name] = r.Hash()
		if strings.HasPrefix(name, "refs/tags/") {
			if c, ok := peel(l.storage, r.Hash()); ok && c != r.Hash() {
				list.peeled[name] = c
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the refs of %s: %w", l.path, err)
	}
	if head, err := storer.ResolveReference(l.storage, plumbing.HEAD); err == nil {
		list.head = head.Hash()
	}
	return list, nil
}

// peel follows tag objects to what they tag, a few levels at most.
func peel(s *filesystem.Storage, h plumbing.Hash) (plumbing.Hash, bool) {
	for range 10 {
		obj, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return h, false
		}
		if obj.Type() != plumbing.TagObject {
			return h, true
		}
		b, err := readAll(obj)
		if err != nil {
			return h, false
		}
		next, err := headerHash(obj.Type(), h, b, "object ")
		if err != nil {
			return h, false
		}
		h = next
	}
	return h, false
}

func (l *localRepo) fetch(context.Context, target, string) (objects, error) {
	return localObjects{l.storage}, nil
}

func (l *localRepo) close() { _ = l.storage.Close() }

// localObjects are a local repository's objects, read in place; the
// repository closes them.
type localObjects struct{ storage *filesystem.Storage }

func (l localObjects) close() {}

func (l localObjects) object(typ plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	obj, err := l.storage.EncodedObject(typ, h)
	if err != nil {
		return nil, err
	}
	return readAll(obj)
}

// blobs reads the blobs of plan's files in the order the tree lists them,
// each streamed from the repository.
func (l localObjects) blobs(ctx context.Context, plan *treePlan, emit func(f treeFile, size int64, r io.Reader) error) error {
	for _, h := range plan.order {
		if err := ctx.Err(); err != nil {
			return err
		}
		obj, err := l.storage.EncodedObject(plumbing.BlobObject, h)
		for _, f := range plan.files[h] {
			if err != nil {
				return fmt.Errorf("read blob %s (%s): %w", h, f.name, err)
			}
			if err := emitBlob(obj, f, emit); err != nil {
				return err
			}
		}
	}
	return nil
}

func emitBlob(obj plumbing.EncodedObject, f treeFile, emit func(f treeFile, size int64, r io.Reader) error) error {
	r, err := obj.Reader()
	if err != nil {
		return fmt.Errorf("read blob %s (%s): %w", obj.Hash(), f.name, err)
	}
	defer r.Close()
	return emit(f, obj.Size(), r)
}

func readAll(obj plumbing.EncodedObject) ([]byte, error) {
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
