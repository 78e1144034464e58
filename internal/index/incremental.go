package index

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/migrations"
)

// An incremental build (Content.Previous) makes the index a full build of
// the same content makes, from the previous index of the catalog and the
// files that changed since.
//
// Files are the unit: a catalog file whose path and SHA-256 are those of a
// file the previous index recorded (the files table) is unchanged. The
// packages a build must load and validate anew, the affected ones, are
// those with a blob in a file that changed, was added or was removed, on
// either side; blobs without a package count as one more package, "". An
// affected package is loaded from every file that holds a blob of it,
// changed or not; every other package has all its blobs in unchanged
// files, and its rows are carried over from the previous index. Files are
// taken in walk order, so that the content file, the ids and the offsets
// come out as a full build gives them: a changed file, or an unchanged one
// holding an affected package, is parsed; any other unchanged file's rows
// are kept where its ids did not move, in a copy of the previous database
// the build starts from, or copied with their ids and offsets moved by
// where the file now starts (see keptTables), and its bytes of the content
// and the gzip copy are carried over (the gzip copy compresses each file
// apart, see gzipSegment): linked, where a whole segment of the previous
// index holds only such files, copied otherwise (copyRunContent). Whatever
// is computed over a whole package (problems, channels' heads, ranks,
// display, search, digests) is carried over per package or computed by the
// code of a full build; catalog_counts, computed across packages, is
// computed after the load as in a full build, and the secondary indexes,
// copied with the database, are kept up to date by SQLite as rows change.
//
// A build is full instead when there is no usable previous index, when
// its schema differs, when too much changed for reuse to pay (see
// maxChangedShare), or when the previous index disagrees with itself;
// Stats.Build says why.

// maxChangedShare is the share of a catalog's packages, or of its content
// bytes, to load anew beyond which a build is full. An incremental build
// costs a fixed part (planning, the copy of the previous database, moving
// the rows whose ids moved, the other files' bytes and the check of the
// new file: 0.15 CPU-s on the bench catalog for an edit that moves no
// ids, 0.45 for one that moves those of half the catalog) plus about a
// full build's cost per package loaded, so it stops paying only near the
// whole catalog. BenchmarkBuildIncremental, CPU-s per build, one to three
// runs at a machine load of 1.6-3.6 on 2 cores; peak RSS in MiB (these
// figures are from before the copy, when every unchanged file's rows were
// copied and the indexes made anew, 0.45 CPU-s of fixed part):
//
//	bench (300 packages, 132 MiB):  full 3.31-3.55 (54-56)
//	  changed   1: 0.48-0.50 (50)      150: 2.29-2.46 (58-60)
//	           10: 0.68-0.70 (57-58)   200: 2.50 (61)
//	           30: 0.90-0.92 (57-58)   225: 2.80-2.99 (61-63)
//	          100: 1.50-1.58 (57-60)
//	crd (40 packages, 1.39 GB):  full 12.3-12.9 (111-123)
//	  changed   1: 0.13-0.21 (63-65)    20: 7.5-7.7 (118-127)
//	            5: 0.89 (97)            30: 10.5 (122)
//	           10: 4.4-4.5 (105-123)
//
// On the CRD catalog what counts is the share of bytes: its packages
// range from 3 to 275 MB, and the ten changed above hold a third of it.
// Up to three quarters an incremental build still saves a sixth or more
// of a full build's CPU; its peak RSS is a few MiB above a full build's
// on the bench catalog (SQLite's memory: the Go heap peaks at 13 MiB in
// both) and within a full build's spread on the CRD catalog. Beyond, the
// trend says, the saving goes to nothing and the peak grows further.
//
// Since a changed file's big blobs that did not change are taken from
// the previous index (bigblobs.go), the CRD figures are, three runs each
// at a load of 2.5-3.5 (full builds 13.1-14.6 CPU-s there):
//
//	crd:  full 13.1-14.6 (110-121)
//	  changed   1: 0.07-0.10 (70-72)
//	           10: 1.17-1.39 (110-120)
//
// The bytes a plan counts include those big blobs, which cost about a
// tenth of a parsed byte; the share is kept, as a plan cannot tell what
// it will reuse before it reads the changed files: it errs toward a full
// build where an incremental one would still have paid.
//
// Since the build starts from a copy of the previous database
// (keptTables), the bench catalog's figures are, two runs each at a load
// of 4-7, before and after the copy ("1-image" changes a bundle's image
// mid-catalog, "1-bundle" adds a bundle there, moving the ids of every
// blob and bundle after it; "1" adds a blob to the first file, moving
// every blob's id):
//
//	bench:  full 3.1-3.3 (55-56) before, 3.0-3.7 (55-57) after
//	  1-image:  0.53-0.55 (50)    -> 0.15 (44)
//	  1-bundle: 0.49-0.55 (50-51) -> 0.41-0.45 (43-44)
//	  1:        0.53-0.57 (49-50) -> 0.24-0.25 (44)
//	  10:       0.66 (61-62)      -> 0.44-0.45 (53-55)
//	  100:      1.39 (58-59)      -> 1.39-1.45 (56-58)
//
// Where an edit moves most bundles' ids, the build starts over without
// the copy (maxMovedShare) and costs what it did before; past 10
// packages what is loaded anew dominates, so the share is kept.
const maxChangedShare = 0.75

