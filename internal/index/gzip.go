package index

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// gzipLevel is the compression of the gzip copy: on catalog JSON, level 3
// of klauspost/compress compresses faster than level 1 and to a third less
// (measured: 100 MB to 9.9 MB in 0.46 s; level 1, 14 MB in 0.61 s; level
// 6, 8.9 MB in 0.83 s).
const gzipLevel = 3

// compressChunk is the most compressor takes of the content file between
// checks of its context.
const compressChunk = 4 << 20

// The gzip copy is one gzip member, which any reader decompresses as one
// stream, whose deflate data is a run of pieces: each compressed by a
// compressor of its own (no back-reference reaches into an earlier piece)
// and ended by a sync flush, which leaves it byte-aligned. Pieces are cut
// where the content alone says: at the end of every catalog file, and
// before and after every big blob (bigBlobBytes), which so has a piece of
// its own. A piece's bytes thus depend only on its bytes, and a build
// that keeps a file of the previous index (an incremental build) copies
// that file's pieces, or links the whole segment file (see segmentSize)
// that holds them, and one that finds a big blob of the previous index in
// a changed file copies the blob's piece, instead of compressing them
// again: the stream is byte-identical to the one a full build writes. The member ends with
// an empty final block and the trailer: the CRC-32 of the whole content,
// combined from the pieces' (crc32Combine), and its length; the header
// and trailer are made when the stream is read (OpenStreams), not stored.
// Compressing files apart loses what a piece could have referred to in
// the files before it: measured, 5.5% more bytes on the 300-file bench
// catalog (9.96 MB in one stream, 10.51 MB in pieces) and 0.04% on the
// 40-file catalog of CRD objects (124.92 MB, 124.97 MB), in no more time.
// Cutting around big blobs too changes neither: the bench catalog holds
// none, and a blob of 8 MB of base64 refers to little outside itself.
var (
	// gzipHeader is a gzip member header without name or time, from an
	// unknown operating system: the same bytes for every build.
	gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}
	// gzipFinalBlock is an empty final deflate block (fixed Huffman codes,
	// just the end-of-block code).
	gzipFinalBlock = []byte{0x03, 0x00}
)

// gzipSegment is a run of pieces of the gzip copy: one catalog file's
// part of the content, or one piece.
type gzipSegment struct {
	// offset and length are the piece's place in the gzip stream.
	offset, length int64
	// crc is the CRC-32 (IEEE) of the content the piece holds, size its
	// length.
	crc  uint32
	size int64
}

// segmentSource is the next step of the gzip copy, in content order: the
// compression of the next size bytes of the content as one piece, or, when
// from is set, a copy of the pieces seg of from, the previous index's gzip
// stream; or the end of a segment (cut); or a whole segment of the
// previous index linked (link). endsFile says the piece ends a catalog
// file, blob that it is that big blob's own.
type segmentSource struct {
	size     int64
	from     *Stream
	seg      gzipSegment
	endsFile bool
	blob     int64
	cut      bool
	link     *linkedSegment
}

// blobPiece is the piece of the gzip copy a big blob (bigBlobBytes) has to
// itself.
type blobPiece struct {
	blob int64
	seg  gzipSegment
}

// linkedSegment is a segment of the previous index's gzip copy that an
// incremental build links whole.
type linkedSegment struct {
	// path is its file, start its offset in the previous stream, size the
	// file's size.
	path        string
	start, size int64
	// files are the pieces it holds, as the previous index recorded them.
	files []gzipSegment
}

