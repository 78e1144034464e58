package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/catalogd/catalogd/internal/chunkcopy"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

// The catalogd-compatible endpoints serve the stored blobs byte for byte:
// OLM v1's catalogd encoding (compact JSON, sorted keys, one per line, in
// walk order), so existing clients get the same bytes as from catalogd.
//
// Their memory is bounded by design, whatever the catalog's size: the bytes
// go from the index's content (or its gzip copy), segment file by segment
// file (index.Stream), to the connection through contentWriter, never
// through a buffer of the answer's size. Over plain HTTP net/http hands
// each file to the kernel (sendfile) and the bytes never enter the
// process. Over TLS, the deployed mode, they cannot:
// crypto/tls encrypts in user space and has no sendfile, so net/http reads
// the file through a 32 KiB buffer of its own and every byte is copied,
// encrypted and written. That costs CPU, not memory: BenchmarkBulk on a
// 100 MB catalog (2 busy cores, client in the same process) sent /all at
// 130-190 MiB/s over TLS against 280-530 MiB/s over plain HTTP, no slower
// than http.ServeFile over the same TLS listener (30-240 MiB/s), and 8
// clients took the same peak RSS either way (54-60 MiB). One answer holds a file descriptor and,
// besides net/http's own per-connection buffers (and crypto/tls's record
// buffers), at most: the list of byte ranges of /metas (16 bytes per run of
// adjacent matching blobs, so at most 16 bytes per blob of the catalog and
// in practice a few runs per package), and for a gzip /metas one pooled
// compressor (about 1 MiB) and a 32 KiB copy buffer. So serving memory
// grows with the number of concurrent answers, about 1 MiB each at worst,
// and not with the bytes they send (BenchmarkBulk measures the peak RSS
// with 8 clients).
const jsonlType = "application/jsonl"

// serveAll answers the /all stream: the index's content, which is the
// stream byte for byte, through http.ServeContent, so Range and the
// conditional headers work as for any file and the bytes go from the
// segment files to the connection as any file's do (sendfile over plain
// HTTP, see contentWriter; see the comment on jsonlType for TLS). A client
// that takes gzip gets the content's gzip copy, compressed when the index
// was built, with its Content-Length and its own strong ETag. (A
// multi-range answer is the exception to sendfile: net/http builds its
// multipart body through a pipe, 32 KiB at a time.)
func (s *Server) serveAll(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
	etag := requestETag(snap.Info.Digest, r)
	cw := &contentWriter{ResponseWriter: w, ctx: r.Context()}
	// gzip only whole answers; a Range answer is plain, as byte offsets
	// refer to the plain stream.
	if acceptsGzip(r) && r.Header.Get("Range") == "" {
		if notModified(w, r, etag, snap.Info.BuiltAt) {
			return nil
		}
		return serveWhole(cw, r, snap.ContentGzip(), func(h http.Header) {
			setValidators(w, representationETag(etag, true), snap.Info.BuiltAt)
			h.Set("Content-Type", jsonlType)
			h.Set("Content-Encoding", "gzip")
		})
	}
	setValidators(w, representationETag(etag, false), snap.Info.BuiltAt)
	w.Header().Set("Content-Type", jsonlType)
	return serveRanged(cw, r, snap.Info.BuiltAt, snap.Content(), snap.Info.AllBytes)
}

// serveWhole answers the whole stream, with its Content-Length and the
// headers setHeaders sets.
func serveWhole(w http.ResponseWriter, r *http.Request, stream *index.StreamReader, setHeaders func(http.Header)) error {
	setHeaders(w.Header())
	w.Header().Set("Content-Length", strconv.FormatInt(stream.Size(), 10))
	if r.Method == http.MethodHead {
		return nil
	}
	_, err := io.CopyN(w, stream, stream.Size())
	return abortOnError(err)
}

// copyChunk is how many bytes of a file contentWriter hands the connection
// at a time: enough that copying costs a system call per chunk, not per
// buffer (BenchmarkBulk: 256 KiB chunks made gzip /all 1.5x slower than
// http.ServeFile of the same bytes, 1 MiB ones 1.2x), and little enough
// that an answer stops soon after its request's context ends.
const copyChunk = 1 << 20

// contentWriter is the ResponseWriter of answers copied from files. Its
// ReadFrom passes the file on to the ReadFrom of the writer below,
// copyChunk bytes at a time, checking the request's context between
// chunks: net/http sends an *os.File behind an io.LimitedReader with
// sendfile on a plain connection, and on a TLS one copies it through a
// 32 KiB buffer of its own. A range of an index's content or gzip copy
// (an *index.StreamReader, bare or behind an io.LimitedReader, as
// http.ServeContent's io.CopyN hands it over) is passed on segment file by
// segment file, each as such a file. Below a writer without ReadFrom it
// copies through Write, which checks the context at every write. So a copy
// needs no buffer of its own, and an answer stops when its request's
// context ends, whatever the connection does.
type contentWriter struct {
	http.ResponseWriter
	ctx context.Context
}

