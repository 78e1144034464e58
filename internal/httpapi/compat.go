package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/catalogd/catalogd/internal/catalogdb"

	"github.com/catalogd/catalogd/internal/store"
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
	snap *store.Snapshot
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
	var chunk catalogdb.AllChunk
	var err error
	switch {
	case a.pos >= a.bufStart && a.pos < end:
		chunk = catalogdb.AllChunk{Data: a.buf, Offset: a.bufStart, NextID: a.nextID}
	case a.pos == end && a.buf != nil:
		chunk, err = a.snap.Catalog.AllNext(a.ctx, a.nextID, allBatch, a.buf)
	default:
		chunk, err = a.snap.Catalog.AllFrom(a.ctx, a.pos, allBatch, a.buf)
	}
	if err != nil {
		return 0, err
	}
	if len(chunk.Data) == 0 || a.pos < chunk.Offset || a.pos >= chunk.Offset+int64(len(chunk.Data)) {
		return 0, fmt.Errorf("read blobs: nothing at offset %d of %d", a.pos, a.size)
	}
	a.buf, a.bufStart, a.nextID = chunk.Data, chunk.Offset, chunk.NextID
	n := copy(p, a.buf[a.pos-a.bufStart:])
	a.pos += int64(n)
	return n, nil
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

func (s *Server) serveAll(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
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
	return serveRanged(w, r, snap.Info.BuiltAt, reader, snap.Info.AllBytes)
}

// serveRanged answers content (size bytes) through http.ServeContent, which
// implements Range, If-Range and the conditional headers, once checkRanges
// has let the Range header through. ServeContent writes its own error
// answers (416, 412) as text/plain; they are held back and returned as
// problems, so that these endpoints answer errors like every other.
func serveRanged(w http.ResponseWriter, r *http.Request, modified time.Time, content io.ReadSeeker, size int64) error {
	rangeHeader := r.Header.Get("Range")
	if unit, _, ok := strings.Cut(rangeHeader, "="); ok && !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		// RFC 9110 §14.2: a Range in a unit the server does not support is
		// ignored; ServeContent would refuse it.
		r = r.Clone(r.Context())
		r.Header.Del("Range")
		rangeHeader = ""
	}
	// RFC 9110 §15.5.17: a 416 gives the length, so the client can ask again.
	contentRange := fmt.Sprintf("bytes */%d", size)
	if err := checkRanges(rangeHeader, size); err != nil {
		w.Header().Set("Content-Range", contentRange)
		return err
	}
	ew := &errorHolder{ResponseWriter: w}
	http.ServeContent(ew, r, "", modified, content)
	switch ew.status {
	case 0:
		return nil
	case http.StatusRequestedRangeNotSatisfiable:
		w.Header().Set("Content-Range", contentRange)
		return rangeProblem("Range %s cannot be answered from the %d bytes of the content: %s",
			quoteShort(rangeHeader), size, strings.TrimSpace(ew.text.String()))
	case http.StatusPreconditionFailed:
		param, detail := "If-Unmodified-Since", "the content changed after the If-Unmodified-Since date"
		if r.Header.Get("If-Match") != "" {
			param, detail = "If-Match", "If-Match names no ETag of the current content"
		}
		return &problem{status: http.StatusPreconditionFailed, typ: "precondition-failed", param: param, detail: detail}
	default:
		return fmt.Errorf("serve content: status %d: %s", ew.status, strings.TrimSpace(ew.text.String()))
	}
}

func rangeProblem(format string, args ...any) *problem {
	return &problem{status: http.StatusRequestedRangeNotSatisfiable, typ: "range-not-satisfiable", param: "Range", detail: fmt.Sprintf(format, args...)}
}

// errorHolder passes an answer through unless its status is an error: then
// it keeps the status and the start of the body instead of sending them.
type errorHolder struct {
	http.ResponseWriter
	status int
	text   bytes.Buffer
}

