package prebuilt

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/klauspost/compress/zstd"

	"github.com/catalogd/catalogd/internal/index"
)

// find lists the referrers of d that are prebuilt indexes of this
// binary's schema, best first; the query is bounded by the client's
// query timeout. ErrNotPublished, ErrOtherSchema or ErrUnreachable say
// why there is none.
func (c *Client) find(ctx context.Context, ref string) (name.Digest, []v1.Descriptor, error) {
	qctx, cancel := context.WithTimeout(ctx, c.queryTimeout)
	defer cancel()
	d, opts, err := c.digestRef(qctx, ref)
	if err != nil {
		return name.Digest{}, nil, err
	}
	idx, err := remote.Referrers(d, append(opts, remote.WithFilter("artifactType", ArtifactType))...)
	var im *v1.IndexManifest
	if err == nil {
		im, err = idx.IndexManifest()
	}
	if err != nil {
		if qctx.Err() != nil && ctx.Err() == nil {
			return d, nil, fmt.Errorf("%w of %s: no answer within %s", ErrUnreachable, d.DigestStr(), c.queryTimeout)
		}
		return d, nil, fmt.Errorf("%w of %s: %w", ErrUnreachable, d.DigestStr(), err)
	}
	var ours, unlabelled []v1.Descriptor
	var others []string
	for _, m := range im.Manifests {
		if m.ArtifactType != ArtifactType {
			continue
		}
		switch s, ok := m.Annotations[AnnotationSchema]; {
		case s == c.schema:
			ours = append(ours, m)
		case !ok:
			// A registry may leave annotations out of its listing: the
			// manifest says.
			unlabelled = append(unlabelled, m)
		default:
			others = append(others, s)
		}
	}
	// Every replica picks the same one.
	byDigest := func(a, b v1.Descriptor) int { return strings.Compare(a.Digest.String(), b.Digest.String()) }
	slices.SortFunc(ours, byDigest)
	slices.SortFunc(unlabelled, byDigest)
	ours = append(ours, unlabelled...)
	switch {
	case len(ours) > 0:
		return d, ours, nil
	case len(others) > 0:
		return d, nil, fmt.Errorf("%w (%s): published for %s", ErrOtherSchema, c.schema, strings.Join(others, ", "))
	}
	return d, nil, ErrNotPublished
}

// Published returns the reference (repository@digest) of a prebuilt
// index of this binary's schema that refers to ref (repository@digest),
// if there is one: what makes publishing again unnecessary.
func (c *Client) Published(ctx context.Context, ref string) (string, bool, error) {
	d, found, err := c.find(ctx, ref)
	switch {
	case errors.Is(err, ErrNotPublished), errors.Is(err, ErrOtherSchema):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return d.Context().Digest(found[0].Digest.String()).String(), true, nil
}

// Download finds the prebuilt index of the catalog at ref
// (repository@digest) in the catalog's own repository and writes its
// files at path, as index.Files(path) names them, for index.Adopt (which
// package store runs) to check, and returns the CRC-32s of the content
// directory's files, taken as they were written, which index.Adopt
// checks against the index's own record. The referrers query is bounded
// by the client's query timeout, the downloads by ctx and by the
// registry's limits: the manifest's size, the layers' declared sizes
// together, and the sizes of the files written from them together; each
// layer is read no further than its declared size and checked against
// its digest, each compressed one decompressed no further than its
// recorded size. The layers are downloaded one at a time: taking the
// CRD bench catalog's index two at a time cost more CPU (medians of
// twelve runs each on two busy cores: 1.14 CPU-s against 1.09), the two
// writers contending for the filesystem and the caches, for about the
// same time to serving (1.72 s against 1.77). The error says why there
// is no index to use (ErrNotPublished, ErrOtherSchema, ErrUnreachable,
// ErrRefused, or a failed download); Reason classifies it.
func (c *Client) Download(ctx context.Context, ref, path string) (index.ContentSums, error) {
	d, found, err := c.find(ctx, ref)
	if err != nil {
		return nil, err
	}
	_, opts, err := c.digestRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	// One puller for the manifest and every layer: the registry is pinged
	// and its token fetched once, rather than once per layer (for an
	// insecure registry, a TLS handshake tried and a plain one made, over
	// a new connection each time).
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, fmt.Errorf("download prebuilt index: %w", err)
	}
	opts = append(opts, remote.Reuse(puller))
	// The first that this binary can read, among several published.
	art := d.Context().Digest(found[0].Digest.String())
	m, err := c.manifest(art, d, opts)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(index.ContentDir(path), 0o755); err != nil {
		return nil, fmt.Errorf("download prebuilt index: %w", err)
	}
	in := bufio.NewReaderSize(nil, readBuffer)
	var dec *zstd.Decoder
	defer func() {
		if dec != nil {
			dec.Close()
		}
	}()
	sums := index.ContentSums{}
	for _, l := range m.Layers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("download prebuilt index %s: %w", art.DigestStr(), err)
		}
		dst, file := path, ""
		if title := l.Annotations[annotationTitle]; title != databaseTitle {
			file = strings.TrimPrefix(title, contentPrefix)
			dst = filepath.Join(index.ContentDir(path), file)
		}
		if dec == nil && isCompressed(l) {
			if dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow)); err != nil {
				return nil, fmt.Errorf("download prebuilt index: %w", err)
			}
		}
		crc, err := downloadLayer(art.Context().Digest(l.Digest.String()), l, dst, in, dec, opts)
		if err != nil {
			return nil, fmt.Errorf("download prebuilt index %s: %w", art.DigestStr(), err)
		}
		if file != "" {
			sums[file] = crc
		}
	}
	return sums, nil
}

