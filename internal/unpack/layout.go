package unpack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/catalogd/catalogd/internal/source"
)

// refNameAnnotation tags an entry of a layout's index.json (skopeo's
// oci:DIR:TAG, oras's OCI store and go-containerregistry's layout write it).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// ResolveLayout returns the digest that ref picks in the OCI image layout
// at dir: the entry of index.json tagged ref, the entry with digest ref
// ("sha256:..."), or, for an empty ref, the only entry. The layout is read
// as untrusted content in a directory the user named: index.json is bounded
// by MaxManifestBytes and nothing is read through a link out of dir.
func (u *Unpacker) ResolveLayout(dir, ref string) (string, error) {
	l, err := openLayout(dir)
	if err != nil {
		return "", err
	}
	defer l.root.Close()
	idx, err := l.index(u)
	if err != nil {
		return "", err
	}
	desc, err := pickLayoutEntry(dir, idx, ref)
	if err != nil {
		return "", err
	}
	return desc.Digest.String(), nil
}

// UnpackLayout extracts the image or artifact that the index.json entry
// with digest names in the OCI image layout at dir into dst, as Unpack
// extracts one from a registry: the same choice of platform in an index,
// the same image-or-artifact handling, extractor and limits. Every blob
// is a local file, but read no further than its descriptor's size and
// checked against its digest, as a download is.
func (u *Unpacker) UnpackLayout(ctx context.Context, dir, digest, dst string) (res Result, err error) {
	ref := source.Layout{Dir: dir, Ref: digest}.String()
	ctx, done := u.withPullTimeout(ctx, "reading "+ref)
	defer func() { err = done(err) }()
	res = Result{Ref: ref, Digest: digest}
	l, err := openLayout(dir)
	if err != nil {
		return Result{}, err
	}
	defer l.root.Close()
	idx, err := l.index(u)
	if err != nil {
		return Result{}, err
	}
	desc, err := pickLayoutEntry(dir, idx, digest)
	if err != nil {
		return Result{}, err
	}
	if desc.MediaType.IsIndex() {
		b, err := l.readBlob(desc, u.maxManifest)
		if err != nil {
			return Result{}, fmt.Errorf("unpacking %s: %w", ref, err)
		}
		child, err := v1.ParseIndexManifest(bytes.NewReader(b))
		if err != nil {
			return Result{}, fmt.Errorf("unpacking %s: parsing image index: %w", ref, err)
		}
		if desc, err = pickPlatform(child, wantedPlatforms()); err != nil {
			return Result{}, fmt.Errorf("unpacking %s: %w", ref, err)
		}
	}
	if !desc.MediaType.IsImage() {
		return Result{}, fmt.Errorf("unpacking %s: %w %q: want an image or an index", ref, ErrUnsupportedMediaType, desc.MediaType)
	}
	res.ImageDigest = desc.Digest.String()
	return u.extract(ctx, res, &layoutImage{l: l, desc: desc, u: u}, dst)
}

// layout is an OCI image layout directory, opened as a root so that no
// link inside it leads a read out of it.
type layout struct {
	dir  string
	root *os.Root
}

func openLayout(dir string) (*layout, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening OCI layout %s: %w", dir, withoutPath(err))
	}
	l := &layout{dir: dir, root: root}
	if _, err := root.Stat("oci-layout"); err != nil {
		root.Close()
		return nil, fmt.Errorf("%s is not an OCI image layout (it has no oci-layout file): %w", dir, withoutPath(err))
	}
	return l, nil
}

// index reads index.json, bounded as a manifest is.
func (l *layout) index(u *Unpacker) (*v1.IndexManifest, error) {
	f, err := l.open("index.json")
	if err != nil {
		return nil, fmt.Errorf("reading %s/index.json: %w", l.dir, err)
	}
	defer f.Close()
	limit := u.maxManifest
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s/index.json: %w", l.dir, withoutPath(err))
	}
	if int64(len(b)) > limit {
		return nil, &LimitError{Limit: "MaxManifestBytes", Max: limit, Entry: l.dir + "/index.json"}
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing %s/index.json: %w", l.dir, err)
	}
	return idx, nil
}