// fallbackError makes a build full, saying why.
type fallbackError struct{ reason string }

func (e *fallbackError) Error() string { return "incremental build: " + e.reason }

func fallback(format string, args ...any) error {
	return &fallbackError{reason: fmt.Sprintf(format, args...)}
}

// restartError says an incremental build met a package in a changed file
// that also has blobs in an unchanged file it did not plan to parse: the
// build starts over with the package affected.
type restartError struct{ group string }

func (e *restartError) Error() string {
	return fmt.Sprintf("incremental build: package %q has blobs in unchanged files", e.group)
}

// fileAction is what an incremental build does with one file of the new
// catalog.
type fileAction struct {
	path string
	sum  [sha256.Size]byte
	// old is the file's record in the previous index when the file is
	// unchanged.
	old *fileRecord
	// parse says the file is parsed: it changed, or holds an affected
	// package.
	parse bool
}

// plan is what an incremental build reuses of the previous index.
type plan struct {
	// prev is the previous index's database; content and gz its content
	// and gzip copy, dir its content directory.
	prev        string
	content, gz *Stream
	dir         string
	// segments are the previous index's segments, by the index of their
	// first file.
	segments map[int]prevSegment
	actions  []fileAction
	// parse lists the files to parse, in walk order.
	parse []string
	// affected are the package groups loaded anew; known, every group
	// of the previous index; carried, the groups known and not affected,
	// in name order.
	affected map[string]bool
	known    map[string]bool
	carried  []string
	// keep says the build starts from a copy of the previous database and
	// keeps its rows where their ids do not move (keptTables); ids are
	// the last id of each kind the previous index gave out.
	keep bool
	ids  [idKinds]int64
	// big are the previous index's big blobs a build can take over (see
	// knownHook).
	big map[knownKey][]*knownBlob
	// compare is holds's buffer, one for the build's every big blob.
	compare []byte
}

func (p *plan) close() {
	if p == nil {
		return
	}
	if p.content != nil {
		p.content.Close()
		p.gz.Close()
	}
}

// prevSegment is a segment of the previous index, and where it starts in
// the gzip stream.
type prevSegment struct {
	segmentRecord
	gzipStart int64
}

// openPrevious opens the previous index's content and gzip copy, and
// lists its segments by first file, for old, its files.
func (p *plan) openPrevious(old []fileRecord, limits fbc.Limits) error {
	p.dir = ContentDir(p.prev)
	m, err := readManifest(p.dir)
	if err != nil {
		return fallback("previous content unreadable: %v", err)
	}
	// A carried file was checked against the previous build's limits
	// only: lower ones must see every file, as a full build does.
	if limits = effectiveLimits(limits); limits.FileBytes < m.FileBytes || limits.BlobBytes < m.BlobBytes {
		return fallback("limits lowered")
	}
	if p.content, p.gz, err = OpenStreams(p.prev); err != nil {
		return fallback("previous content unreadable: %v", err)
	}
	p.segments = map[int]prevSegment{}
	file, gzipStart := 0, int64(len(gzipHeader))
	for _, s := range m.Segments {
		if s.Files <= 0 {
			return fallback("previous index inconsistent: a segment of %d files", s.Files)
		}
		p.segments[file] = prevSegment{segmentRecord: s, gzipStart: gzipStart}
		file += s.Files
		gzipStart += s.GzipSize
	}
	if file != len(old) {
		return fallback("previous index inconsistent: segments hold %d files, the index %d", file, len(old))
	}
	return nil
}

// previousURI opens the previous index's database for reading alone: it
// is never written again.
func previousURI(path string) string {
	return FileURI(path, url.Values{"mode": {"ro"}, "immutable": {"1"}})
}

