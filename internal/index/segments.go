package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
)

// The content of an index version, the /all stream, and its gzip copy are
// not one file each but runs of segment files in the version's content
// directory (ContentDir), cut at catalog file boundaries: a segment holds
// the blobs of consecutive catalog files, and is cut after the file that
// makes it reach segmentSize. Each segment is two files: its part of the
// content, and the deflate data of the same catalog files (see
// gzipSegment); the gzip header and trailer are not stored, as the
// manifest gives all they hold. A segment file is never written once its
// version is complete, so the next version of the catalog shares every
// segment whose catalog files did not change by a hard link (os.Link), and
// writes only the others: an incremental build writes what changed, not
// the whole content. Segments are cut where a build finds it convenient
// (an incremental build cuts early in front of a segment it links), so two
// versions of the same content may be cut differently; the streams they
// make are the same bytes.

// segmentSize is the size after which a segment ends at the next catalog
// file's end. A larger one rewrites more unchanged bytes with each changed
// file; a smaller one makes more files per version, each an open file
// descriptor while the version serves. 8 MiB keeps the 1.3 GB catalog of
// CRD objects (33 MB per catalog file) at one catalog file per segment and
// a 100,000-file catalog of typical size (a few hundred MB) in tens of
// segments, while rewriting at most 8 MiB beside a changed file. A
// variable so that tests cut small catalogs into many segments.
var segmentSize int64 = 8 << 20

// manifestName names, in a content directory, the list of its segments.
const manifestName = "segments.json"

// ContentDirSuffix ends the name of every content directory.
const ContentDirSuffix = ".content"

// ContentDir names the directory of the content segments and their gzip
// copies of the index at path, written with the database and swapped with
// it as one.
func ContentDir(path string) string { return path + ContentDirSuffix }

// segmentRecord is one segment in the manifest.
type segmentRecord struct {
	// Content and Gzip name its two files in the content directory.
	Content string `json:"content"`
	Gzip    string `json:"gzip"`
	// Files counts the catalog files it holds.
	Files int `json:"files"`
	// Size and GzipSize are the two files' sizes.
	Size     int64 `json:"size"`
	GzipSize int64 `json:"gzipSize"`
}

// manifest lists a version's segments in stream order.
type manifest struct {
	Segments []segmentRecord `json:"segments"`
	// Size and CRC are the length and CRC-32 of the whole content, which
	// the gzip trailer holds.
	Size int64  `json:"size"`
	CRC  uint32 `json:"crc"`
	// FileBytes and BlobBytes are the limits the build enforced (see
	// fbc.Limits): a later build with lower limits parses every file
	// rather than carry one it would refuse.
	FileBytes int64 `json:"fileBytes"`
	BlobBytes int64 `json:"blobBytes"`
}

func readManifest(dir string) (manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return manifest{}, fmt.Errorf("read segment list: %w", fileError(err))
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return manifest{}, fmt.Errorf("read segment list: %w", err)
	}
	return m, nil
}

func writeManifest(dir string, m manifest) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("write segment list: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, manifestName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write segment list: %w", fileError(err))
	}
	_, err = f.Write(data)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("write segment list: %w", fileError(err))
	}
	return nil
}

// segWriter writes one stream as segment files of a content directory:
// the content (while the loader writes it, finish and the compressor read
// it back, ReadAt) or its gzip copy. Every segment stays open until close.
type segWriter struct {
	dir, ext string
	// base is the stream offset of the first segment's first byte: the
	// gzip header comes before the gzip copy's segments.
	base int64

	mu   sync.Mutex
	segs []writtenSegment // guarded by mu; the current one last while cur is set
	size int64            // guarded by mu: bytes in all segments
	cur  *os.File         // the segment being written, or nil between segments
}

type writtenSegment struct {
	name  string
	f     *os.File
	start int64 // offset in the stream
	size  int64
	files int
}

func newSegWriter(dir, ext string, base int64) *segWriter {
	return &segWriter{dir: dir, ext: ext, base: base}
}

