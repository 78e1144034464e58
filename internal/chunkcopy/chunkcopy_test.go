package chunkcopy

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// pieceRecorder is a ReaderFrom that notes the size limit of every piece it
// is handed and fails if a piece is not one LimitedReader directly over the
// source, which is what net/http needs to send a file with sendfile.
type pieceRecorder struct {
	t      *testing.T
	source io.Reader
	buf    bytes.Buffer
	pieces []int64
}

func (p *pieceRecorder) ReadFrom(r io.Reader) (int64, error) {
	lr, ok := r.(*io.LimitedReader)
	if !ok || lr.R != p.source {
		p.t.Fatalf("piece %T is not one LimitedReader over the source", r)
	}
	p.pieces = append(p.pieces, lr.N)
	return p.buf.ReadFrom(r)
}

func TestReadFrom(t *testing.T) {
	errStop := errors.New("stop")
	for _, tc := range []struct {
		name string
		size int
		// limit, if set, hands ReadFrom a LimitedReader of that many bytes.
		limit      int64
		chunk      int64
		stopBefore int // stop before this piece (1-based), if set
		wantPieces []int64
		wantBytes  int
		wantErr    error
	}{
		{name: "exact pieces", size: 30, chunk: 10, wantPieces: []int64{10, 10, 10, 10}, wantBytes: 30},
		{name: "short last piece", size: 25, chunk: 10, wantPieces: []int64{10, 10, 10}, wantBytes: 25},
		{name: "limited source", size: 25, limit: 12, chunk: 10, wantPieces: []int64{10, 2}, wantBytes: 12},
		{name: "limit past the end", size: 5, limit: 12, chunk: 10, wantPieces: []int64{10}, wantBytes: 5},
		{name: "empty", size: 0, chunk: 10, wantPieces: []int64{10}, wantBytes: 0},
		{name: "stopped before the second piece", size: 25, chunk: 10, stopBefore: 2, wantPieces: []int64{10}, wantBytes: 10, wantErr: errStop},
		{name: "stopped before any", size: 25, chunk: 10, stopBefore: 1, wantBytes: 0, wantErr: errStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Repeat("x", tc.size)
			source := strings.NewReader(data)
			rec := &pieceRecorder{t: t, source: source}
			var src io.Reader = source
			if tc.limit > 0 {
				src = &io.LimitedReader{R: source, N: tc.limit}
			}
			calls := 0
			n, err := ReadFrom(rec, src, tc.chunk, func() error {
				calls++
				if calls == tc.stopBefore {
					return errStop
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if n != int64(tc.wantBytes) || rec.buf.Len() != tc.wantBytes || rec.buf.String() != data[:tc.wantBytes] {
				t.Errorf("copied %d bytes (%d received), want %d", n, rec.buf.Len(), tc.wantBytes)
			}
			if !slices.Equal(rec.pieces, tc.wantPieces) {
				t.Errorf("pieces %v, want %v", rec.pieces, tc.wantPieces)
			}
		})
	}
}
