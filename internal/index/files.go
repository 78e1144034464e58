package index

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/jmoiron/sqlx"
)

// fileRecord is what an index records of one catalog file (the files
// table): where its part of the index lies, so that a later build can
// reuse that part when the file did not change.
type fileRecord struct {
	path string
	sum  [sha256.Size]byte
	// contentOffset and contentLength are the file's blobs' bytes in the
	// content file.
	contentOffset, contentLength int64
	// gz is the file's segment of the gzip copy.
	gz gzipSegment
	// The file's blobs, bundles and channel entries have the ids from
	// first* on, as many as the count beside.
	firstBlob, blobs, firstBundle, bundles, firstEntry, entries int64
	// index is the record's place in its index's list (read back only).
	index int
}

// fileStart begins the record of a file the walk is about to read.
func (l *loader) fileStart(ctx context.Context, path string) error {
	if l.plan != nil {
		if err := l.copyUpTo(ctx, path); err != nil {
			return err
		}
	}
	l.cur = fileRecord{path: path, contentOffset: l.written,
		firstBlob: int64(l.stats.Blobs) + 1, firstBundle: l.bundleID + 1, firstEntry: l.entryID + 1}
	l.unitStart = l.written
	// An unchanged file parsed for its affected packages keeps its bytes:
	// they are copied, not written, at its end.
	l.skipWrite = l.action != nil && l.action.old != nil
	return nil
}

// fileEnd completes the record of the file the walk read last, and ends
// its segment of the gzip copy.
func (l *loader) fileEnd(ctx context.Context, path string) error {
	if l.checkOnly {
		return nil
	}
	r := &l.cur
	r.contentLength = l.written - r.contentOffset
	r.blobs = int64(l.stats.Blobs) + 1 - r.firstBlob
	r.bundles = l.bundleID + 1 - r.firstBundle
	r.entries = l.entryID + 1 - r.firstEntry
	if l.action != nil {
		sum, err := l.sums.readSum(path)
		if err != nil {
			return err
		}
		// An unchanged file keeps its bytes of the previous index (they
		// are copied below): what was parsed must be those bytes.
		if l.action.old != nil && sum != l.action.sum {
			return fallback("file %s changed while it was read", path)
		}
		r.sum = sum
	} else {
		sum, err := l.sums.sum(path)
		if err != nil {
			return err
		}
		r.sum = sum
	}
	// The segment's bytes must be in the file before the compressor reads
	// them.
	if err := l.content.Flush(); err != nil {
		return fmt.Errorf("write content file: %w", fileError(err))
	}
	src := segmentSource{size: l.written - l.unitStart, endsFile: true}
	if l.skipWrite {
		old := l.action.old
		if r.contentLength != old.contentLength || r.blobs != old.blobs || r.bundles != old.bundles {
			return fallback("previous index inconsistent: unchanged file %s read as %d blobs of %d bytes, recorded as %d of %d",
				path, r.blobs, r.contentLength, old.blobs, old.contentLength)
		}
		if err := l.copyContent(old.contentOffset, old.contentLength); err != nil {
			return err
		}
		// Its pieces are copied whole, its big blobs' with them.
		if _, err := l.tx.NamedExecContext(ctx, copyBigBlobsQuery, map[string]any{
			"blob": r.firstBlob - old.firstBlob, "bundle": r.firstBundle - old.firstBundle,
			"b1": old.firstBlob, "b2": old.firstBlob + old.blobs - 1}); err != nil {
			return fmt.Errorf("copy big blobs of unchanged file %s: %w", path, err)
		}
		src.size, src.from, src.seg = r.contentLength, l.plan.gz, old.gz
		l.skipWrite = false
	}
	l.records = append(l.records, *r)
	l.gz.endSegment(src, l.written)
	return l.endFile()
}

// endFile counts the catalog file just ended in the current segment, and
// cuts the segment once it reaches segmentSize.
func (l *loader) endFile() error {
	if err := l.file.endFile(); err != nil {
		return fmt.Errorf("write content: %w", fileError(err))
	}
	if l.file.curSize() >= segmentSize {
		l.cutSegment()
	}
	return nil
}

// cutSegment ends the current segment of the content and of its gzip copy.
func (l *loader) cutSegment() {
	l.file.cut()
	l.gz.endSegment(segmentSource{cut: true}, l.written)
}

// fileSums gives the SHA-256 of the catalog's files: as the walk read the
// file (hashFS), as the source computed it (Content.FileHash) for a file the
// walk did not read, or, failing both, by reading the file again.
type fileSums struct {
	fsys   fs.FS
	given  func(name string) ([sha256.Size]byte, bool)
	hashes *hashFS
}