func (w *contentWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.ResponseWriter.Write(p)
}

func (w *contentWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{w}, src)
	}
	copyPiece := func(piece *io.LimitedReader) (int64, error) {
		return chunkcopy.ReadFrom(rf, piece, copyChunk, w.ctx.Err)
	}
	switch src := src.(type) {
	case *index.StreamReader:
		return src.CopyN(src.Size(), copyPiece)
	case *io.LimitedReader:
		if stream, ok := src.R.(*index.StreamReader); ok {
			n, err := stream.CopyN(src.N, copyPiece)
			src.N -= n
			return n, err
		}
	}
	return chunkcopy.ReadFrom(rf, src, copyChunk, w.ctx.Err)
}

func (w *contentWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
	if strings.Contains(rangeHeader, ",") {
		// More than one range: net/http copies the parts in a goroutine
		// of its own, which ServeContent does not wait for.
		gate := &readGate{r: content}
		defer gate.shut()
		content = gate
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

// readGate passes reads and seeks on to r until it is shut, and fails them
// after. http.ServeContent answers several ranges through a pipe filled by
// a goroutine of its own, and on a failed write or an ended request it
// returns with that goroutine possibly still reading the content; the
// handler then releases its snapshot, which closes the content's files.
// Shutting the gate before that makes the goroutine's next read fail (and
// it stop), and waits for a read under way, so no read outlives the
// snapshot.
type readGate struct {
	mu     sync.Mutex
	r      io.ReadSeeker
	closed bool
}

// errAnswerEnded is what the gate's reads fail with once the answer ended.
var errAnswerEnded = errors.New("read content: the answer has ended")

func (g *readGate) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, errAnswerEnded
	}
	return g.r.Read(p)
}

func (g *readGate) Seek(offset int64, whence int) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, errAnswerEnded
	}
	return g.r.Seek(offset, whence)
}

// shut fails every later read and seek, once a read or seek under way has
// returned.
func (g *readGate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
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

// ReadFrom keeps the ReadFrom of the writer below for the answer's body,
// which http.ServeContent copies with io.CopyN.
func (e *errorHolder) ReadFrom(src io.Reader) (int64, error) {
	if e.status != 0 {
		return io.Copy(struct{ io.Writer }{e}, src)
	}
	return io.Copy(e.ResponseWriter, src)
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
// empty filter value matches everything, as in catalogd. The blobs are
// copied from the index's content file, a range of adjacent blobs at a
// time (see query.Catalog.BlobRanges): a plain answer has a
// Content-Length and goes from the file to the connection as /all does
// (sendfile over plain HTTP only); a gzip one goes through the
// compressor, and a HEAD of one stops before it. Either way the server
// holds the list of ranges (16 bytes per run of adjacent matching blobs)
// and a compressor at most, never the answer, and no query is open while
// it writes.
func (s *Server) serveMetas(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
	q := r.URL.Query()
	filter := query.BlobFilter{Schema: q.Get("schema"), Package: q.Get("package"), Name: q.Get("name")}
	etag, modified := requestETag(snap.Info.Digest, r), snap.Info.BuiltAt
	if filter.Package != "" {
		// The blobs of one package: its version names them (packageJSON).
		var err error
		if etag, modified, err = packageETag(r.Context(), snap, filter.Package, r); err != nil {
			return fmt.Errorf("read metas: %w", err)
		}
	}
	if notModified(w, r, etag, modified) {
		return nil
	}
	ranges, err := snap.Catalog.BlobRanges(r.Context(), filter)
	if err != nil {
		return fmt.Errorf("read metas: %w", err) // nothing sent yet: answer a problem
	}
	content := snap.Content()
	gz := acceptsGzip(r)
	setValidators(w, representationETag(etag, gz), modified)
	w.Header().Set("Content-Type", jsonlType)
	cw := &contentWriter{ResponseWriter: w, ctx: r.Context()}
	if gz {
		w.Header().Set("Content-Encoding", "gzip")
		// A gzip answer has no Content-Length to give, so a HEAD has all
		// its headers already; compressing the answer would only have
		// net/http drop it.
		if r.Method == http.MethodHead {
			return nil
		}
		zw := s.gzip.get(cw)
		defer s.gzip.put(zw)
		buf := make([]byte, 32<<10)
		for _, rg := range ranges {
			if _, err := io.CopyBuffer(zw, io.NewSectionReader(content, rg.Offset, rg.Length), buf); err != nil {
				return abortOnError(err)
			}
		}
		return abortOnError(zw.Close())
	}
	var size int64
	for _, rg := range ranges {
		size += rg.Length
	}
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	if r.Method == http.MethodHead {
		return nil
	}
	for _, rg := range ranges {
		if _, err := content.Seek(rg.Offset, io.SeekStart); err != nil {
			return abortOnError(err)
		}
		if _, err := io.CopyN(cw, content, rg.Length); err != nil {
			return abortOnError(err)
		}
	}
	return nil
}