// newPlan plans an incremental build of src from the previous index,
// with the package groups in extra affected besides those that follow
// from the changed files.
func newPlan(ctx context.Context, src Content, extra map[string]bool) (_ *plan, err error) {
	if _, err := os.Stat(src.Previous); err != nil {
		return nil, fallback("no previous index")
	}
	db, err := sqlx.Open("sqlite", previousURI(src.Previous))
	if err != nil {
		return nil, fallback("previous index unreadable: %v", err)
	}
	defer db.Close()
	var schema string
	var allSize int64
	if err := db.QueryRowxContext(ctx, `SELECT schema_digest, all_size FROM catalog_info WHERE id = 1`).Scan(&schema, &allSize); err != nil {
		return nil, fallback("previous index unreadable: %v", err)
	}
	if schema != migrations.Digest() {
		return nil, fallback("schema changed")
	}
	old, err := readFiles(ctx, db)
	if err != nil {
		return nil, fallback("previous index unreadable: %v", err)
	}
	if len(old) == 0 {
		return nil, fallback("previous index has no file records")
	}
	groups, err := fileGroups(ctx, db, old)
	if err != nil {
		return nil, err
	}

	last := old[len(old)-1]
	p := &plan{prev: src.Previous, affected: map[string]bool{}, known: map[string]bool{},
		ids: [idKinds]int64{blobIDs: last.firstBlob + last.blobs - 1, bundleIDs: last.firstBundle + last.bundles - 1,
			entryIDs: last.firstEntry + last.entries - 1}}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if err := p.openPrevious(old, src.Limits); err != nil {
		return nil, err
	}
	if err := checkPrevious(old, allSize, p.content, p.gz); err != nil {
		return nil, err
	}
	if p.big, err = readKnownBlobs(ctx, db, old); err != nil {
		return nil, err
	}

	paths, err := fbc.Files(src.FS, src.Limits)
	if err != nil {
		return nil, err
	}
	byPath := make(map[string]*fileRecord, len(old))
	for i := range old {
		byPath[old[i].path] = &old[i]
	}
	sums := &fileSums{fsys: src.FS, given: src.FileHash}
	kept := map[string]bool{}
	p.actions = make([]fileAction, len(paths))
	for i, path := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, err := sums.sum(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidCatalog, err)
		}
		a := fileAction{path: path, sum: sum}
		if r := byPath[path]; r != nil && r.sum == sum {
			a.old = r
			kept[path] = true
		} else {
			a.parse = true
		}
		p.actions[i] = a
	}
	for i, r := range old {
		for _, g := range groups[i] {
			p.known[g] = true
			if !kept[r.path] {
				p.affected[g] = true
			}
		}
	}
	for g := range extra {
		p.affected[g] = true
	}
	// Unchanged files holding an affected package are parsed too, which
	// makes every package they hold affected, until nothing changes.
	for changed := true; changed; {
		changed = false
		for i := range p.actions {
			a := &p.actions[i]
			if a.old == nil || a.parse || !slices.ContainsFunc(groups[a.old.index], func(g string) bool { return p.affected[g] }) {
				continue
			}
			a.parse, changed = true, true
			for _, g := range groups[a.old.index] {
				p.affected[g] = true
			}
		}
	}
	var parseBytes, allBytes int64
	for _, a := range p.actions {
		if a.old != nil {
			allBytes += a.old.contentLength
			if a.parse {
				parseBytes += a.old.contentLength
			}
			continue
		}
		if info, err := fs.Stat(src.FS, a.path); err == nil {
			parseBytes += info.Size()
			allBytes += info.Size()
		}
	}
	for _, a := range p.actions {
		if a.parse {
			p.parse = append(p.parse, a.path)
		}
	}
	for g := range p.known {
		if !p.affected[g] {
			p.carried = append(p.carried, g)
		}
	}
	sort.Strings(p.carried)
	if n := len(p.known); float64(len(p.affected)) > maxChangedShare*float64(n) {
		return nil, fallback("%d of %d packages changed", len(p.affected), n)
	}
	if float64(parseBytes) > maxChangedShare*float64(allBytes) {
		return nil, fallback("%d of %d bytes to parse", parseBytes, allBytes)
	}
	return p, nil
}

