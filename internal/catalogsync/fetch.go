package catalogsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Fetcher and Fetched are the source's: every kind of source implements
// Fetcher (see internal/source).
type (
	Fetcher = source.Fetcher
	Fetched = source.Fetched
)

// DirFetcher fetches a catalog directory on local disk.
type DirFetcher struct {
	// Path is absolute.
	Path string
	// Hashes, when set, keeps the file hashes of each Fetch for the next,
	// which then reads only the files that changed (catalogdir.Cache): for
	// a directory fetched again and again (--watch).
	Hashes *catalogdir.Cache
}

// Fetch digests the directory; the index reads it in place.
func (d DirFetcher) Fetch(ctx context.Context, _ func(string) bool) (Fetched, error) {
	src, err := catalogdir.Read(ctx, d.Path, d.Hashes)
	return Fetched{Content: src}, err
}

// Describe is the directory's path.
func (d DirFetcher) Describe() string { return d.Path }

// Built matches an index built from the same directory.
func (d DirFetcher) Built(ref string) bool { return ref == d.Path }

// Unpacker resolves image references and extracts catalog images;
// *unpack.Unpacker provides it.
type Unpacker interface {
	// PullContext bounds the Resolve and Unpack of one Fetch together by
	// the unpacker's pull timeout.
	PullContext(ctx context.Context) (context.Context, context.CancelFunc)
	Resolve(ctx context.Context, ref string) (string, error)
	Unpack(ctx context.Context, digestRef, dst string) (unpack.Result, error)
}

// ImageFetcher fetches a catalog image from a registry. A tag is resolved on every
// Fetch (one manifest request); layers are pulled only for a digest that is
// neither live nor known to be bad. A digest reference is resolved without
// asking the registry.
type ImageFetcher struct {
	Ref      name.Reference
	Unpacker Unpacker
	// TempDir is where images are unpacked, each into its own directory
	// that Cleanup removes.
	TempDir string
	// Prebuilt, when set, downloads the index published beside the
	// catalog (*prebuilt.Client), which a sync takes before it pulls the
	// image (PrebuiltSource); nil looks for none (--prebuilt-index=false).
	Prebuilt PrebuiltDownloader
}

// PrebuiltDownloader downloads the prebuilt index of the catalog at a
// digest reference into a path, returning the CRC-32s of the content
// files it took as it wrote them; *prebuilt.Client provides it.
type PrebuiltDownloader interface {
	Download(ctx context.Context, ref, path string) (index.ContentSums, error)
}

// PrebuiltIndex resolves the reference, as Fetch does, and returns the
// download of the index published beside what it names, bounded by a pull
// timeout of its own. Only the catalog's own repository is asked, by the
// digest the reference resolved to.
func (s ImageFetcher) PrebuiltIndex(ctx context.Context) (string, func(context.Context, string) (index.ContentSums, error), error) {
	if s.Prebuilt == nil {
		return "", nil, nil
	}
	pullCtx, cancel := s.Unpacker.PullContext(ctx)
	defer cancel()
	digestRef, err := s.Unpacker.Resolve(pullCtx, s.Ref.String())
	download := func(ctx context.Context, path string) (index.ContentSums, error) {
		ctx, cancel := s.Unpacker.PullContext(ctx)
		defer cancel()
		return s.Prebuilt.Download(ctx, digestRef, path)
	}
	return digestRef, download, err
}

// Fetch resolves the reference and, unless skip says otherwise, unpacks it,
// within one pull timeout: no registry can hold a fetch longer.
func (s ImageFetcher) Fetch(ctx context.Context, skip func(string) bool) (Fetched, error) {
	ctx, cancel := s.Unpacker.PullContext(ctx)
	defer cancel()
	// The unpacker's errors name the reference already.
	digestRef, err := s.Unpacker.Resolve(ctx, s.Ref.String())
	if err != nil {
		return Fetched{}, err
	}
	digest := digestOf(digestRef)
	if skip(digest) {
		return Fetched{Content: index.Content{Ref: digestRef, Digest: digest}}, nil
	}
	f, err := unpackInto(s.TempDir, digestRef, digest, func(dst string) (unpack.Result, error) {
		return s.Unpacker.Unpack(ctx, digestRef, dst)
	})
	if err != nil {
		return f, fmt.Errorf("pull %s: %w", digestRef, err)
	}
	return f, nil
}

