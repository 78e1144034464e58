package gitsource

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// packObjects holds the objects of a fetched pack, resolved once as the
// pack is parsed: blobs as files in dir, which the tree's writer streams
// into the extractor, commits, trees and tags in memory (they are small).
//
// go-git's filesystem storage keeps the pack and an index instead, and
// resolves a blob's delta chain again at every read: on the bench catalog
// (98 MiB, 300 files, a 20 MiB pack) that took 8.5 s to write the tree,
// against under a second this way. Its memory storage holds every object
// of the commit in memory: the size of the repository in RSS.
type packObjects struct {
	dir   string
	small map[plumbing.Hash]plumbing.EncodedObject
	blobs map[plumbing.Hash]int64 // size
}

// receivePack stores the pack r sends in dir: the pack itself first (the
// parser resolves deltas by seeking in it, rather than holding them), then
// each object resolved.
func receivePack(r io.Reader, dir string) (*packObjects, error) {
	objects := &packObjects{dir: filepath.Join(dir, "objects"), small: map[plumbing.Hash]plumbing.EncodedObject{}, blobs: map[plumbing.Hash]int64{}}
	if err := os.Mkdir(objects.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "pack"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(f), objects)
	if err != nil {
		return nil, err
	}
	if _, err := p.Parse(); err != nil {
		return nil, fmt.Errorf("parse the pack: %w", err)
	}
	// The objects hold all the pack had.
	if err := os.Remove(f.Name()); err != nil {
		return nil, err
	}
	return objects, nil
}

func (o *packObjects) blobPath(h plumbing.Hash) string { return filepath.Join(o.dir, h.String()) }

func (o *packObjects) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (o *packObjects) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if obj.Type() != plumbing.BlobObject {
		o.small[h] = obj
		return h, nil
	}
	r, err := obj.Reader()
	if err != nil {
		return h, err
	}
	defer r.Close()
	f, err := os.Create(o.blobPath(h))
	if err != nil {
		return h, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	o.blobs[h] = n
	return h, err
}

func (o *packObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := o.small[h]; ok && (t == plumbing.AnyObject || t == obj.Type()) {
		return obj, nil
	}
	if size, ok := o.blobs[h]; ok && (t == plumbing.AnyObject || t == plumbing.BlobObject) {
		return &blobFile{hash: h, size: size, path: o.blobPath(h)}, nil
	}
	return nil, plumbing.ErrObjectNotFound
}

func (o *packObjects) HasEncodedObject(h plumbing.Hash) error {
	if _, err := o.EncodedObject(plumbing.AnyObject, h); err != nil {
		return err
	}
	return nil
}

func (o *packObjects) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	obj, err := o.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return 0, err
	}
	return obj.Size(), nil
}

// errNotStored answers what a fetch's objects are not asked for.
var errNotStored = errors.New("not kept by a fetch")

func (o *packObjects) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errNotStored
}

func (o *packObjects) AddAlternate(string) error { return errNotStored }

// blobFile is a blob stored as a file.
type blobFile struct {
	hash plumbing.Hash
	size int64
	path string
}

func (b *blobFile) Hash() plumbing.Hash            { return b.hash }
func (b *blobFile) Type() plumbing.ObjectType      { return plumbing.BlobObject }
func (b *blobFile) SetType(plumbing.ObjectType)    {}
func (b *blobFile) Size() int64                    { return b.size }
func (b *blobFile) SetSize(int64)                  {}
func (b *blobFile) Reader() (io.ReadCloser, error) { return os.Open(b.path) }
func (b *blobFile) Writer() (io.WriteCloser, error) {
	return nil, errNotStored
}