// readFiles reads the previous index's files table.
func readFiles(ctx context.Context, db *sqlx.DB) ([]fileRecord, error) {
	rows, err := db.QueryxContext(ctx, `SELECT path, sha256, content_offset, content_length, gzip_offset, gzip_length, gzip_crc,
		first_blob, blobs, first_bundle, bundles, first_entry, entries FROM files ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var out []fileRecord
	err = eachRow(rows, func(rows *sqlx.Rows) error {
		var r fileRecord
		var sum []byte
		var crc int64
		if err := rows.Scan(&r.path, &sum, &r.contentOffset, &r.contentLength, &r.gz.offset, &r.gz.length, &crc,
			&r.firstBlob, &r.blobs, &r.firstBundle, &r.bundles, &r.firstEntry, &r.entries); err != nil {
			return err
		}
		if len(sum) != sha256.Size {
			return fmt.Errorf("file %s: a hash of %d bytes", r.path, len(sum))
		}
		r.sum = [sha256.Size]byte(sum)
		r.gz.crc, r.gz.size = uint32(crc), r.contentLength
		r.index = len(out)
		out = append(out, r)
		return nil
	})
	return out, err
}

// checkPrevious checks that the previous index's files records agree
// with each other and with its content and gzip copy: one after the
// other, covering both.
func checkPrevious(old []fileRecord, allSize int64, content, gz *Stream) error {
	next := fileRecord{firstBlob: 1, firstBundle: 1, firstEntry: 1, gz: gzipSegment{offset: int64(len(gzipHeader))}}
	for _, r := range old {
		if r.contentOffset != next.contentOffset || r.gz.offset != next.gz.offset || r.firstBlob != next.firstBlob ||
			r.firstBundle != next.firstBundle || r.firstEntry != next.firstEntry {
			return fallback("previous index inconsistent: file %s does not follow the file before it", r.path)
		}
		next.contentOffset += r.contentLength
		next.gz.offset += r.gz.length
		next.firstBlob += r.blobs
		next.firstBundle += r.bundles
		next.firstEntry += r.entries
	}
	if next.contentOffset != allSize {
		return fallback("previous index inconsistent: files cover %d bytes of %d", next.contentOffset, allSize)
	}
	for _, f := range []struct {
		name   string
		stream *Stream
		size   int64
	}{{"content", content, allSize}, {"gzip copy", gz, next.gz.offset + int64(len(gzipFinalBlock)) + 8}} {
		if f.stream.Size() != f.size {
			return fallback("previous index inconsistent: its %s holds %d bytes, its files %d", f.name, f.stream.Size(), f.size)
		}
	}
	return nil
}

// groupQuery lists the package group of every blob, in id order.
const groupQuery = `SELECT id, CASE WHEN schema = 'olm.package' THEN name ELSE package END FROM blobs ORDER BY id`

// fileGroups returns the package groups of each previous file's blobs.
func fileGroups(ctx context.Context, db *sqlx.DB, old []fileRecord) ([][]string, error) {
	rows, err := db.QueryxContext(ctx, groupQuery)
	if err != nil {
		return nil, fallback("previous index unreadable: %v", err)
	}
	out := make([][]string, len(old))
	i := 0
	err = eachRow(rows, func(rows *sqlx.Rows) error {
		var id int64
		var group string
		if err := rows.Scan(&id, &group); err != nil {
			return err
		}
		for i < len(old) && id >= old[i].firstBlob+old[i].blobs {
			i++
		}
		if i == len(old) || id < old[i].firstBlob {
			return fallback("previous index inconsistent: blob %d in no file", id)
		}
		if !slices.Contains(out[i], group) {
			out[i] = append(out[i], group)
		}
		return nil
	})
	var fb *fallbackError
	if errors.As(err, &fb) {
		return nil, err
	}
	if err != nil {
		return nil, fallback("previous index unreadable: %v", err)
	}
	return out, nil
}

// An incremental build's database starts as a copy of the previous one
// (copyPrevious): copying the file in the kernel, and its indexes with it,
// costs a small part of inserting its rows again and creating its indexes
// (0.02 against 0.4 CPU-s on the bench catalog). The tables keyed by the
// ids a build gives out in walk order, of blobs, bundles and channel
// entries (keptTables), most of the rows, stay in the copy; the rest
// (clearCopy) are written as before: the packages' tables from finish and
// carry, the files' records after the load, the tables whose order is
// their rowid's (skips, deprecations) with the other rows of each file.
//
// A kept table holds at any time the new index's rows for the ids given
// out so far, and the previous index's for the ids beyond (its rows for
// ids given out anew having been deleted, claim): a run of unchanged
// files whose ids come out where they were keeps its rows as they are
// (their offsets moved, if need be, where the content before them
// changed in length), and one whose ids moved has them deleted from their
// new place and copied there; what remains past the last id given out once
// the catalog is read is deleted (trimCopy). The database then holds the
// rows a full build writes, ids included. An edit that would move most
// bundles starts over without the copy (see maxMovedShare).

// idKind is one of the sequences of ids a build gives out in walk order.
type idKind int

const (
	blobIDs idKind = iota
	bundleIDs
	entryIDs
	idKinds
)

// keptTable is a table an incremental build keeps in the copy of the
// previous index, and the column of the id that keys it.
type keptTable struct{ table, key string }

// keptTables are the tables kept in the copy, by the ids that key them.
var keptTables = [idKinds][]keptTable{
	blobIDs:   {{"blobs", "id"}},
	bundleIDs: {{"bundles", "id"}, {"related_images", "bundle_id"}, {"properties", "bundle_id"}, {"property_spans", "bundle_id"}, {"provided_gvks", "bundle_id"}, {"required_gvks", "bundle_id"}, {"required_packages", "bundle_id"}},
	entryIDs:  {{"channel_entries", "id"}},
}

// keptKind is the kind of ids that key each kept table.
var keptKind = func() map[string]idKind {
	m := map[string]idKind{}
	for k, tables := range keptTables {
		for _, t := range tables {
			m[t.table] = idKind(k)
		}
	}
	return m
}()

// maxMovedShare is the share of the bundle ids past which an incremental
// build no longer keeps the copy's rows but starts over from an empty
// database, copying every unchanged file's rows and making the indexes
// after (errMovesMost): moving a row in the copy, deleted and inserted
// again with its indexes kept up to date, costs more than copying it
// into an empty table, and a bundle has tens of rows (its properties
// above all). On the bench catalog (BenchmarkBuildIncremental, CPU-s):
// adding a bundle in the middle moves half the bundles, 0.43-0.45 kept
// against 0.55 started over (0.49-0.50 before the copy); adding one to the
// first package moves them all, 0.65-0.95 s of wall time in a build kept;
// adding a blob to the first file, which moves every blob id and no
// bundle's, 0.24 kept against 0.55 started over. Moves of blob and entry
// ids alone are kept.
const maxMovedShare = 0.6

// errMovesMost says an incremental build would move more than
// maxMovedShare of the copy's bundles.
var errMovesMost = errors.New("incremental build: an edit moves most ids")

// clearedTables are the tables of the copy of the previous index written
// anew, emptied before the load; catalog_counts is dropped, to be made
// again (migrations.Counts).
var clearedTables = []string{"catalog_info", "files", "big_blobs", "channel_entry_skips", "deprecations",
	"problems", "channels", "packages", "package_search"}

// copyPrevious copies the previous index's database to path, which must
// not exist.
func (p *plan) copyPrevious(path string) error {
	in, err := os.Open(p.prev)
	if err != nil {
		return fallback("previous index unreadable: %v", err)
	}
	defer in.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create index: %w", fileError(err))
	}
	// Between files, io.Copy copies in the kernel (copy_file_range).
	_, err = io.Copy(out, in)
	if err == nil {
		startWriteback(out)
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("copy previous index: %w", fileError(err))
	}
	return nil
}

// writeBack starts writing back the pages of the database at path that
// the build changed in the copy, while it is checked: the sync before the
// swap then waits for fewer of them.
func (p *plan) writeBack(path string) {
	if f, err := os.Open(path); err == nil {
		startWriteback(f)
		f.Close()
	}
}

// clearCopy empties the tables of the copy of the previous index that the
// build writes anew.
func clearCopy(ctx context.Context, tx *sqlx.Tx) error {
	for _, t := range clearedTables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t); err != nil {
			return fmt.Errorf("clear %s of the previous index: %w", t, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE catalog_counts`); err != nil {
		return fmt.Errorf("clear catalog_counts of the previous index: %w", err)
	}
	return nil
}