// manifest fetches the artifact's manifest and checks that it is a
// prebuilt index of the catalog at subject, of this binary's schema,
// whose layers name files of an index version within the download limit
// and, decompressed, within the limit of bytes written.
func (c *Client) manifest(art, subject name.Digest, opts []remote.Option) (*v1.Manifest, error) {
	desc, err := remote.Get(art, opts...)
	if err != nil {
		return nil, fmt.Errorf("fetch prebuilt index manifest %s: %w", art.DigestStr(), err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", ErrRefused, art.DigestStr(), err)
	}
	if err := c.checkManifest(&m, subject.DigestStr()); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", ErrRefused, art.DigestStr(), err)
	}
	var total, written int64
	for _, l := range m.Layers {
		total += l.Size
		if l.Size < 0 || total > c.reg.MaxDownloadBytes() {
			return nil, fmt.Errorf("%w: manifest %s: its layers declare more than the download limit of %d bytes", ErrRefused, art.DigestStr(), c.reg.MaxDownloadBytes())
		}
		size, _ := fileSize(l) // checkManifest checked it
		if written += size; written > maxIndexBytes(c.reg.MaxTotalBytes()) {
			return nil, fmt.Errorf("%w: manifest %s: its files come to more than the limit of %d bytes written (twice --max-catalog-bytes)", ErrRefused, art.DigestStr(), maxIndexBytes(c.reg.MaxTotalBytes()))
		}
	}
	return &m, nil
}

// maxIndexBytes bounds the files of a prebuilt index of a catalog whose
// files may come to catalogBytes: twice that. A build writes about 1.1
// times the catalog's JSON (the content, its gzip copy and the database:
// 1.39 GB for the 1.3 GB CRD bench catalog), so a bound of the catalog's
// own would send a catalog near --max-catalog-bytes to a local build that
// writes as much; the factor still stops an artifact that lies about its
// sizes long before a disk fills.
func maxIndexBytes(catalogBytes int64) int64 {
	if catalogBytes > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * catalogBytes
}

// checkManifest checks what a prebuilt index's manifest says about
// itself; the files' agreement with each other is index.Adopt's to check.
func (c *Client) checkManifest(m *v1.Manifest, digest string) error {
	switch {
	case m.ArtifactType != ArtifactType && string(m.Config.MediaType) != ArtifactType:
		return fmt.Errorf("artifact type %q, not %q", m.ArtifactType, ArtifactType)
	case m.Subject == nil || m.Subject.Digest.String() != digest:
		return fmt.Errorf("its subject is not the catalog %s", digest)
	case m.Annotations[AnnotationCatalog] != digest:
		return fmt.Errorf("annotation %s is %q, not the catalog %s", AnnotationCatalog, m.Annotations[AnnotationCatalog], digest)
	case m.Annotations[AnnotationSchema] != c.schema:
		return fmt.Errorf("%w: annotation %s is %q, this catalogd reads %s", ErrOtherSchema, AnnotationSchema, m.Annotations[AnnotationSchema], c.schema)
	case len(m.Layers) > maxLayers:
		return fmt.Errorf("%d layers, more than an index has (%d)", len(m.Layers), maxLayers)
	}
	seen := map[string]bool{}
	for i, l := range m.Layers {
		title := l.Annotations[annotationTitle]
		want := ContentMediaType
		if title == databaseTitle {
			want = DatabaseMediaType
		} else if file, ok := strings.CutPrefix(title, contentPrefix); !ok || !validFileName(file) {
			return fmt.Errorf("layer %d is named %q, not %s or %s<file>", i, title, databaseTitle, contentPrefix)
		}
		switch {
		case string(l.MediaType) != want && string(l.MediaType) != want+ZstdSuffix:
			return fmt.Errorf("layer %d (%s) has media type %q, not %q or %q", i, title, l.MediaType, want, want+ZstdSuffix)
		case seen[title]:
			return fmt.Errorf("layer %d names %s again", i, title)
		}
		if _, err := fileSize(l); err != nil {
			return fmt.Errorf("layer %d (%s): %w", i, title, err)
		}
		seen[title] = true
	}
	if !seen[databaseTitle] {
		return fmt.Errorf("no layer is the database (%s)", databaseTitle)
	}
	return nil
}

// isCompressed reports whether the layer l is its file compressed with
// zstd.
func isCompressed(l v1.Descriptor) bool { return strings.HasSuffix(string(l.MediaType), ZstdSuffix) }