// unpackInto makes a directory under tempDir, has unpackTo extract the
// content of ref (of digest) into it, and returns it as Fetched, with a
// Cleanup that removes it. On failure nothing is left, and the digest is
// returned with the error: content that cannot be unpacked is not unpacked
// again until the reference moves.
func unpackInto(tempDir, ref, digest string, unpackTo func(dst string) (unpack.Result, error)) (Fetched, error) {
	if err := os.MkdirAll(tempDir, 0o755); err != nil {
		return Fetched{}, fmt.Errorf("create unpack directory: %w", err)
	}
	tmp, err := os.MkdirTemp(tempDir, datadir.UnpackPrefix)
	if err != nil {
		return Fetched{}, fmt.Errorf("create unpack directory: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	dst := filepath.Join(tmp, "fbc")
	res, err := unpackTo(dst)
	if err != nil {
		cleanup()
		return Fetched{Content: index.Content{Ref: ref, Digest: digest}}, err
	}
	return Fetched{
		// catalogdir.FS, not os.DirFS: links to directories and dangling links
		// that unpack lets through are hidden, as for a directory catalog.
		Content: index.Content{FS: catalogdir.FS(dst), Ref: ref, Digest: digest, FileHash: res.FileHash},
		Pulled:  true,
		Bytes:   res.Bytes,
		Form:    res.Form,
		Cleanup: cleanup,
	}, nil
}

// Describe is the reference as given.
func (s ImageFetcher) Describe() string { return s.Ref.String() }

// Built compares repositories: a new push to the same tag is the same
// catalog, whose previous index may keep serving until the new one is built.
func (s ImageFetcher) Built(ref string) bool {
	repo, _, _ := strings.Cut(ref, "@")
	return repo == s.Ref.Context().Name()
}

// LayoutUnpacker reads images and artifacts from OCI image layouts on
// disk; *unpack.Unpacker provides it.
type LayoutUnpacker interface {
	ResolveLayout(dir, ref string) (string, error)
	UnpackLayout(ctx context.Context, dir, digest, dst string) (unpack.Result, error)
}

// LayoutFetcher fetches a catalog image or artifact from an OCI image
// layout directory (skopeo's oci:DIR[:TAG]). Its Ref is resolved to a
// digest on every Fetch, by reading index.json; blobs are read only for a
// digest that is neither live nor known to be bad.
type LayoutFetcher struct {
	Layout   source.Layout
	Unpacker LayoutUnpacker
	// TempDir is where content is unpacked, each time into its own
	// directory that Cleanup removes.
	TempDir string
}

// Fetch resolves the layout's Ref and, unless skip says otherwise,
// unpacks what it names.
func (l LayoutFetcher) Fetch(ctx context.Context, skip func(string) bool) (Fetched, error) {
	digest, err := l.Unpacker.ResolveLayout(l.Layout.Dir, l.Layout.Ref)
	if err != nil {
		return Fetched{}, err
	}
	ref := source.Layout{Dir: l.Layout.Dir, Ref: digest}.String()
	if skip(digest) {
		return Fetched{Content: index.Content{Ref: ref, Digest: digest}}, nil
	}
	// UnpackLayout's errors name the layout and digest already.
	return unpackInto(l.TempDir, ref, digest, func(dst string) (unpack.Result, error) {
		return l.Unpacker.UnpackLayout(ctx, l.Layout.Dir, digest, dst)
	})
}

// Describe is the layout as given.
func (l LayoutFetcher) Describe() string { return l.Layout.String() }

// Built matches an index built from the same layout directory, whichever
// manifest of it.
func (l LayoutFetcher) Built(ref string) bool {
	return ref == "oci:"+l.Layout.Dir || strings.HasPrefix(ref, "oci:"+l.Layout.Dir+":")
}

// digestOf returns the algorithm:hex part of a digest reference.
func digestOf(digestRef string) string {
	if i := strings.LastIndex(digestRef, "@"); i >= 0 {
		return digestRef[i+1:]
	}
	return digestRef
}