// lastID is the last id of kind k given out.
func (l *loader) lastID(k idKind) int64 {
	switch k {
	case blobIDs:
		return int64(l.stats.Blobs)
	case bundleIDs:
		return l.bundleID
	default:
		return l.entryID
	}
}

// claim deletes the previous index's rows of the kept tables of kind k
// for the ids given out since the last claim, up to last at least, which
// the build's own rows take: before rows with those ids are written.
func (l *loader) claim(ctx context.Context, k idKind, last int64) error {
	last = max(last, l.lastID(k))
	if last <= l.claimed[k] {
		return nil
	}
	if err := l.deleteKept(ctx, k, keyRange, l.claimed[k]+1, last); err != nil {
		return err
	}
	l.claimed[k] = last
	return nil
}

// claimRows claims the ids of rows of a kept table of kind k about to be
// inserted, values holding them a row of columns values after the other,
// each row's first value its key.
func (l *loader) claimRows(ctx context.Context, k idKind, table string, values []any, columns int) error {
	last := int64(0)
	for i := 0; i < len(values); i += columns {
		id, ok := values[i].(int64)
		if !ok {
			return fmt.Errorf("insert into %s: a key of type %T", table, values[i])
		}
		last = max(last, id)
	}
	return l.claim(ctx, k, last)
}

// The conditions on a kept table's key of the rows deleteKept deletes: a
// range of ids, or every id past one.
const (
	keyRange = `BETWEEN ? AND ?`
	keyAfter = `> ?`
)

// deleteKeptQuery deletes the rows of t whose key matches cond.
func deleteKeptQuery(t keptTable, cond string) string {
	return `DELETE FROM ` + t.table + ` WHERE ` + t.key + ` ` + cond
}

// deleteKept deletes the rows of the kept tables of kind k whose key
// matches cond (keyRange or keyAfter).
func (l *loader) deleteKept(ctx context.Context, k idKind, cond string, args ...any) error {
	for _, t := range keptTables[k] {
		if _, err := l.tx.ExecContext(ctx, deleteKeptQuery(t, cond), args...); err != nil {
			return fmt.Errorf("delete previous rows of %s: %w", t.table, err)
		}
	}
	return nil
}

// trimCopy deletes what is left of the previous index's rows in the kept
// tables past the last ids given out, once the catalog is read.
func (l *loader) trimCopy(ctx context.Context) error {
	for k := range idKinds {
		if err := l.claim(ctx, k, 0); err != nil {
			return err
		}
		if err := l.deleteKept(ctx, k, keyAfter, l.lastID(k)); err != nil {
			return err
		}
	}
	return nil
}

// The statements that copy the rows of a run of unchanged files from the
// previous index (attached as prev), ids and offsets moved by the deltas
// bound to :blob, :bundle, :entry and :offset, ranges given by :b1 :b2
// (blob ids), :n1 :n2 (bundle ids) and :e1 :e2 (entry ids). Rows go in in
// the order a full build inserts them; for the tables without an id of
// their own, that is rowid order, which is also the order of the id they
// refer to (entry or blob), so that their index gives it without a sort.
// movedRowsQueries copy the rows of the kept tables, by kind of id, for a
// run whose ids of that kind moved; copyRowsQueries the others, always.
var movedRowsQueries = [idKinds][]string{
	blobIDs: {`INSERT INTO blobs (id, schema, package, name, offset, length)
		SELECT id + :blob, schema, package, name, offset + :offset, length FROM prev.blobs WHERE id BETWEEN :b1 AND :b2 ORDER BY id`},
	entryIDs: {`INSERT INTO channel_entries (id, package, channel, position, bundle, replaces, skip_range)
		SELECT id + :entry, package, channel, position, bundle, replaces, skip_range FROM prev.channel_entries WHERE id BETWEEN :e1 AND :e2 ORDER BY id`},
	bundleIDs: slices.Concat([]string{`INSERT INTO bundles (id, package, name, version, release, image, blob_id, ver_major, ver_minor, ver_patch, ver_pre, version_rank, channels)
		SELECT id + :bundle, package, name, version, release, image, blob_id + :blob, ver_major, ver_minor, ver_patch, ver_pre, version_rank, channels
		FROM prev.bundles WHERE id BETWEEN :n1 AND :n2 ORDER BY id`}, bundlePartsQueries),
}