// fileSize is the size of the file the layer l holds: a compressed
// layer's recorded size (AnnotationSize), another's own.
func fileSize(l v1.Descriptor) (int64, error) {
	if !isCompressed(l) {
		return l.Size, nil
	}
	size, err := strconv.ParseInt(l.Annotations[AnnotationSize], 10, 64)
	if err != nil || size < 0 {
		return 0, fmt.Errorf("annotation %s is %q, not the size of its file", AnnotationSize, l.Annotations[AnnotationSize])
	}
	return size, nil
}

// validFileName reports whether name is a plain file name: no directory,
// no parent, nothing hidden, so that a layer is written only inside the
// content directory.
func validFileName(name string) bool {
	return name != "" && name == filepath.Base(name) && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, `/\`)
}

// downloadLayer writes the file the layer l at d holds into a new file at
// dst, and returns the CRC-32 of what it wrote. The blob is read no
// further than the size its descriptor declares, and checked against its
// digest by go-containerregistry as it is read to its end; a compressed
// one is decompressed with dec, and the file must come to the size
// recorded for it (fileSize), no byte more written. The blob is read
// through in, which Download keeps from one layer to the next.
func downloadLayer(d name.Digest, l v1.Descriptor, dst string, in *bufio.Reader, dec *zstd.Decoder, opts []remote.Option) (uint32, error) {
	size, err := fileSize(l)
	if err != nil {
		return 0, fmt.Errorf("%w: layer %s: %w", ErrRefused, d.DigestStr(), err)
	}
	layer, err := remote.Layer(d, opts...)
	if err != nil {
		return 0, fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return 0, fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	}
	defer rc.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	}
	reserve(f, size)
	in.Reset(io.LimitReader(rc, l.Size+1))
	blob := &countingReader{r: in}
	out := &fileWriter{f: f, crc: crc32.NewIEEE(), limit: size}
	if isCompressed(l) {
		err = decompress(dec, blob, out)
	} else {
		_, err = io.CopyBuffer(out, blob, make([]byte, copyBuffer))
	}
	if err == nil {
		// What the frames left unread, so that the blob's size is
		// counted and its digest checked, at its end.
		_, err = io.Copy(io.Discard, blob)
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	switch {
	case errors.Is(err, errTooLarge):
		return 0, fmt.Errorf("%w: layer %s comes to more than the %d bytes recorded for its file", ErrRefused, d.DigestStr(), size)
	case err != nil:
		return 0, fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	case blob.n != l.Size:
		return 0, fmt.Errorf("%w: layer %s is not of the %d bytes its descriptor declares", ErrRefused, d.DigestStr(), l.Size)
	case out.n != size:
		return 0, fmt.Errorf("%w: layer %s comes to %d bytes, not the %d recorded for its file", ErrRefused, d.DigestStr(), out.n, size)
	}
	return out.crc.Sum32(), nil
}

// decompress writes what the zstd stream in decompresses to into out:
// data that zstd cannot decompress is refused; a failure to read or
// write is the reader's or the writer's.
func decompress(dec *zstd.Decoder, in *countingReader, out *fileWriter) error {
	err := dec.Reset(in)
	if err == nil {
		_, err = dec.WriteTo(out)
	}
	switch {
	case err == nil:
		return nil
	case in.err != nil:
		return in.err
	case out.err != nil:
		return out.err
	}
	return fmt.Errorf("%w: decompress: %w", ErrRefused, err)
}

// copyBuffer is the buffer of an uncompressed layer's copy: the size of
// zstd's blocks, which the compressed layers are written in; a buffer
// that stays in the core's cache between its read and its write costs
// less CPU than fewer, larger calls.
const copyBuffer = 128 << 10

// readBuffer is the buffer the blobs are read through. The zstd decoder
// reads each compressed block as two reads of their exact sizes (a 3-byte
// header, then some kilobytes), which straight from the connection made
// about 20,000 system calls for the 1.3 GB catalog of CRD objects; read
// through this buffer each takes what the socket holds, up to its size.
const readBuffer = 256 << 10

// errTooLarge stops a file that comes to more than its recorded size.
var errTooLarge = errors.New("the file is larger than its recorded size")

// fileWriter writes a layer's file, refusing to write beyond limit and
// taking the CRC-32 of what it writes; err is the first error it
// returned.
type fileWriter struct {
	f        *os.File
	crc      hash.Hash32
	n, limit int64
	err      error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > w.limit-w.n {
		w.err = errTooLarge
		return 0, w.err
	}
	w.crc.Write(p)
	n, err := w.f.Write(p)
	w.n += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

// countingReader counts the bytes read from r; err is the first error
// but io.EOF it returned.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// Reason names, for a metric label, why err left a catalog without a
// prebuilt index: "absent", "other-schema", "unreachable", "refused"
// (a check failed) or "failed" (a download or a write).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrNotPublished):
		return "absent"
	case errors.Is(err, ErrOtherSchema), errors.Is(err, index.ErrOtherSchema):
		return "other-schema"
	case errors.Is(err, ErrUnreachable):
		return "unreachable"
	case errors.Is(err, ErrRefused), errors.Is(err, index.ErrRefused):
		return "refused"
	}
	return "failed"
}