// maxHeldText bounds the error text kept; ServeContent's are one line.
const maxHeldText = 256

func (e *errorHolder) WriteHeader(code int) {
	if code >= http.StatusBadRequest {
		e.status = code
		return
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *errorHolder) Write(p []byte) (int, error) {
	if e.status == 0 {
		return e.ResponseWriter.Write(p)
	}
	e.text.Write(p[:min(len(p), max(0, maxHeldText-e.text.Len()))])
	return len(p), nil
}

func (e *errorHolder) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// quoteShort quotes a header value for a problem detail, cut to a length
// worth reading: the client knows what it sent.
func quoteShort(s string) string {
	const maxLen = 80
	if len(s) > maxLen {
		return strconv.Quote(s[:maxLen]) + "…"
	}
	return strconv.Quote(s)
}

// maxRanges is the most ranges one request may ask for. Resuming a
// download takes one; each range costs a seek and a batch of blobs read,
// so a long list of small ranges multiplies the work of one request.
const maxRanges = 16

// checkRanges rejects, with 416, a Range header of more than maxRanges
// ranges or of ranges that overlap (RFC 9110 §14.2 lets a server reject
// both: they are signs of a broken client or of an attack), or with a
// suffix range of 0 bytes. Anything else, including syntax errors, is left
// to http.ServeContent, which answers them as RFC 9110 says.
func checkRanges(header string, size int64) error {
	spec, ok := strings.CutPrefix(header, "bytes=")
	if !ok {
		return nil
	}
	parts := strings.Split(spec, ",")
	if len(parts) > maxRanges {
		return rangeProblem("Range asks for %d ranges; at most %d are answered", len(parts), maxRanges)
	}
	type span struct{ from, to int64 } // inclusive
	var spans []span
	for _, p := range parts {
		first, last, ok := strings.Cut(strings.TrimSpace(p), "-")
		if !ok {
			return nil
		}
		var sp span
		switch {
		case first == "": // the last N bytes
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil {
				return nil
			}
			if n == 0 {
				// RFC 9110 §14.1.3: not satisfiable. http.ServeContent
				// answers it with an empty 206 whose Content-Range ends
				// before it starts.
				return rangeProblem("Range asks for the last 0 bytes (%q), which is no bytes at all", strings.TrimSpace(p))
			}
			sp = span{max(0, size-n), size - 1}
		default:
			from, err := strconv.ParseInt(first, 10, 64)
			if err != nil {
				return nil
			}
			sp = span{from, size - 1}
			if last != "" {
				to, err := strconv.ParseInt(last, 10, 64)
				if err != nil {
					return nil
				}
				sp.to = min(to, size-1)
			}
		}
		for _, o := range spans {
			if sp.from <= o.to && o.from <= sp.to {
				return rangeProblem("Range asks for overlapping ranges (%d-%d and %d-%d); ask for each byte once", o.from, o.to, sp.from, sp.to)
			}
		}
		spans = append(spans, sp)
	}
	return nil
}

// writeGzip streams src gzip-encoded.
func (s *Server) writeGzip(w http.ResponseWriter, r *http.Request, etag string, snap *store.Snapshot, src io.Reader) error {
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
func (s *Server) serveMetas(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
	q := r.URL.Query()
	filter := catalogdb.BlobFilter{Schema: q.Get("schema"), Package: q.Get("package"), Name: q.Get("name")}
	etag := requestETag(snap.Info.Digest, r)
	if notModified(w, r, etag, snap.Info.BuiltAt) {
		return nil
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
	wrote := false
	err := snap.Catalog.Blobs(r.Context(), filter, func(data []byte) error {
		wrote = true
		_, err := dst.Write(data)
		return err
	})
	if err != nil && !wrote {
		return fmt.Errorf("read metas: %w", err) // nothing sent yet: answer a problem
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	return abortOnError(err)
}