var copyRowsQueries = []string{
	`INSERT INTO channel_entry_skips (entry_id, package, skip)
		SELECT entry_id + :entry, package, skip FROM prev.channel_entry_skips WHERE entry_id BETWEEN :e1 AND :e2 ORDER BY entry_id, rowid`,
	`INSERT INTO deprecations (package, schema, name, message, blob_id)
		SELECT package, schema, name, message, blob_id + :blob FROM prev.deprecations WHERE blob_id BETWEEN :b1 AND :b2 ORDER BY blob_id, rowid`,
	copyBigBlobsQuery,
}

// The statements that move what a kept run's rows refer to where it moved
// while the run's own ids did not: its blobs' offsets, where the content
// before it changed in length (:offset), and its bundles' blob ids
// (:blob).
const (
	moveOffsetsQuery = `UPDATE blobs SET offset = offset + :offset WHERE id BETWEEN :b1 AND :b2`
	moveBlobIDsQuery = `UPDATE bundles SET blob_id = blob_id + :blob WHERE id BETWEEN :n1 AND :n2`
)

// bundlePartsQueries copy the parts of the bundles :n1 to :n2 of the
// previous index, ids moved by :bundle: for a run of unchanged files
// (copyRowsQueries), and for one bundle taken over with its big blob
// (addKnown). Their tables are keyed by bundle and position.
var bundlePartsQueries = []string{
	`INSERT INTO related_images (bundle_id, position, name, image)
		SELECT bundle_id + :bundle, position, name, image FROM prev.related_images WHERE bundle_id BETWEEN :n1 AND :n2`,
	`INSERT INTO properties (bundle_id, position, type, value, value_start, value_length)
		SELECT bundle_id + :bundle, position, type, value, value_start, value_length FROM prev.properties WHERE bundle_id BETWEEN :n1 AND :n2`,
	`INSERT INTO property_spans (bundle_id, spans)
		SELECT bundle_id + :bundle, spans FROM prev.property_spans WHERE bundle_id BETWEEN :n1 AND :n2 ORDER BY bundle_id`,
	`INSERT INTO provided_gvks (bundle_id, position, grp, version, kind)
		SELECT bundle_id + :bundle, position, grp, version, kind FROM prev.provided_gvks WHERE bundle_id BETWEEN :n1 AND :n2`,
	`INSERT INTO required_gvks (bundle_id, position, grp, version, kind)
		SELECT bundle_id + :bundle, position, grp, version, kind FROM prev.required_gvks WHERE bundle_id BETWEEN :n1 AND :n2`,
	`INSERT INTO required_packages (bundle_id, position, package_name, version_range)
		SELECT bundle_id + :bundle, position, package_name, version_range FROM prev.required_packages WHERE bundle_id BETWEEN :n1 AND :n2`,
}

// copiedBlobsQuery counts the blobs of a run of files by schema.
const copiedBlobsQuery = `SELECT schema, count(*), sum(length) FROM prev.blobs WHERE id BETWEEN ? AND ? GROUP BY schema`

// copyUpTo copies the files before path that are not parsed, and makes
// path's action the current one; "" copies the rest.
func (l *loader) copyUpTo(ctx context.Context, path string) error {
	p := l.plan
	var run []fileAction
	for ; l.next < len(p.actions) && p.actions[l.next].path != path; l.next++ {
		a := p.actions[l.next]
		if a.parse {
			return fallback("previous index inconsistent: file %s to parse was not read", a.path)
		}
		if len(run) > 0 && a.old.index != run[len(run)-1].old.index+1 {
			if err := l.copyRun(ctx, run); err != nil {
				return err
			}
			run = run[:0]
		}
		run = append(run, a)
	}
	if err := l.copyRun(ctx, run); err != nil {
		return err
	}
	if path == "" && p.keep {
		if err := l.trimCopy(ctx); err != nil {
			return err
		}
	}
	l.action = nil
	if path != "" {
		if l.next == len(p.actions) {
			return fmt.Errorf("incremental build: file %s not planned", path)
		}
		l.action = &p.actions[l.next]
		l.next++
	}
	return nil
}