// open opens a regular file of the layout, never blocking on a named pipe.
func (l *layout) open(name string) (*os.File, error) {
	f, err := l.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, withoutPath(err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, withoutPath(err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return f, nil
}

// blob opens the blob desc names, checked as it is read against desc's
// size and digest.
func (l *layout) blob(desc v1.Descriptor) (io.ReadCloser, error) {
	if desc.Digest.Algorithm != "sha256" || len(desc.Digest.Hex) != sha256.Size*2 || strings.Trim(desc.Digest.Hex, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("blob %s: only sha256 digests are supported", desc.Digest)
	}
	f, err := l.open(path.Join("blobs", desc.Digest.Algorithm, desc.Digest.Hex))
	if err != nil {
		return nil, fmt.Errorf("opening blob %s: %w", desc.Digest, err)
	}
	return &verifiedBlob{f: f, r: io.LimitReader(f, desc.Size+1), desc: desc, h: sha256.New()}, nil
}

// readBlob reads a whole blob of at most limit bytes.
func (l *layout) readBlob(desc v1.Descriptor, limit int64) ([]byte, error) {
	if desc.Size < 0 || desc.Size > limit {
		return nil, &LimitError{Limit: "MaxManifestBytes", Max: limit, Entry: fmt.Sprintf("blob %s (declared as %d bytes)", desc.Digest, desc.Size)}
	}
	rc, err := l.blob(desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// verifiedBlob fails, rather than ends, a blob whose bytes are not the
// size and digest its descriptor says.
type verifiedBlob struct {
	f    *os.File
	r    io.Reader
	desc v1.Descriptor
	h    hash.Hash
	n    int64
}

func (b *verifiedBlob) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	b.n += int64(n)
	if b.n > b.desc.Size {
		return 0, fmt.Errorf("blob %s is larger than its descriptor's %d bytes", b.desc.Digest, b.desc.Size)
	}
	if errors.Is(err, io.EOF) {
		if b.n != b.desc.Size {
			return n, fmt.Errorf("blob %s is %d bytes, its descriptor says %d", b.desc.Digest, b.n, b.desc.Size)
		}
		if got := hex.EncodeToString(b.h.Sum(nil)); got != b.desc.Digest.Hex {
			return n, fmt.Errorf("blob %s does not match its digest (its content is sha256:%s)", b.desc.Digest, got)
		}
	}
	return n, err
}

func (b *verifiedBlob) Close() error { return b.f.Close() }

// layoutImage is an image or artifact manifest of a layout and its blobs.
type layoutImage struct {
	l        *layout
	desc     v1.Descriptor
	u        *Unpacker
	manifest *v1.Manifest
}

func (i *layoutImage) Manifest() (*v1.Manifest, error) {
	if i.manifest != nil {
		return i.manifest, nil
	}
	b, err := i.l.readBlob(i.desc, i.u.maxManifest)
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing manifest %s: %w", i.desc.Digest, err)
	}
	i.manifest = m
	return m, nil
}

func (i *layoutImage) ConfigFile() (*v1.ConfigFile, error) {
	m, err := i.Manifest()
	if err != nil {
		return nil, err
	}
	// checkManifest has bounded the declared size by MaxConfigBytes.
	rc, err := i.l.blob(m.Config)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return v1.ParseConfigFile(rc)
}

func (i *layoutImage) compressedLayers() ([]compressedLayer, error) {
	m, err := i.Manifest()
	if err != nil {
		return nil, err
	}
	out := make([]compressedLayer, len(m.Layers))
	for n, desc := range m.Layers {
		out[n] = layoutLayer{l: i.l, desc: desc}
	}
	return out, nil
}

type layoutLayer struct {
	l    *layout
	desc v1.Descriptor
}

func (l layoutLayer) Compressed() (io.ReadCloser, error) { return l.l.blob(l.desc) }

// pickLayoutEntry finds the entry of idx that ref picks (see ResolveLayout).
func pickLayoutEntry(dir string, idx *v1.IndexManifest, ref string) (v1.Descriptor, error) {
	var found []v1.Descriptor
	for _, m := range idx.Manifests {
		switch {
		case ref == "",
			strings.HasPrefix(ref, "sha256:") && m.Digest.String() == ref,
			!strings.HasPrefix(ref, "sha256:") && m.Annotations[refNameAnnotation] == ref:
			found = append(found, m)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	var tags []string
	for _, m := range idx.Manifests {
		if tag := m.Annotations[refNameAnnotation]; tag != "" {
			tags = append(tags, tag)
		}
	}
	slices.Sort(tags)
	known := "it has no tags"
	if len(tags) > 0 {
		known = "its tags: " + strings.Join(tags, ", ")
	}
	switch {
	case len(idx.Manifests) == 0:
		return v1.Descriptor{}, fmt.Errorf("OCI layout %s holds no manifest", dir)
	case ref == "":
		return v1.Descriptor{}, fmt.Errorf("OCI layout %s holds %d manifests: name one as oci:%s:TAG or oci:%s:sha256:DIGEST (%s)", dir, len(idx.Manifests), dir, dir, known)
	case len(found) > 1:
		return v1.Descriptor{}, fmt.Errorf("OCI layout %s has %d manifests tagged %q: name one as oci:%s:sha256:DIGEST", dir, len(found), ref, dir)
	case strings.HasPrefix(ref, "sha256:"):
		return v1.Descriptor{}, fmt.Errorf("OCI layout %s has no manifest %s in its index.json", dir, ref)
	}
	return v1.Descriptor{}, fmt.Errorf("OCI layout %s has no manifest tagged %q (%s)", dir, ref, known)
}
