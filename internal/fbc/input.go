package fbc

import (
	"bytes"
	"io"
)

// chunkBytes is how much of a file input reads at once.
const chunkBytes = 64 << 10

// input reads one catalog file for the splitters, a chunk at a time. It
// fails as soon as the file breaks its size limit or shows it is not text,
// and knows the position of every byte it holds. It holds what the
// splitter has not consumed yet: a chunk, plus the few bytes a splitter
// looks ahead by.
type input struct {
	r     io.Reader
	limit int64 // Limits.FileBytes
	// buf is what was read and not consumed yet; pos is buf[0]'s position
	// and off its offset in the file.
	buf  []byte
	pos  Position
	off  int64
	data []byte // what buf is a slice of
	// firstChunk is the size of data's first allocation: chunkBytes, or
	// less for a file known to be smaller (sizeHint).
	firstChunk int
	eof        bool
	// err is a read error or a broken limit; once set, fill reports false.
	err error
}

func newInput(r io.Reader, path string, limits Limits) *input {
	return &input{r: r, limit: limits.FileBytes, pos: Position{Path: path, Line: 1, Column: 1}, firstChunk: chunkBytes}
}

// sizeHint says how large the file is, so that a small one is read into a
// buffer of its size rather than a whole chunk: one byte more, so that the
// read that finds its end still fits. A file that grows after the hint is
// read on in chunks as any other.
func (in *input) sizeHint(size int64) {
	if size >= 0 && size < chunkBytes {
		in.firstChunk = int(size) + 1
	}
}

// fill reads more of the file into buf, and reports false at its end or on
// an error (in.err).
func (in *input) fill() bool {
	if in.eof || in.err != nil {
		return false
	}
	if in.data == nil {
		in.data = make([]byte, in.firstChunk)
	}
	kept := copy(in.data, in.buf)
	if kept == len(in.data) {
		in.data = append(in.data, make([]byte, chunkBytes)...)
	}
	n, err := in.r.Read(in.data[kept:])
	read := in.data[kept : kept+n]
	in.buf = in.data[:kept+n]
	switch {
	case bytes.IndexByte(read, 0) >= 0:
		at := kept + bytes.IndexByte(read, 0)
		in.err = invalidAt(in.pos.advance(in.buf[:at]), "not a text file: NUL byte at offset %d", in.off+int64(at))
		return false
	case in.off+int64(len(in.buf)) > in.limit:
		at := int(in.limit - in.off)
		in.err = invalidAt(in.pos.advance(in.buf[:at]), "file is larger than the limit of %d bytes per catalog file", in.limit)
		return false
	case err == io.EOF:
		in.eof = true
	case err != nil:
		in.err = err
	}
	return n > 0 || (!in.eof && in.err == nil)
}

// ensure fills buf until it holds n bytes or the file ends, and reports
// whether it holds n.
func (in *input) ensure(n int) bool {
	for len(in.buf) < n && in.fill() {
	}
	return len(in.buf) >= n
}

// consume drops the first n bytes of buf.
func (in *input) consume(n int) {
	in.pos = in.pos.advance(in.buf[:n])
	in.off += int64(n)
	in.buf = in.buf[n:]
}

// endErr is why fill reported false: in.err, or io.EOF.
func (in *input) endErr() error {
	if in.err != nil {
		return in.err
	}
	return io.EOF
}
