package unpack

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrEmptyArchive is returned by ExtractArchive for an archive that holds
// no entry at all. It is terminal: the same bytes are always empty.
var ErrEmptyArchive = errors.New("the archive holds no file")

// ExtractArchive extracts one tar stream, plain or compressed with gzip or
// zstd (told by its first bytes), into dst as a catalog directory: the
// archive's root is the catalog's root. It is the one extractor of every
// source that delivers a catalog as an archive (an HTTP download, a git
// tree written as tar, an artifact's layer), so that each gets exactly the
// rules and limits of an image layer: only plain files, directories and
// links that resolve inside dst; MaxTotalBytes, MaxFiles and
// MaxUncompressedBytes; the same depth and name checks; whiteouts are
// applied as in a single layer.
//
// dst must not exist; it is created, and removed again on any failure. The
// caller bounds the download itself (its size and time): r is read to its
// end, or until a limit stops it. Errors are classified by IsTerminal as an
// image layer's are: anything decided by the archive's bytes is terminal
// (a CorruptLayerError, with Archive set, for bytes that are no archive),
// a failed read of r is not.
func (u *Unpacker) ExtractArchive(ctx context.Context, r io.Reader, dst string) (res Result, err error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Result{}, fmt.Errorf("extracting archive: creating parent of destination: %w", withoutPath(err))
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return Result{}, fmt.Errorf("extracting archive: creating destination: %w", withoutPath(err))
	}
	defer func() {
		if err != nil {
			if rmErr := os.RemoveAll(dst); rmErr != nil {
				u.log.Error(rmErr, "removing partially extracted archive", "dst", dst)
			}
		}
	}()
	root, err := os.OpenRoot(dst)
	if err != nil {
		return Result{}, fmt.Errorf("extracting archive: opening destination: %w", withoutPath(err))
	}
	defer root.Close()

	x := newExtractor(root, ".", u.maxBytes, u.maxFiles)
	defer x.closeParent()
	x.archive = true
	budget := &readBudget{left: u.maxUncompressed, max: u.maxUncompressed}
	dl := &downloadReader{r: r}
	if err := extractLayer(ctx, x, 0, dl, budget); err != nil {
		var de *decodeError
		var le *LimitError
		switch {
		case ctx.Err() != nil:
			return Result{}, fmt.Errorf("extracting archive: %w", ctx.Err())
		case dl.err != nil:
			return Result{}, fmt.Errorf("extracting archive: reading it: %w", dl.err)
		case errors.As(err, &le) || !errors.As(err, &de):
			return Result{}, fmt.Errorf("extracting archive: %w", err)
		}
		return Result{}, fmt.Errorf("extracting archive: %w", &CorruptLayerError{Archive: true, Err: de.err})
	}
	if !x.seen {
		return Result{}, fmt.Errorf("extracting archive: %w", ErrEmptyArchive)
	}
	files, size, hashes, err := x.finish()
	if err != nil {
		return Result{}, fmt.Errorf("extracting archive: %w", err)
	}
	res.Files, res.Bytes, res.hashes = files, size, hashes
	return res, nil
}

// FileArchive is one regular file, name, of exactly size bytes read from
// r, as a tar stream: how a source that has a single file (an HTTP
// download of one FBC file, an artifact layer named by its title) puts it
// through the extractor, and its rules and limits, as an archive. The
// header comes first, then r, then the padding and end-of-archive blocks;
// nothing is copied. r is read to its end, so that a reader checking a
// digest when it reaches its end checks it; more or fewer bytes than size
// fail the read.
func FileArchive(name string, size int64, r io.Reader) (io.Reader, error) {
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, Format: tar.FormatPAX}); err != nil {
		return nil, fmt.Errorf("making a tar header for %s: %w", name, err)
	}
	// tw is left unclosed: Close wants the body written through it. The
	// stream ends as Close would end it.
	pad := (tarBlock - size%tarBlock) % tarBlock
	return io.MultiReader(&hdr, &exactReader{r: r, left: size}, bytes.NewReader(make([]byte, pad+2*tarBlock))), nil
}

const tarBlock = 512

// exactReader yields exactly left bytes of r, and reads r to its end.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left == 0 {
		var one [1]byte
		n, err := io.ReadFull(e.r, one[:])
		switch {
		case n > 0:
			return 0, errors.New("the file is longer than its declared size")
		case errors.Is(err, io.EOF):
			return 0, io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) {
		if e.left > 0 {
			return n, io.ErrUnexpectedEOF
		}
		// Seen the end already: the next Read says so again.
		err = nil
	}
	return n, err
}