// compressor writes the gzip copy of the content while the walk is still
// writing it: it follows the content, reading back (from the page cache)
// what the loader says is written, so that compressing takes another core
// rather than build time. On a 1.4 GiB catalog, compressing once the
// content was complete made the build a third longer.
type compressor struct {
	content *segWriter
	// out receives the gzip copy.
	out *segWriter
	// wake is signalled when more of the content is written.
	wake chan struct{}

	mu      sync.Mutex
	written int64           // guarded by mu: bytes of the content written so far
	whole   bool            // guarded by mu: written is the whole content
	sources []segmentSource // guarded by mu: the steps so far, in order
	// Set before done is closed: what was written, by catalog file
	// (segments) and the big blobs' pieces; crc and size are the whole
	// content's, compressed how much of it was compressed rather than
	// copied.
	segments   []gzipSegment
	blobs      []blobPiece
	crc        uint32
	size       int64
	compressed int64

	done   chan struct{}
	err    error // set before done is closed
	cancel context.CancelFunc
}

// startCompress starts compressing content into out as the loader writes
// it (see advance and endSegment); wait returns the outcome. out is
// closed by the time wait or stop returns.
func startCompress(ctx context.Context, content, out *segWriter) *compressor {
	ctx, cancel := context.WithCancel(ctx)
	c := &compressor{content: content, out: out, wake: make(chan struct{}, 1), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(c.done)
		c.err = c.run(ctx, out)
		if closeErr := out.close(); closeErr != nil && c.err == nil {
			c.err = fmt.Errorf("write gzip copy: %w", fileError(closeErr))
		}
	}()
	return c
}

// advance says the first written bytes of the content are written, and
// whole that they are all it will hold.
func (c *compressor) advance(written int64, whole bool) {
	if c == nil {
		return // Check writes no gzip copy
	}
	c.update(func() { c.written, c.whole = written, whole })
}

// endSegment adds the next step, with the content written up to written.
func (c *compressor) endSegment(src segmentSource, written int64) {
	if c == nil {
		return
	}
	c.update(func() {
		c.sources = append(c.sources, src)
		c.written = written
	})
}

func (c *compressor) update(fn func()) {
	c.mu.Lock()
	fn()
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // already signalled
	}
}

// wait waits for the gzip copy to be complete (advance must have been
// called with whole) and returns its catalog files' segments, or the
// error that stopped it.
func (c *compressor) wait() ([]gzipSegment, error) {
	<-c.done
	return c.segments, c.err
}

// stop ends compressing, complete or not, and waits for it: Build stops it
// on every return, so the copy's files are closed before the files of a
// failed build are removed.
func (c *compressor) stop() {
	c.cancel()
	<-c.done
}

// gzipOffset is where the next byte written to out stands in the gzip
// stream.
func gzipOffset(out *segWriter) int64 {
	out.mu.Lock()
	defer out.mu.Unlock()
	return out.base + out.size
}

