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
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

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
// repository as an artifact referring to the catalog; the files it
// compresses are compressed into temporary files first, which it removes.
// The artifact is the same bytes for the same index files, and blobs the
// registry holds
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
	tmp, err := os.MkdirTemp("", "catalogd-publish-")
	if err != nil {
		return Published{}, fmt.Errorf("publish prebuilt index: %w", err)
	}
	defer os.RemoveAll(tmp)
	layers, err := indexLayers(indexPath, tmp)
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
		desc := v1.Descriptor{MediaType: l.mediaType, Size: l.size, Digest: l.digest,
			Annotations: map[string]string{annotationTitle: l.title}}
		if l.fileSize != l.size {
			desc.Annotations[AnnotationSize] = strconv.FormatInt(l.fileSize, 10)
		}
		m.Layers = append(m.Layers, desc)
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
// first, then the content directory's files by name, each compressed
// into a file in tmp when that pays (newFileBlob).
func indexLayers(path, tmp string) ([]*fileBlob, error) {
	names, err := index.ContentFiles(path)
	if err != nil {
		return nil, err
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstdLevel), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(zstdWindow), zstd.WithEncoderCRC(false), zstd.WithNoEntropyCompression(true))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	db, err := newFileBlob(enc, path, filepath.Join(tmp, databaseTitle), databaseTitle, DatabaseMediaType)
	if err != nil {
		return nil, err
	}
	out := []*fileBlob{db}
	for _, n := range names {
		b, err := newFileBlob(enc, filepath.Join(index.ContentDir(path), n), filepath.Join(tmp, n), contentPrefix+n, ContentMediaType)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// zstdWindow is the window of the compressed layers. Small, because the
// window's history is what the decompressor keeps hot: measured on the
// 1.3 GB catalog of CRD objects, decompressing and writing its content
// took 0.84 CPU-seconds at 512 KiB, 1.0 at 1 MiB and 1.3 at 8 MiB (zstd's
// default), for 104, 104 and 79 MB of download.
const zstdWindow = 512 << 10

// zstdLevel is the compression of the layers. Publishing runs once per
// catalog and taking the index on every replica, so the level is the one
// whose output decompresses fastest, not the cheapest to make: on 204 MB
// of the CRD catalog at a 512 KiB window, "better" gave 14 MB decompressed
// at 2.8 GB/s, where "default" gave 17 MB at 2.5 GB/s and "best" 13 MB at
// 2.5 GB/s; it compresses at half default's speed (0.26 GB/s).
//
// The literals (the bytes no match covers) are stored as they are rather
// than Huffman-coded (WithNoEntropyCompression), and the frames carry no
// checksum of their own (WithEncoderCRC(false)): each layer's digest
// covers its bytes already, and index.Adopt the content's CRC-32. On
// 137 MB of the CRD catalog's content, raw literals made the layers 3%
// larger (ratio 13.7 against 14.2) and decompressing them 8% cheaper
// (0.32-0.33 CPU-s per GB against 0.35-0.37).
const zstdLevel = zstd.SpeedBetterCompression

// zstdMaxWindow is the largest window Download decompresses, which bounds
// the memory each decompressor takes (twice its window).
const zstdMaxWindow = 8 << 20

// fileBlob is one blob of the artifact, a file read when it is uploaded
// (or bytes in memory, the config), as the v1.Layer that
// remote.WriteLayer takes: stored as it is, so its compressed and
// uncompressed forms are the same bytes (a file compressed with zstd is
// another file, read as it is too). fileSize is the size of the index's
// file it holds.
type fileBlob struct {
	path, title string
	data        []byte
	mediaType   types.MediaType
	size        int64
	digest      v1.Hash
	fileSize    int64
}

func newBlob(data []byte, mediaType types.MediaType) *fileBlob {
	sum := sha256.Sum256(data)
	return &fileBlob{title: "config", data: data, mediaType: mediaType, size: int64(len(data)), fileSize: int64(len(data)),
		digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}}
}

// newFileBlob is the blob of the index's file at path, compressed by enc
// into the file compressed (the blob, media type mediaType+ZstdSuffix)
// when that makes it at least an eighth smaller: zstd at its default
// level makes catalog JSON and its database about a tenth of their size,
// and the gzip copy's segments, deflate data already, no smaller, which
// are then stored as they are. Each file is read once, and compressed
// the same way each time, so the blobs are the same bytes each time.
func newFileBlob(enc *zstd.Encoder, path, compressed, title string, mediaType types.MediaType) (*fileBlob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := os.Create(compressed)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	plain, zsum := sha256.New(), sha256.New()
	enc.Reset(io.MultiWriter(z, zsum))
	n, err := io.Copy(enc, io.TeeReader(f, plain))
	if err == nil {
		err = enc.Close()
	}
	var zn int64
	if err == nil {
		zn, err = z.Seek(0, io.SeekCurrent)
	}
	if err == nil {
		err = z.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("compress %s: %w", title, err)
	}
	if zn > n-n/8 {
		return &fileBlob{path: path, title: title, mediaType: mediaType, size: n, fileSize: n,
			digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(plain.Sum(nil))}}, nil
	}
	return &fileBlob{path: compressed, title: title, mediaType: mediaType + ZstdSuffix, size: zn, fileSize: n,
		digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(zsum.Sum(nil))}}, nil
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
