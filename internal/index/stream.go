package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Stream is one of an index version's two byte streams, the content (the
// /api/v1/all bytes, where the blobs table locates each blob) or its gzip
// copy, read across the version's segment files as one: ReadAt at stream
// offsets, and CopyRange to send a range file piece by file piece, each
// piece one io.LimitedReader over an *os.File of its own so that net/http
// can send it with sendfile. A Stream holds its segment files open until
// Close; CopyRange opens each file again by name for the position it
// needs, so the version's directory must stay in place meanwhile (package
// store removes it only after its last reader).
type Stream struct {
	parts []streamPart
	size  int64
}

// streamPart is a segment file of a stream, or bytes it holds in memory
// (the gzip header and trailer).
type streamPart struct {
	start, size int64
	path        string
	f           *os.File
	data        []byte
}

// OpenStreams opens the content and the gzip copy of the index at path,
// checking that every segment file its manifest lists is there with the
// size it lists: a version cut short or damaged after it was built fails
// here rather than answer wrong bytes.
func OpenStreams(path string) (content, gz *Stream, err error) {
	dir := ContentDir(path)
	m, err := readManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	c, g := &Stream{}, &Stream{}
	defer func() {
		if err != nil {
			c.Close()
			g.Close()
		}
	}()
	content, gz = c, g
	gz.addData(gzipHeader)
	for _, s := range m.Segments {
		if err := c.addFile(dir, s.Content, s.Size); err != nil {
			return nil, nil, err
		}
		if err := g.addFile(dir, s.Gzip, s.GzipSize); err != nil {
			return nil, nil, err
		}
	}
	if c.size != m.Size {
		return nil, nil, fmt.Errorf("content segments hold %d bytes, their list says %d", c.size, m.Size)
	}
	gz.addData(gzipTrailer(m.CRC, m.Size))
	return content, gz, nil
}

// gzipTrailer ends a gzip member whose deflate segments hold size bytes
// of CRC-32 crc: the final block and the trailer.
func gzipTrailer(crc uint32, size int64) []byte {
	trailer := make([]byte, 0, len(gzipFinalBlock)+8)
	trailer = append(trailer, gzipFinalBlock...)
	trailer = binary.LittleEndian.AppendUint32(trailer, crc)
	return binary.LittleEndian.AppendUint32(trailer, uint32(size)) // the length modulo 2^32, as gzip defines it
}

func (s *Stream) addData(data []byte) {
	s.parts = append(s.parts, streamPart{start: s.size, size: int64(len(data)), data: data})
	s.size += int64(len(data))
}

func (s *Stream) addFile(dir, name string, size int64) error {
	if name != filepath.Base(name) || name == "." || name == ".." {
		return fmt.Errorf("segment list names %q, not a file of its directory", name)
	}
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	info, err := f.Stat()
	if err == nil && info.Size() != size {
		err = fmt.Errorf("segment %s holds %d bytes, its list says %d", name, info.Size(), size)
	}
	if err != nil {
		f.Close()
		return err
	}
	s.parts = append(s.parts, streamPart{start: s.size, size: size, path: path, f: f})
	s.size += size
	return nil
}

// Size is the stream's length.
func (s *Stream) Size() int64 { return s.size }

// ReadAt reads the stream at off; it may be called concurrently.
func (s *Stream) ReadAt(p []byte, off int64) (int, error) {
	return readSegments(p, off, len(s.parts), func(i int) (int64, int64, io.ReaderAt) {
		pt := &s.parts[i]
		if pt.f == nil {
			return pt.start, pt.size, bytes.NewReader(pt.data)
		}
		return pt.start, pt.size, pt.f
	})
}

// CopyRange hands copyPiece the n bytes at off of the stream, in order, one
// piece per part: an io.LimitedReader over a file opened for the piece,
// and positioned at its first byte, or over the bytes of an in-memory
// part. It stops at the first error or short copy.
func (s *Stream) CopyRange(off, n int64, copyPiece func(*io.LimitedReader) (int64, error)) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	if off < 0 || n < 0 || off+n > s.size {
		return 0, fmt.Errorf("copy stream: %d bytes at %d of %d", n, off, s.size)
	}
	var total int64
	for i := range s.parts {
		pt := &s.parts[i]
		if total == n {
			break
		}
		if pt.start+pt.size <= off || pt.size == 0 {
			continue
		}
		from := off - pt.start
		k := min(pt.size-from, n-total)
		copied, err := pt.copy(from, k, copyPiece)
		total += copied
		off += copied
		if err == nil && copied < k {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (pt *streamPart) copy(from, k int64, copyPiece func(*io.LimitedReader) (int64, error)) (int64, error) {
	if pt.f == nil {
		return copyPiece(&io.LimitedReader{R: bytes.NewReader(pt.data[from:]), N: k})
	}
	f, err := os.Open(pt.path)
	if err != nil {
		return 0, fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, fmt.Errorf("seek segment: %w", err)
	}
	return copyPiece(&io.LimitedReader{R: f, N: k})
}

// Close closes the segment files.
func (s *Stream) Close() error {
	var errs []error
	for _, pt := range s.parts {
		if pt.f != nil {
			errs = append(errs, pt.f.Close())
		}
	}
	s.parts = nil
	return errors.Join(errs...)
}

// NewReader returns a reader of the stream with a position of its own.
func (s *Stream) NewReader() *StreamReader { return &StreamReader{s: s} }

// StreamReader reads a Stream from a position of its own: an
// io.ReadSeeker for http.ServeContent, whose copy of a range (io.CopyN)
// reaches the ResponseWriter's ReadFrom as an *io.LimitedReader over it,
// which a writer that knows it sends with CopyN, segment by segment.
type StreamReader struct {
	s   *Stream
	pos int64
}

func (r *StreamReader) Read(p []byte) (int, error) {
	if r.pos >= r.s.size {
		return 0, io.EOF
	}
	n, err := r.s.ReadAt(p[:min(int64(len(p)), r.s.size-r.pos)], r.pos)
	r.pos += int64(n)
	return n, err
}

// ReadAt reads the stream at off, whatever the reader's position.
func (r *StreamReader) ReadAt(p []byte, off int64) (int, error) { return r.s.ReadAt(p, off) }

func (r *StreamReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.s.size
	default:
		return 0, errors.New("seek stream: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("seek stream: negative position")
	}
	r.pos = offset
	return offset, nil
}

// Size is the stream's length.
func (r *StreamReader) Size() int64 { return r.s.size }

// CopyN hands copyPiece the next n bytes from the reader's position, or
// up to the stream's end, as Stream.CopyRange does, and moves past what
// was copied.
func (r *StreamReader) CopyN(n int64, copyPiece func(*io.LimitedReader) (int64, error)) (int64, error) {
	n = max(0, min(n, r.s.size-r.pos))
	copied, err := r.s.CopyRange(r.pos, n, copyPiece)
	r.pos += copied
	return copied, err
}
