package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// contentSource is where one catalog's content comes from: a directory or an
// image. Keeping it behind this interface is what lets a catalog be either
// without the indexing, reporting and watching code caring which.
type contentSource interface {
	// Fetch makes the current content available for indexing. live is the
	// digest of the catalog's live index ("" if none): a source that can
	// tell the content is unchanged from a cheaper check than fetching it
	// may return a Source with only Digest set, and the Store then skips the
	// rebuild without reading it. cleanup is called once indexing is done.
	Fetch(ctx context.Context, live string) (src index.Source, cleanup func(), err error)
	// Describe says where the content comes from, as shown in /catalogs.
	Describe() string
	// Built reports whether an index whose SourceRef is ref was built from
	// this source, so that one left in --data-dir by an earlier run of a
	// different catalog of the same name is not served as this one.
	Built(ref string) bool
}

// dirSource is a catalog directory on local disk.
type dirSource struct{ path string } // absolute

func (d dirSource) Fetch(context.Context, string) (index.Source, func(), error) {
	src, err := source.Dir(d.path)
	return src, func() {}, err
}

func (d dirSource) Describe() string      { return d.path }
func (d dirSource) Built(ref string) bool { return ref == d.path }

// imageUnpacker is the part of *unpack.Unpacker an imageSource uses.
type imageUnpacker interface {
	Resolve(ctx context.Context, ref string) (string, error)
	Unpack(ctx context.Context, digestRef, dst string) (unpack.Result, error)
}

// imageSource is a catalog image in a registry. A tag is resolved on every
// Fetch (one manifest request); layers are pulled only for a new digest.
type imageSource struct {
	ref      name.Reference
	unpacker imageUnpacker
	// tmpDir is where images are unpacked, each into its own directory that
	// cleanup removes.
	tmpDir string
}

func (s imageSource) Fetch(ctx context.Context, live string) (index.Source, func(), error) {
	noop := func() {}
	// The unpacker's errors name the reference already.
	digestRef, err := s.unpacker.Resolve(ctx, s.ref.String())
	if err != nil {
		return index.Source{}, noop, err
	}
	digest := digestRef[strings.LastIndex(digestRef, "@")+1:]
	if digest == live {
		return index.Source{Ref: digestRef, Digest: digest}, noop, nil
	}
	if err := os.MkdirAll(s.tmpDir, 0o755); err != nil {
		return index.Source{}, noop, fmt.Errorf("create unpack directory: %w", err)
	}
	tmp, err := os.MkdirTemp(s.tmpDir, "unpack-")
	if err != nil {
		return index.Source{}, noop, fmt.Errorf("create unpack directory: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	dst := filepath.Join(tmp, "fbc")
	if _, err := s.unpacker.Unpack(ctx, digestRef, dst); err != nil {
		cleanup()
		return index.Source{}, noop, err
	}
	return index.Source{FS: os.DirFS(dst), Ref: digestRef, Digest: digest}, cleanup, nil
}

func (s imageSource) Describe() string { return s.ref.String() }

// Built compares repositories: a new push to the same tag is the same
// catalog, whose previous index may keep serving until the new one is built.
func (s imageSource) Built(ref string) bool {
	repo, _, _ := strings.Cut(ref, "@")
	return repo == s.ref.Context().Name()
}

// indexer keeps one catalog's index in line with its source and says in the
// registry how the last attempt went.
type indexer struct {
	name  string
	src   contentSource
	store *store.Store
	reg   *catalogs.Registry
	log   logr.Logger

	// mu makes syncs of this catalog run one at a time, each reading its
	// source after the previous one finished: a sync started by a later
	// change can then never be overtaken by one that read older content.
	mu sync.Mutex
}

// syncResult is what one sync did, for the start-up summary.
type syncResult struct {
	rebuilt  bool
	duration time.Duration
}

// sync fetches the catalog's content and makes it the live index. On
// failure the previous index (if any) keeps serving, and the registry's
// LastError says why; the next successful sync clears it.
func (x *indexer) sync(ctx context.Context) (syncResult, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	start := time.Now()

	live := ""
	if info, ok := x.store.Info(x.name); ok {
		live = info.Digest
	}
	src, cleanup, err := x.src.Fetch(ctx, live)
	if err != nil {
		return syncResult{}, x.fail(ctx, fmt.Errorf("read catalog %q: %w", x.name, err))
	}
	defer cleanup()
	info, _, rebuilt, err := x.store.Update(ctx, x.name, src)
	if err != nil {
		return syncResult{}, x.fail(ctx, err)
	}
	x.reg.Update(x.name, func(c *catalogs.Catalog) {
		c.State = catalogs.Serving
		c.LastError = ""
	})
	res := syncResult{rebuilt: rebuilt, duration: time.Since(start)}
	if rebuilt {
		x.log.V(1).Info("catalog indexed", "digest", info.Digest, "duration", res.duration.String())
	} else {
		x.log.V(1).Info("catalog unchanged", "digest", info.Digest)
	}
	return res, nil
}

// fail records err as the catalog's LastError, unless the sync was only
// cut short by shutdown.
func (x *indexer) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	_, serving := x.store.Info(x.name)
	x.reg.Update(x.name, func(c *catalogs.Catalog) {
		c.LastError = err.Error()
		if serving {
			c.State = catalogs.Serving
		}
	})
	if serving {
		x.log.Error(err, "indexing failed; the last good index keeps serving")
	} else {
		x.log.Error(err, "indexing failed; the catalog stays Pending")
	}
	return err
}

// counts is what an index holds, for the start-up summary.
type counts struct {
	packages, channels, bundles int
	problems                    []string // "package: message"
}

// readCounts reads the live index of the catalog, so that the summary is
// the same whether the index was just built or kept from an earlier run.
func (x *indexer) readCounts(ctx context.Context) (counts, error) {
	snap, err := x.store.Acquire(x.name)
	if err != nil {
		return counts{}, err
	}
	defer snap.Release()
	total, err := snap.Catalog.Counts(ctx)
	if err != nil {
		return counts{}, fmt.Errorf("count catalog %q: %w", x.name, err)
	}
	problems, err := snap.Catalog.Problems(ctx, "")
	if err != nil {
		return counts{}, fmt.Errorf("read problems of catalog %q: %w", x.name, err)
	}
	c := counts{packages: total.Packages, channels: total.Channels, bundles: total.Bundles}
	for _, p := range problems {
		c.problems = append(c.problems, p.Package+": "+p.Message)
	}
	return c, nil
}