func (c *compressor) run(ctx context.Context, out *segWriter) error {
	zw, err := flate.NewWriter(out, gzipLevel)
	if err != nil {
		return fmt.Errorf("create gzip copy: %w", err)
	}
	buf := make([]byte, 256<<10)
	// pos is how much of the content the steps done and the current one
	// cover; cur is the current piece, begun at start, and file the
	// catalog file being written.
	var pos, start int64
	cur := gzipSegment{offset: gzipOffset(out)}
	file := cur
	// endPiece adds the piece p, written by the step src, to its file.
	endPiece := func(p gzipSegment, src *segmentSource) error {
		if src.blob != 0 {
			c.blobs = append(c.blobs, blobPiece{blob: src.blob, seg: p})
		}
		file.crc = crc32Combine(file.crc, p.crc, p.size)
		file.size += p.size
		if !src.endsFile {
			return nil
		}
		if err := out.endFile(); err != nil {
			return err
		}
		file.length = gzipOffset(out) - file.offset
		c.segments = append(c.segments, file)
		file = gzipSegment{offset: gzipOffset(out)}
		return nil
	}
	for next := 0; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.mu.Lock()
		written, whole := c.written, c.whole
		var src *segmentSource
		if next < len(c.sources) {
			src = &c.sources[next]
		}
		c.mu.Unlock()
		limit := written
		if src != nil {
			limit = start + src.size
		}
		switch {
		case src != nil && src.cut:
			out.cut()
		case src != nil && src.link != nil:
			l := src.link
			at := gzipOffset(out)
			if err := out.link(l.path, l.size, len(l.files)); err != nil {
				return fmt.Errorf("write gzip copy: %w", fileError(err))
			}
			for _, f := range l.files {
				f.offset += at - l.start
				c.segments = append(c.segments, f)
			}
			file = gzipSegment{offset: gzipOffset(out)}
		case src != nil && src.from != nil:
			seg, err := copySegment(out, src.from, src.seg)
			if err == nil {
				err = endPiece(seg, src)
			}
			if err != nil {
				return fmt.Errorf("write gzip copy: copy segment: %w", fileError(err))
			}
		case pos < limit:
			n, err := c.content.ReadAt(buf[:min(int64(len(buf)), limit-pos, compressChunk)], pos)
			if err != nil && (err != io.EOF || n == 0) {
				return fmt.Errorf("write gzip copy: read content: %w", fileError(err))
			}
			cur.crc = crc32.Update(cur.crc, crc32.IEEETable, buf[:n])
			if _, err := zw.Write(buf[:n]); err != nil {
				return fmt.Errorf("write gzip copy: %w", fileError(err))
			}
			pos += int64(n)
			c.compressed += int64(n)
			continue
		case src != nil:
			if src.size > 0 {
				if err := zw.Flush(); err != nil {
					return fmt.Errorf("write gzip copy: %w", fileError(err))
				}
				zw.Reset(out)
			}
			cur.length, cur.size = gzipOffset(out)-cur.offset, src.size
			if err := endPiece(cur, src); err != nil {
				return fmt.Errorf("write gzip copy: %w", fileError(err))
			}
		case whole:
			out.cut()
			for _, s := range c.segments {
				c.crc = crc32Combine(c.crc, s.crc, s.size)
				c.size += s.size
			}
			return nil
		default:
			select {
			case <-c.wake:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		// A step is done.
		pos, start = start+src.size, start+src.size
		cur = gzipSegment{offset: gzipOffset(out)}
		next++
	}
}

// copySegment appends the piece seg of the gzip stream from to out.
func copySegment(out *segWriter, from *Stream, seg gzipSegment) (gzipSegment, error) {
	copied := gzipSegment{offset: gzipOffset(out), length: seg.length, crc: seg.crc, size: seg.size}
	// Between files, io.Copy copies in the kernel (copy_file_range).
	_, err := from.CopyRange(seg.offset, seg.length, func(piece *io.LimitedReader) (int64, error) {
		return io.Copy(out, piece)
	})
	return copied, err
}

// crc32Combine returns the CRC-32 (IEEE) of the concatenation of two
// byte strings, given the CRC of each and the length of the second.
//
// A CRC is, up to its fixed pre- and post-conditioning (which cancel
// out here), the remainder of the message polynomial times x^32 modulo the
// generator P. Appending n bytes multiplies the first part's polynomial
// by x^(8n), so crc(AB) = crc(A)·x^(8n) mod P  xor  crc(B). The product is
// taken in GF(2)[x] modulo P, in the reflected bit order the CRC uses
// (the highest bit is x^0), and x^(8n) by squaring.
func crc32Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1 ^ crc2 // crc2 is 0 then; crc1 stands
	}
	return mulModP(powX8(len2), crc1) ^ crc2
}

// crcOne is the polynomial 1 (x^0) in the reflected order.
const crcOne = uint32(1) << 31

// mulModP multiplies a and b modulo the CRC-32 generator, both in the
// reflected order.
func mulModP(a, b uint32) uint32 {
	var p uint32
	for m := crcOne; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		// b times x: a shift toward the low bits, reduced by P when x^31
		// overflows.
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// powX8 returns x^(8n) modulo the generator.
func powX8(n int64) uint32 {
	result := crcOne
	base := crcOne >> 8 // x^8
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			result = mulModP(result, base)
		}
		base = mulModP(base, base)
	}
	return result
}
