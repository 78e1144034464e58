package prebuilt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/catalogd/catalogd/internal/index"
)

// Published says what Publish pushed.
type Published struct {
	// Ref is the artifact, repository@digest.
	Ref string
	// Bytes is the size of its layers together: what a replica downloads.
	Bytes int64
}

// config is the artifact's config blob: what its annotations say, in a
// blob of its own so that a registry that keeps no annotations in its
// referrers listing still holds it.
type config struct {
	Schema  string `json:"schema"`
	Catalog string `json:"catalog"`
}

// Publish pushes the index version at indexPath (index.Files), built
// from the catalog at ref (repository@digest), to the catalog's
// repository as an artifact referring to the catalog. The artifact is the
// same bytes for the same index files, and blobs the registry holds
// already are not uploaded again (go-containerregistry asks first), so
// publishing again pushes at most the manifest the registry already has.
// The caller builds the index as a replica would, with a fixed build
// time (the index records it), so that its files are the same each time.
func (c *Client) Publish(ctx context.Context, ref, indexPath string) (Published, error) {
	d, opts, err := c.digestRef(ctx, ref)
	if err != nil {
		return Published{}, err
	}
	subject, err := remote.Head(d, opts...)
	if err != nil {
		return Published{}, fmt.Errorf("publish prebuilt index: read catalog manifest %s: %w", d, err)
	}
	layers, err := indexLayers(indexPath)
	if err != nil {
		return Published{}, fmt.Errorf("publish prebuilt index: %w", err)
	}
	cfgBytes, err := json.Marshal(config{Schema: c.schema, Catalog: d.DigestStr()})
	if err != nil {
		return Published{}, fmt.Errorf("publish prebuilt index: %w", err)
	}
	cfg := newBlob(cfgBytes, ArtifactType)
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  ArtifactType,
		Config:        v1.Descriptor{MediaType: ArtifactType, Size: int64(len(cfgBytes)), Digest: cfg.digest},
		Subject:       &v1.Descriptor{MediaType: subject.MediaType, Size: subject.Size, Digest: subject.Digest},
		Annotations: map[string]string{
			AnnotationSchema:  c.schema,
			AnnotationVersion: c.version,
			AnnotationCatalog: d.DigestStr(),
		},
	}
	var total int64
	for _, l := range layers {
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: l.mediaType, Size: l.size, Digest: l.digest,
			Annotations: map[string]string{annotationTitle: l.title}})
		total += l.size
	}
	for _, l := range append([]*fileBlob{cfg}, layers...) {
		if err := remote.WriteLayer(d.Context(), l, opts...); err != nil {
			return Published{}, fmt.Errorf("publish prebuilt index: push %s: %w", l.title, err)
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return Published{}, fmt.Errorf("publish prebuilt index: %w", err)
	}
	sum := sha256.Sum256(raw)
	art := d.Context().Digest("sha256:" + hex.EncodeToString(sum[:]))
	if err := remote.Put(art, rawManifest(raw), opts...); err != nil {
		return Published{}, fmt.Errorf("publish prebuilt index: push manifest: %w", err)
	}
	return Published{Ref: art.String(), Bytes: total}, nil
}

// indexLayers are the files of the index version at path, the database
// first, then the content directory's files by name.
func indexLayers(path string) ([]*fileBlob, error) {
	names, err := index.ContentFiles(path)
	if err != nil {
		return nil, err
	}
	db, err := newFileBlob(path, databaseTitle, DatabaseMediaType)
	if err != nil {
		return nil, err
	}
	out := []*fileBlob{db}
	for _, n := range names {
		b, err := newFileBlob(filepath.Join(index.ContentDir(path), n), contentPrefix+n, ContentMediaType)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// fileBlob is one blob of the artifact, a file read when it is uploaded
// (or bytes in memory, the config), as the v1.Layer that
// remote.WriteLayer takes: stored as it is, so its compressed and
// uncompressed forms are the same bytes.
type fileBlob struct {
	path, title string
	data        []byte
	mediaType   types.MediaType
	size        int64
	digest      v1.Hash
}

func newBlob(data []byte, mediaType types.MediaType) *fileBlob {
	sum := sha256.Sum256(data)
	return &fileBlob{title: "config", data: data, mediaType: mediaType, size: int64(len(data)),
		digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}}
}

func newFileBlob(path, title string, mediaType types.MediaType) (*fileBlob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", title, err)
	}
	return &fileBlob{path: path, title: title, mediaType: mediaType, size: n,
		digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}}, nil
}

func (b *fileBlob) Digest() (v1.Hash, error)             { return b.digest, nil }
func (b *fileBlob) DiffID() (v1.Hash, error)             { return b.digest, nil }
func (b *fileBlob) Size() (int64, error)                 { return b.size, nil }
func (b *fileBlob) MediaType() (types.MediaType, error)  { return b.mediaType, nil }
func (b *fileBlob) Compressed() (io.ReadCloser, error)   { return b.open() }
func (b *fileBlob) Uncompressed() (io.ReadCloser, error) { return b.open() }

func (b *fileBlob) open() (io.ReadCloser, error) {
	if b.path == "" {
		return io.NopCloser(bytes.NewReader(b.data)), nil
	}
	return os.Open(b.path)
}

// rawManifest is a manifest's bytes as remote.Put takes them.
type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error)        { return r, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
