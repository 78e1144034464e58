package query

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/index"
)

// The catalogd-compatible endpoints serve the stored blobs byte for byte:
// OLM v1's catalogd encoding (compact JSON, sorted keys, one per line, in
// walk order), so existing clients get the same bytes as from catalogd.
const jsonlType = "application/jsonl"

// allReader reads the /all stream out of the blobs table as an
// io.ReadSeeker, so http.ServeContent can answer Range requests without
// materialising the stream: a seek finds the blob holding the offset through
// the offset index, and reads go on in blob order, a batch at a time.
type allReader struct {
	ctx  context.Context
	snap *index.Snapshot
	size int64
	pos  int64

	buf      []byte
	bufStart int64 // stream offset of buf[0]
	nextID   int64 // first blob id after buf
}

// allBatch is how many blobs one query fetches while streaming.
const allBatch = 64

func (a *allReader) Read(p []byte) (int, error) {
	if a.pos >= a.size {
		return 0, io.EOF
	}
	end := a.bufStart + int64(len(a.buf))
	switch {
	case a.pos >= a.bufStart && a.pos < end:
	case a.pos == end && a.buf != nil:
		if err := a.fetch(`SELECT id, offset, data FROM blobs WHERE id >= ? ORDER BY id LIMIT ?`, a.nextID, allBatch); err != nil {
			return 0, err
		}
	default:
		if err := a.fetch(`SELECT id, offset, data FROM blobs WHERE id >= (SELECT id FROM blobs WHERE offset <= ? ORDER BY offset DESC LIMIT 1) ORDER BY id LIMIT ?`, a.pos, allBatch); err != nil {
			return 0, err
		}
	}
	n := copy(p, a.buf[a.pos-a.bufStart:])
	a.pos += int64(n)
	return n, nil
}

func (a *allReader) fetch(query string, args ...any) error {
	a.buf = a.buf[:0]
	first := true
	err := a.snap.Each(a.ctx, query, args, func(rows *sqlx.Rows) error {
		var id, offset int64
		var data []byte
		if err := rows.Scan(&id, &offset, &data); err != nil {
			return err
		}
		if first {
			a.bufStart = offset
			first = false
		}
		a.buf = append(a.buf, data...)
		a.nextID = id + 1
		return nil
	})
	if err != nil {
		return fmt.Errorf("read blobs: %w", err)
	}
	if first {
		return fmt.Errorf("read blobs: nothing at offset %d of %d", a.pos, a.size)
	}
	return nil
}

func (a *allReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += a.pos
	case io.SeekEnd:
		offset += a.size
	default:
		return 0, errors.New("seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("seek: negative position")
	}
	a.pos = offset
	return offset, nil
}

func (s *Server) serveAll(w http.ResponseWriter, r *http.Request, snap *index.Snapshot) error {
	etag := requestETag(snap.Info.Digest, r)
	reader := &allReader{ctx: r.Context(), snap: snap, size: snap.Info.AllBytes}
	// gzip only whole answers; a Range answer is plain, as byte offsets
	// refer to the plain stream.
	if acceptsGzip(r) && r.Header.Get("Range") == "" {
		if notModified(w, r, etag, snap.Info.BuiltAt) {
			return nil
		}
		return s.writeGzip(w, r, etag, snap, reader)
	}
	setValidators(w, representationETag(etag, false), snap.Info.BuiltAt)
	w.Header().Set("Content-Type", jsonlType)
	http.ServeContent(w, r, "", snap.Info.BuiltAt, reader)
	return nil
}

// writeGzip streams src gzip-encoded.
func (s *Server) writeGzip(w http.ResponseWriter, r *http.Request, etag string, snap *index.Snapshot, src io.Reader) error {
	setValidators(w, representationETag(etag, true), snap.Info.BuiltAt)
	w.Header().Set("Content-Type", jsonlType)
	w.Header().Set("Content-Encoding", "gzip")
	zw := s.gzip.get(w)
	defer s.gzip.put(zw)
	if _, err := io.Copy(zw, src); err != nil {
		// Headers are gone: the client sees a truncated gzip stream.
		return abortOnError(err)
	}
	return abortOnError(zw.Close())
}

// abortOnError turns an error after the answer began into a panic that
// net/http turns into a reset connection, as nothing else can tell the
// client the body is incomplete.
func abortOnError(err error) error {
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

// serveMetas answers the blobs that match every given filter exactly; an
// empty filter value matches everything, as in catalogd.
func (s *Server) serveMetas(w http.ResponseWriter, r *http.Request, snap *index.Snapshot) error {
	q := r.URL.Query()
	var conds []string
	var args []any
	for _, col := range []string{"schema", "package", "name"} {
		if v := q.Get(col); v != "" {
			conds = append(conds, col+" = ?")
			args = append(args, v)
		}
	}

	etag := requestETag(snap.Info.Digest, r)
	if notModified(w, r, etag, snap.Info.BuiltAt) {
		return nil
	}
	var ids []int64
	if len(conds) > 0 {
		query := `SELECT id FROM blobs WHERE ` + strings.Join(conds, " AND ") + ` ORDER BY id`
		if err := snap.Select(r.Context(), &ids, query, args...); err != nil {
			return fmt.Errorf("read metas: %w", err) // nothing sent yet: answer a problem
		}
	}
	gz := acceptsGzip(r)
	setValidators(w, representationETag(etag, gz), snap.Info.BuiltAt)
	w.Header().Set("Content-Type", jsonlType)
	var dst io.Writer = w
	var zw *gzip.Writer
	if gz {
		w.Header().Set("Content-Encoding", "gzip")
		zw = s.gzip.get(w)
		defer s.gzip.put(zw)
		dst = zw
	}
	var err error
	if len(conds) == 0 {
		// Every blob in id order is the /all stream.
		_, err = io.Copy(dst, &allReader{ctx: r.Context(), snap: snap, size: snap.Info.AllBytes})
	} else {
		err = writeBlobs(r.Context(), snap, dst, ids)
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	return abortOnError(err)
}

// metasBatch is how many blobs writeBlobs reads per query.
const metasBatch = 64

// writeBlobs writes the data of the blobs ids, in order, a batch at a time:
// each batch's rows are closed before it is written, because a client that
// reads slowly or not at all must not hold one of the index's few database
// connections while its writes block; a handful of such clients would
// otherwise stall every request for the catalog.
func writeBlobs(ctx context.Context, snap *index.Snapshot, dst io.Writer, ids []int64) error {
	// A short last batch repeats its last id, so that every batch runs the
	// one cached statement.
	query := `SELECT data FROM blobs WHERE id IN (?` + strings.Repeat(",?", metasBatch-1) + `) ORDER BY id`
	args := make([]any, metasBatch)
	for len(ids) > 0 {
		n := min(len(ids), metasBatch)
		for i := range args {
			args[i] = ids[min(i, n-1)]
		}
		var batch [][]byte
		if err := snap.Select(ctx, &batch, query, args...); err != nil {
			return fmt.Errorf("read metas: %w", err)
		}
		for _, data := range batch {
			if _, err := dst.Write(data); err != nil {
				return err
			}
		}
		ids = ids[n:]
	}
	return nil
}
