package unpack

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// maxZstdWindow bounds the memory a zstd frame can make the decoder
// allocate. Layers written by image builders use windows of 8 MiB or less.
const maxZstdWindow = 64 << 20

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// compressedLayer is the part of v1.Layer that Unpack reads: the blob as
// downloaded, which go-containerregistry checks against the digest (and the
// size from the manifest) when it reaches its end.
type compressedLayer interface {
	Compressed() (io.ReadCloser, error)
}

// readBudget counts the uncompressed bytes read from all layers of one
// image, so that a small layer that decompresses to a huge stream (a
// "decompression bomb", or megabytes of padding after the tar end) is
// stopped however much of it lies outside the configs directory.
type readBudget struct {
	left, max int64
}

// layerStream is the decompressed stream of one layer. It checks ctx on
// every read, so that cancellation is seen inside a large entry too, charges
// the read budget, and remembers the first error from the download below
// (as opposed to one from decompression), so that a failure can be blamed
// on the right one.
type layerStream struct {
	ctx     context.Context
	budget  *readBudget
	layer   int
	archive bool
	r       io.Reader
}

func (s *layerStream) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	if s.budget.left <= 0 {
		what := fmt.Sprintf("the decompressed content of layers 0 to %d", s.layer)
		if s.archive {
			what = "the decompressed archive"
		}
		return 0, &LimitError{Limit: "MaxUncompressedBytes", Max: s.budget.max, Entry: what}
	}
	if int64(len(p)) > s.budget.left {
		p = p[:s.budget.left]
	}
	n, err := s.r.Read(p)
	s.budget.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		err = &decodeError{err: err}
	}
	return n, err
}

// decodeError marks an error that came out of reading the layer stream: from
// the download, the decompressor or, via tar, the tar format itself.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// downloadReader remembers the first error of the compressed download.
type downloadReader struct {
	r   io.Reader
	err error
}

func (d *downloadReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && d.err == nil {
		d.err = err
	}
	return n, err
}

// applyLayer streams one layer into x. It decompresses itself, rather than
// through go-containerregistry's Uncompressed, to bound the zstd window and
// to tell a broken download (retryable) from a broken image (terminal): when
// reading fails, the rest of the blob is read so that the digest check
// decides. It drains the stream after the tar end marker because the digest
// is checked only when the blob has been read to its end.
func applyLayer(ctx context.Context, x *extractor, index int, layer compressedLayer, budget *readBudget) error {
	rc, err := layer.Compressed()
	if err != nil {
		return fmt.Errorf("fetching layer %d: %w", index, err)
	}
	defer rc.Close()
	dl := &downloadReader{r: rc}
	err = extractLayer(ctx, x, index, dl, budget)
	if err == nil {
		return nil
	}
	var de *decodeError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("layer %d: %w", index, ctx.Err())
	case dl.err != nil:
		return fmt.Errorf("downloading layer %d: %w", index, dl.err)
	case !errors.As(err, &de):
		return err
	}
	var le *LimitError
	if errors.As(err, &le) {
		return err
	}
	if _, drainErr := io.Copy(io.Discard, dl); drainErr != nil {
		return fmt.Errorf("downloading layer %d: %w", index, drainErr)
	}
	return &CorruptLayerError{Layer: index, Err: de.err}
}

func extractLayer(ctx context.Context, x *extractor, index int, compressed io.Reader, budget *readBudget) error {
	br := bufio.NewReader(compressed)
	magic, err := br.Peek(len(zstdMagic))
	if err != nil && !errors.Is(err, io.EOF) {
		return &decodeError{err: err}
	}
	var raw io.Reader = br
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return &decodeError{err: fmt.Errorf("gzip: %w", err)}
		}
		defer gz.Close()
		raw = gz
	case bytes.HasPrefix(magic, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return &decodeError{err: fmt.Errorf("zstd: %w", err)}
		}
		defer zr.Close()
		raw = zr
	}
	stream := &layerStream{ctx: ctx, budget: budget, layer: index, archive: x.archive, r: raw}
	if err := x.apply(ctx, index, stream); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return fmt.Errorf("reading %s to its end: %w", x.part(), err)
	}
	return nil
}