// current returns the segment being written, begun if need be.
func (w *segWriter) current() (*os.File, error) {
	if w.cur != nil {
		return w.cur, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	name := fmt.Sprintf("%06d%s", len(w.segs), w.ext)
	f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	w.segs = append(w.segs, writtenSegment{name: name, f: f, start: w.base + w.size})
	w.cur = f
	return f, nil
}

// grew counts n bytes more in the current segment.
func (w *segWriter) grew(n int64) {
	w.mu.Lock()
	w.segs[len(w.segs)-1].size += n
	w.size += n
	w.mu.Unlock()
}

func (w *segWriter) Write(p []byte) (int, error) {
	f, err := w.current()
	if err != nil {
		return 0, err
	}
	n, err := f.Write(p)
	w.grew(int64(n))
	return n, err
}

// ReadFrom lets io.Copy from another file copy in the kernel
// (copy_file_range).
func (w *segWriter) ReadFrom(r io.Reader) (int64, error) {
	f, err := w.current()
	if err != nil {
		return 0, err
	}
	n, err := f.ReadFrom(r)
	w.grew(n)
	return n, err
}

// endFile counts one more catalog file in the current segment.
func (w *segWriter) endFile() error {
	if _, err := w.current(); err != nil {
		return err
	}
	w.mu.Lock()
	w.segs[len(w.segs)-1].files++
	w.mu.Unlock()
	return nil
}

// curSize is how many bytes the current segment holds.
func (w *segWriter) curSize() int64 {
	if w.cur == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.segs[len(w.segs)-1].size
}

// cut ends the current segment, if there is one.
func (w *segWriter) cut() { w.cur = nil }

// link adds the segment file src, of size bytes and files catalog files,
// as a segment of its own, by a hard link: the current one must be cut.
func (w *segWriter) link(src string, size int64, files int) error {
	if w.cur != nil {
		return errors.New("link a segment: a segment is being written")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	name := fmt.Sprintf("%06d%s", len(w.segs), w.ext)
	path := filepath.Join(w.dir, name)
	if err := os.Link(src, path); err != nil {
		return fmt.Errorf("link segment: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("link segment: %w", err)
	}
	info, err := f.Stat()
	if err == nil && info.Size() != size {
		err = fmt.Errorf("%s holds %d bytes, its list %d", src, info.Size(), size)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("link segment: %w", err)
	}
	w.segs = append(w.segs, writtenSegment{name: name, f: f, start: w.base + w.size, size: size, files: files})
	w.size += size
	return nil
}

// ReadAt reads the stream at off, which must be written.
func (w *segWriter) ReadAt(p []byte, off int64) (int, error) {
	w.mu.Lock()
	// The parts that may hold p, copied: the last one grows meanwhile.
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].start+w.segs[i].size > off })
	j := i
	for j < len(w.segs) && w.segs[j].start < off+int64(len(p)) {
		j++
	}
	segs := slices.Clone(w.segs[i:j])
	w.mu.Unlock()
	return readSegments(p, off, len(segs), func(i int) (int64, int64, io.ReaderAt) {
		return segs[i].start, segs[i].size, segs[i].f
	})
}

// segments returns what was written, segment by segment.
func (w *segWriter) segments() []writtenSegment {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.segs
}

// close closes every segment file; segments still lists them.
func (w *segWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, s := range w.segs {
		if err := s.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	w.cur = nil
	return errors.Join(errs...)
}

// readSegments reads p at off of a stream of n parts, part(i) giving the
// i-th part's start, size and bytes.
func readSegments(p []byte, off int64, n int, part func(int) (start, size int64, r io.ReaderAt)) (int, error) {
	if off < 0 {
		return 0, errors.New("read stream: negative offset")
	}
	i := sort.Search(n, func(i int) bool {
		start, size, _ := part(i)
		return start+size > off
	})
	read := 0
	for ; read < len(p) && i < n; i++ {
		start, size, r := part(i)
		if off < start {
			return read, fmt.Errorf("read stream: no part holds offset %d", off)
		}
		k := min(int64(len(p)-read), start+size-off)
		m, err := r.ReadAt(p[read:read+int(k)], off-start)
		read += m
		off += int64(m)
		if err != nil && !(err == io.EOF && int64(m) == k) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return read, err
		}
	}
	if read < len(p) {
		return read, io.EOF
	}
	return read, nil
}