func (s *fileSums) sum(path string) ([sha256.Size]byte, error) {
	// What the walk read first: a file edited after the source hashed it
	// must be recorded with the hash of the bytes indexed, or reverting
	// the edit would look like no change at all.
	if s.hashes != nil {
		if sum, ok := s.hashes.take(path); ok {
			return sum, nil
		}
	}
	if s.given != nil {
		if sum, ok := s.given(path); ok {
			return sum, nil
		}
	}
	f, err := s.fsys.Open(path)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("hash %s: %w", path, err)
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// readSum returns the SHA-256 of the file as an incremental build read it.
// Such a build does not hash what it reads: the source does (Content.FileHash
// gives the hash of the bytes read once a file was read through FS). A file
// the source cannot vouch for is recorded with no hash, which matches no
// file, so that the next build parses it again; without a source's hashes
// the file is hashed anew.
func (s *fileSums) readSum(path string) ([sha256.Size]byte, error) {
	if s.given == nil {
		return s.sum(path)
	}
	if sum, ok := s.given(path); ok {
		return sum, nil
	}
	return [sha256.Size]byte{}, nil
}

// hashFS hashes each file as it is read: a file read to its end through
// it leaves its SHA-256 for take, so that recording a file's hash costs no
// second read.
type hashFS struct {
	fs.FS
	mu   sync.Mutex
	sums map[string][sha256.Size]byte
}

func newHashFS(fsys fs.FS) *hashFS {
	return &hashFS{FS: fsys, sums: map[string][sha256.Size]byte{}}
}

func (h *hashFS) Open(name string) (fs.File, error) {
	f, err := h.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &hashingFile{File: f, name: name, fs: h, hash: sha256.New()}, nil
}

// ReadDir and Stat keep the walk's listing of directories as it is
// without the wrapper.
func (h *hashFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(h.FS, name) }
func (h *hashFS) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(h.FS, name) }

// take returns, and forgets, the hash of a file read to its end.
func (h *hashFS) take(name string) ([sha256.Size]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sum, ok := h.sums[name]
	delete(h.sums, name)
	return sum, ok
}

type hashingFile struct {
	fs.File
	name string
	fs   *hashFS
	hash interface {
		io.Writer
		Sum([]byte) []byte
	}
	eof bool
}

func (f *hashingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.hash.Write(p[:n])
	if err == io.EOF {
		f.eof = true
	}
	return n, err
}

func (f *hashingFile) Close() error {
	if f.eof {
		f.fs.mu.Lock()
		f.fs.sums[f.name] = [sha256.Size]byte(f.hash.Sum(nil))
		f.fs.mu.Unlock()
	}
	return f.File.Close()
}

// insertFilesQuery records one catalog file.
const insertFilesQuery = `INSERT INTO files (id, path, sha256, content_offset, content_length, gzip_offset, gzip_length, gzip_crc,
	first_blob, blobs, first_bundle, bundles, first_entry, entries) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// writeFiles records the catalog's files, with their segments of the gzip
// copy, which the compressor wrote one per file, and the big blobs
// written outside unchanged files, big, with their pieces.
func writeFiles(ctx context.Context, db *sqlx.DB, records []fileRecord, segments []gzipSegment, big []bigBlob, pieces []blobPiece) error {
	if len(segments) != len(records) {
		return fmt.Errorf("record catalog files: %d files, %d gzip segments", len(records), len(segments))
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record catalog files: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	stmt, err := tx.PrepareContext(ctx, insertFilesQuery)
	if err != nil {
		return fmt.Errorf("record catalog files: %w", err)
	}
	defer stmt.Close()
	for i, r := range records {
		g := segments[i]
		if g.size != r.contentLength {
			return fmt.Errorf("record catalog file %s: %d bytes of content, %d in its gzip segment", r.path, r.contentLength, g.size)
		}
		if _, err := stmt.ExecContext(ctx, i+1, r.path, r.sum[:], r.contentOffset, r.contentLength, g.offset, g.length, int64(g.crc),
			r.firstBlob, r.blobs, r.firstBundle, r.bundles, r.firstEntry, r.entries); err != nil {
			return fmt.Errorf("record catalog file %s: %w", r.path, err)
		}
	}
	if err := writeBigBlobs(ctx, tx, big, pieces, records, segments); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record catalog files: %w", err)
	}
	return nil
}