// copyRun copies a run of unchanged files of unaffected packages, which
// follow each other in the previous index too: their rows, moved to where
// the run starts now, and their bytes of the content and gzip files.
func (l *loader) copyRun(ctx context.Context, run []fileAction) error {
	if len(run) == 0 {
		return nil
	}
	// The rows queued so far come first, as in a full build.
	if err := l.flushAll(ctx); err != nil {
		return err
	}
	if err := l.content.Flush(); err != nil {
		return fmt.Errorf("write content file: %w", fileError(err))
	}
	first, last := run[0].old, run[len(run)-1].old
	args := map[string]any{
		"blob":   int64(l.stats.Blobs) + 1 - first.firstBlob,
		"bundle": l.bundleID + 1 - first.firstBundle,
		"entry":  l.entryID + 1 - first.firstEntry,
		"offset": l.written - first.contentOffset,
		"b1":     first.firstBlob, "b2": last.firstBlob + last.blobs - 1,
		"n1": first.firstBundle, "n2": last.firstBundle + last.bundles - 1,
		"e1": first.firstEntry, "e2": last.firstEntry + last.entries - 1,
	}
	// The run's ids of each kind either come out where they were, and
	// its rows of the kept tables stay, or moved, and are copied, as
	// they all are into an empty database.
	deltas := [idKinds]string{blobIDs: "blob", bundleIDs: "bundle", entryIDs: "entry"}
	counts := [idKinds]int64{blobIDs: args["b2"].(int64) - first.firstBlob + 1,
		bundleIDs: args["n2"].(int64) - first.firstBundle + 1, entryIDs: args["e2"].(int64) - first.firstEntry + 1}
	queries := slices.Clone(copyRowsQueries)
	for k := range idKinds {
		if !l.plan.keep {
			queries = append(queries, movedRowsQueries[k]...)
			continue
		}
		if err := l.claim(ctx, k, 0); err != nil {
			return err
		}
		if delta := args[deltas[k]].(int64); delta != 0 {
			if moved := l.plan.ids[k] - l.lastID(k) + delta; k == bundleIDs && float64(moved) > maxMovedShare*float64(l.plan.ids[k]) {
				return errMovesMost
			}
			// The rows go where the next ids are, and the run's own
			// rows beyond them go too: bundles are UNIQUE by name.
			next := l.lastID(k) + 1
			if err := l.deleteKept(ctx, k, keyRange, next, next+counts[k]-1+max(0, -delta)); err != nil {
				return err
			}
			queries = append(queries, movedRowsQueries[k]...)
		} else {
			switch {
			case k == blobIDs && args["offset"].(int64) != 0:
				queries = append(queries, moveOffsetsQuery)
			case k == bundleIDs && args["blob"].(int64) != 0:
				queries = append(queries, moveBlobIDsQuery)
			}
		}
		l.claimed[k] = l.lastID(k) + counts[k]
	}
	for _, q := range queries {
		if _, err := l.tx.NamedExecContext(ctx, q, args); err != nil {
			return fmt.Errorf("copy rows of unchanged files from %s: %w", first.path, err)
		}
	}
	var blobs, bytes int64
	rows, err := l.tx.QueryContext(ctx, copiedBlobsQuery, first.firstBlob, last.firstBlob+last.blobs-1)
	if err != nil {
		return fmt.Errorf("count blobs of unchanged files from %s: %w", first.path, err)
	}
	err = eachRow(rows, func(rows *sql.Rows) error {
		var schema string
		var n, size int64
		if err := rows.Scan(&schema, &n, &size); err != nil {
			return err
		}
		l.stats.Schemas[schema] += int(n)
		blobs += n
		bytes += size
		return nil
	})
	if err != nil {
		return fmt.Errorf("count blobs of unchanged files from %s: %w", first.path, err)
	}
	length := last.contentOffset + last.contentLength - first.contentOffset
	if blobs != last.firstBlob+last.blobs-first.firstBlob || bytes != length {
		return fallback("previous index inconsistent: files from %s hold %d blobs of %d bytes, their records say otherwise", first.path, blobs, bytes)
	}
	delta := l.written - first.contentOffset
	if err := l.copyRunContent(run); err != nil {
		return err
	}
	for _, a := range run {
		r := *a.old
		r.contentOffset += delta
		r.firstBlob += int64(l.stats.Blobs) + 1 - first.firstBlob
		r.firstBundle += l.bundleID + 1 - first.firstBundle
		r.firstEntry += l.entryID + 1 - first.firstEntry
		l.records = append(l.records, r)
	}
	l.stats.Blobs += int(blobs)
	l.stats.AllBytes += length
	l.bundleID += last.firstBundle + last.bundles - first.firstBundle
	l.entryID += last.firstEntry + last.entries - first.firstEntry
	return nil
}

// copyRunContent adds the bytes of a run of unchanged files to the content
// and its gzip copy: each whole segment of the previous index in the run
// by a link to its files, cutting the segment being written short before
// it; the other files by a copy of their bytes and gzip pieces.
func (l *loader) copyRunContent(run []fileAction) error {
	for i := 0; i < len(run); {
		a := run[i]
		if s, ok := l.plan.segments[a.old.index]; ok && i+s.Files <= len(run) {
			if err := l.linkSegment(s, run[i:i+s.Files]); err != nil {
				return err
			}
			i += s.Files
			continue
		}
		if err := l.copyContent(a.old.contentOffset, a.old.contentLength); err != nil {
			return err
		}
		l.written += a.old.contentLength
		l.gz.endSegment(segmentSource{size: a.old.contentLength, from: l.plan.gz, seg: a.old.gz, endsFile: true}, l.written)
		if err := l.endFile(); err != nil {
			return err
		}
		i++
	}
	return nil
}

