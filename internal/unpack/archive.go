package unpack

import (
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
// (a CorruptLayerError for bytes that are no archive, "layer 0" in its
// text), a failed read of r is not.
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
		return Result{}, fmt.Errorf("extracting archive: %w", &CorruptLayerError{Layer: 0, Err: de.err})
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
