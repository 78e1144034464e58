// Package chunkcopy copies a file into an HTTP answer a bounded piece at a
// time without losing sendfile. net/http's ResponseWriter sends an
// *os.File with sendfile on a plain connection only when it is handed the
// file itself, or one *io.LimitedReader directly over it; a writer that
// wants to act between pieces (check that the request is still wanted,
// move a write deadline) must therefore pass each piece on as one such
// LimitedReader, not copy through a buffer of its own.
package chunkcopy

import (
	"io"
	"math"
)

// ReadFrom copies src into rf, at most chunk bytes at a time, calling
// before ahead of each piece and stopping at its first error. A src that
// is already an *io.LimitedReader is cut into pieces over its reader, so
// that a piece is never a LimitedReader over another one.
func ReadFrom(rf io.ReaderFrom, src io.Reader, chunk int64, before func() error) (int64, error) {
	lr, ok := src.(*io.LimitedReader)
	if !ok {
		lr = &io.LimitedReader{R: src, N: math.MaxInt64}
	}
	var total int64
	for lr.N > 0 {
		if err := before(); err != nil {
			return total, err
		}
		piece := min(lr.N, chunk)
		n, err := rf.ReadFrom(&io.LimitedReader{R: lr.R, N: piece})
		total += n
		lr.N -= n
		if err != nil || n < piece {
			return total, err
		}
	}
	return total, nil
}