// linkSegment adds s, a segment of the previous index holding the files of
// run, to the content and its gzip copy by hard links.
func (l *loader) linkSegment(s prevSegment, run []fileAction) error {
	files := make([]gzipSegment, len(run))
	var size int64
	for i, a := range run {
		files[i] = a.old.gz
		size += a.old.contentLength
	}
	if size != s.Size {
		return fallback("previous index inconsistent: segment %s holds %d bytes, its files %d", s.Content, s.Size, size)
	}
	l.cutSegment()
	if err := l.file.link(filepath.Join(l.plan.dir, s.Content), s.Size, s.Files); err != nil {
		return fallback("previous content unusable: %v", fileError(err))
	}
	l.written += s.Size
	l.gz.endSegment(segmentSource{size: s.Size,
		link: &linkedSegment{path: filepath.Join(l.plan.dir, s.Gzip), start: s.gzipStart, size: s.GzipSize, files: files}}, l.written)
	return nil
}

// copyContent appends length bytes at offset of the previous content to
// the content, whose buffer is flushed.
func (l *loader) copyContent(offset, length int64) error {
	// Between files, io.Copy copies in the kernel (copy_file_range, which
	// shares the blocks where the filesystem can).
	_, err := l.plan.content.CopyRange(offset, length, func(piece *io.LimitedReader) (int64, error) {
		return io.Copy(l.file, piece)
	})
	if err != nil {
		return fmt.Errorf("copy previous content: %w", fileError(err))
	}
	return nil
}

// carryQueries carry the rows that finish writes of a run of packages
// from the previous index, first to last in name order (?1 and ?2), in
// the order finish writes them, so that the ids SQLite gives them are a
// full build's. package_search's rows were written beside the packages'
// rows, so share their rowids.
var carryQueries = []string{
	`INSERT INTO problems (package, position, message)
		SELECT package, position, message FROM prev.problems WHERE package BETWEEN ?1 AND ?2 ORDER BY package, id`,
	`INSERT INTO channels (package, name, properties, head, head_problem)
		SELECT package, name, properties, head, head_problem FROM prev.channels WHERE package BETWEEN ?1 AND ?2 ORDER BY package, id`,
	`INSERT INTO packages (name, default_channel, description, icon_data, icon_media_type, display, digest)
		SELECT name, default_channel, description, icon_data, icon_media_type, display, digest FROM prev.packages
		WHERE name BETWEEN ?1 AND ?2 ORDER BY name`,
	`INSERT INTO package_search (name, display_name, keywords, provider, description)
		SELECT s.name, s.display_name, s.keywords, s.provider, s.description
		FROM prev.packages p JOIN prev.package_search s ON s.rowid = p.rowid
		WHERE p.name BETWEEN ?1 AND ?2 ORDER BY p.name`,
}

// carriedCountsQuery counts what a run of carried packages adds to Stats.
const carriedCountsQuery = `SELECT
	(SELECT count(*) FROM prev.packages WHERE name BETWEEN ?1 AND ?2),
	(SELECT count(*) FROM prev.channels WHERE package BETWEEN ?1 AND ?2),
	(SELECT count(*) FROM prev.bundles WHERE package BETWEEN ?1 AND ?2),
	(SELECT count(*) FROM prev.problems WHERE package BETWEEN ?1 AND ?2)`

// carriedRuns returns the runs of carried packages, each from its first
// name to its last: packages next to each other in name order among
// those of either index, with none loaded or dropped between them, so
// that the rows of a run are a range of the previous index's. The build
// may add affected packages as it reads, so runs are taken after it.
func (p *plan) carriedRuns() map[string]string {
	names := make([]string, 0, len(p.known)+len(p.affected))
	for g := range p.known {
		names = append(names, g)
	}
	for g := range p.affected {
		if !p.known[g] {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	runs := map[string]string{}
	first := ""
	for i, g := range names {
		if p.affected[g] {
			continue
		}
		if i == 0 || p.affected[names[i-1]] {
			first = g
		}
		runs[first] = g
	}
	return runs
}

// carry writes, in finish's place, the rows of a run of packages the
// build did not load, first to last in name order: as the previous index
// holds them.
func (l *loader) carry(ctx context.Context, first, last string) error {
	if err := l.flushAll(ctx); err != nil {
		return err
	}
	for _, q := range carryQueries {
		if _, err := l.tx.ExecContext(ctx, q, first, last); err != nil {
			return fmt.Errorf("carry packages %q to %q over: %w", first, last, err)
		}
	}
	var packages, channels, bundles, problems int
	if err := l.tx.QueryRowContext(ctx, carriedCountsQuery, first, last).Scan(&packages, &channels, &bundles, &problems); err != nil {
		return fmt.Errorf("carry packages %q to %q over: %w", first, last, err)
	}
	l.stats.Packages += packages
	l.stats.Channels += channels
	l.stats.Bundles += bundles
	l.stats.Problems += problems
	return nil
}
