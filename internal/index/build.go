// Package index builds the catalog index: it loads the blobs package fbc
// reads from a file-based catalog (an fs.FS) into one SQLite database
// file, validates each package as operator-registry does, and computes what
// the queries need (heads, version ranks, display metadata). The blobs'
// bytes go, once, into the content beside the database (in its content
// directory, ContentDir): the catalogd-compatible /all stream itself,
// which the database indexes by byte range; and into a gzip copy of it,
// compressed once here rather than on every request. Both are cut into
// segment files that later versions share (segments.go), and read as one
// stream each through OpenStreams. Building is streaming and
// transactional, and the files are checked before Build returns; package
// store keeps, per catalog, the one index that is live (its files, see
// Files) and swaps in a new one only once Build succeeded. Reading an
// index back is package query's job; only the record of the build
// itself (ReadInfo) is read here, beside the code that writes it. Check
// runs the same reading and validation for a verdict alone (catalogd
// validate), without the files only serving reads.
//
// An index records each catalog file it was built from (the files table:
// its hash, and where its part of the index lies), and the gzip copy
// compresses each file apart, so that the next build of the same catalog
// (Content.Previous) can parse only the files that changed and carry the
// rest over, rows copied and segments linked, into the same streams a full
// build writes (incremental.go). Big blobs are recorded and compressed
// apart too, so that a changed file's big blobs that did not change are
// carried over undecoded (bigblobs.go).
package index

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"time"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/migrations"
)

// ErrInvalidCatalog marks content that is not a catalog: bad JSON or YAML, a
// blob without a schema, a blob of the wrong shape, a limit broken. The same
// content always fails the same way, so retrying it without a change is
// pointless. It is the parser's error, so that callers of Build need not
// import package fbc to classify one.
var ErrInvalidCatalog = fbc.ErrInvalidCatalog

// Content is catalog content to index.
type Content struct {
	// FS holds the FBC directory: any nesting, JSON or YAML, .indexignore honoured.
	FS fs.FS
	// Ref says where the content came from (a directory or an image reference).
	Ref string
	// Digest identifies the content: equal digests mean equal content, which
	// is what lets store.Store skip a rebuild.
	Digest string
	// ReadDigest, when set, returns a digest of the same kind as Digest for
	// the content read through FS so far, anything not read counting as
	// Digest describes it. Build records it instead of Digest once it has
	// read everything, so that an index names the content it holds even if
	// FS changed after Digest was computed (a directory being edited): the
	// next comparison with a fresh Digest then sees the difference. It is
	// nil where FS cannot change (an unpacked image, checked against its
	// digest).
	ReadDigest func() string
	// Limits bound the size of the content's files and blobs; zero fields
	// take the defaults.
	Limits fbc.Limits
	// Previous is the database path of the live index of the same catalog
	// (its content and gzip files beside it, see Files), whose unchanged
	// parts Build may reuse: an incremental build. "" builds from scratch.
	// Build only reads the previous files; the caller keeps them in place
	// until Build returns.
	Previous string
	// FileHash returns the SHA-256 of the named file of FS as the source
	// already computed it (catalogdir while taking its digest, unpack while
	// extracting), so that an incremental build tells unchanged files
	// without reading them; ok false makes Build hash the file itself.
	// Once Build has read a file through FS to its end and closed it,
	// FileHash must give the hash of the bytes read (catalogdir hashes
	// them as they are read; unpack's files do not change): an
	// incremental build records that for the files it parses rather than
	// hashing them a second time, and a file without one as parsed again
	// next time. May be nil.
	FileHash func(name string) (sum [sha256.Size]byte, ok bool)
}

// Build modes (BuildMode.Mode).
const (
	ModeFull        = "full"
	ModeIncremental = "incremental"
)

// BuildMode says how an index was built; Stats.Build and Info.Build carry it.
type BuildMode struct {
	Mode string `json:"mode"` // "full", "incremental", or "prebuilt" (Adopt)
	// Reason says why a build was full although Content.Previous was set
	// ("no previous index", "schema changed", "62 of 300 packages changed",
	// "previous index inconsistent: ..."); empty otherwise.
	Reason string `json:"reason,omitempty"`
	// PackagesRebuilt counts the packages parsed and validated anew: every
	// package for a full build.
	PackagesRebuilt int `json:"packagesRebuilt"`
}

// Stats describes a built index.
type Stats struct {
	// Digest is the content digest the index records (see Content.ReadDigest).
	Digest   string         `json:"digest"`
	Blobs    int            `json:"blobs"`
	Schemas  map[string]int `json:"schemas"`
	Packages int            `json:"packages"`
	Channels int            `json:"channels"`
	Bundles  int            `json:"bundles"`
	Problems int            `json:"problems"`
	// AllBytes is the size of the catalogd-compatible /all stream.
	AllBytes int64 `json:"allBytes"`
	// Build says how the index was built.
	Build BuildMode `json:"build"`
	// Work says what the build did with the files it parsed, which the
	// index does not record.
	Work BuildWork `json:"work"`
}

// BuildWork is what a build did with the files it parsed.
type BuildWork struct {
	// BlobsReused counts the big blobs (see bigBlobBytes) taken from the
	// previous index without being decoded, checked or compressed.
	BlobsReused int `json:"blobsReused"`
	// CompressedBytes counts the bytes of content compressed for the
	// gzip copy rather than copied from the previous index's.
	CompressedBytes int64 `json:"compressedBytes"`
}

// Build writes the index of src into a new SQLite file at path, the blobs
// into its content and the content's gzip copy (in ContentDir). It parses the catalog as a stream, loads it in one
// transaction, records validation problems per package, then checks the
// result. On any error the files are removed; none of them may exist
// beforehand. Every file Build opens in src.FS is closed by the time it
// returns, whatever the outcome, so that src.ReadDigest then covers all
// Build read.
//
// With src.Previous set, Build reuses what did not change of that index
// (see plan) and makes the files a full build makes, or builds in full
// and says why in Stats.Build.
func Build(ctx context.Context, path string, src Content, builtAt time.Time) (Stats, error) {
	for _, p := range Files(path) {
		if _, statErr := os.Lstat(p); statErr == nil {
			return Stats{}, fmt.Errorf("build index: %s already exists", p)
		}
	}
	mode := BuildMode{Mode: ModeFull}
	if src.Previous == "" {
		return build(ctx, path, src, builtAt, nil, mode)
	}
	extra := map[string]bool{}
	keep := true
	for restarts := 0; ; restarts++ {
		p, err := newPlan(ctx, src, extra)
		var stats Stats
		if err == nil {
			p.keep = keep
			stats, err = build(ctx, path, src, builtAt, p, BuildMode{Mode: ModeIncremental})
			p.close()
		}
		var fb *fallbackError
		var rs *restartError
		switch {
		case err == nil:
			return stats, nil
		case errors.Is(err, errMovesMost) && keep:
			keep = false
			continue
		case errors.As(err, &rs) && restarts < maxRestarts:
			extra[rs.group] = true
			continue
		case errors.As(err, &rs):
			mode.Reason = fmt.Sprintf("more than %d packages spread over changed and unchanged files", maxRestarts)
		case errors.As(err, &fb):
			mode.Reason = fb.reason
		default:
			return Stats{}, err
		}
		return build(ctx, path, src, builtAt, nil, mode)
	}
}

// maxRestarts bounds how often an incremental build starts over having
// met a package in a changed file that it did not expect there (see
// restartError).
const maxRestarts = 8

// build builds the index at path, incrementally along p, or in full when
// p is nil.
func build(ctx context.Context, path string, src Content, builtAt time.Time, p *plan, mode BuildMode) (stats Stats, err error) {
	defer func() {
		if err != nil {
			RemoveFiles(path)
		}
	}()

	dir := ContentDir(path)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return Stats{}, fmt.Errorf("create content directory: %w", fileError(err))
	}
	content := newSegWriter(dir, contentExt, 0)
	defer func() {
		if closeErr := content.close(); closeErr != nil && err == nil {
			err = fmt.Errorf("close content segments: %w", fileError(closeErr))
		}
	}()

	// An incremental build starts from a copy of the previous database
	// (see keptTables), unless it moves most of it.
	if p != nil && p.keep {
		if err := p.copyPrevious(path); err != nil {
			return Stats{}, err
		}
	}
	db, err := openForBuild(path)
	if err != nil {
		return Stats{}, err
	}
	defer func() {
		if closeErr := db.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("close index %s: %w", path, closeErr)
		}
	}()

	if p == nil || !p.keep {
		if err := migrations.Apply(ctx, db, migrations.Tables); err != nil {
			return Stats{}, fmt.Errorf("create tables: %w", err)
		}
	}

	// The gzip copy is written beside the load, from the content as the
	// load writes it.
	gz := startCompress(ctx, content, newSegWriter(dir, gzipExt, int64(len(gzipHeader))))
	defer gz.stop()
	stats, records, big, err := load(ctx, db, content, gz, src, builtAt, p, mode)
	if err != nil {
		return Stats{}, err
	}
	// No ANALYZE: without statistics SQLite takes every table to be large
	// and uses the indexes, so query plans do not flip with catalog size
	// (internal/query's TestQueryPlans checks them). A copy of the
	// previous index has its indexes.
	if p == nil || !p.keep {
		if err := migrations.Apply(ctx, db, migrations.Indexes); err != nil {
			return Stats{}, fmt.Errorf("create indexes: %w", err)
		}
	}
	if err := migrations.Apply(ctx, db, migrations.Counts); err != nil {
		return Stats{}, fmt.Errorf("count the catalog: %w", err)
	}
	segments, err := gz.wait()
	if err != nil {
		return Stats{}, err
	}
	stats.Work.CompressedBytes = gz.compressed
	if err := writeFiles(ctx, db, records, segments, big, gz.blobs); err != nil {
		return Stats{}, err
	}
	if p != nil && p.keep {
		p.writeBack(path)
	}
	if err := check(ctx, db, content, stats); err != nil {
		return Stats{}, err
	}
	m, err := segmentList(content, gz, src.Limits)
	if err != nil {
		return Stats{}, err
	}
	if err := writeManifest(dir, m); err != nil {
		return Stats{}, err
	}
	return stats, nil
}

// The names of a content directory's segment files end so.
const (
	contentExt = ".all"
	gzipExt    = ".gz"
)

// segmentList lists the segments of the content and of the gzip copy gz
// made of it, which must cut it in the same places.
func segmentList(content *segWriter, gz *compressor, limits fbc.Limits) (manifest, error) {
	limits = effectiveLimits(limits)
	m := manifest{CRC: gz.crc, Size: gz.size, FileBytes: limits.FileBytes, BlobBytes: limits.BlobBytes}
	raw, zipped := content.segments(), gz.out.segments()
	if len(raw) != len(zipped) {
		return manifest{}, fmt.Errorf("check content: %d segments, %d in the gzip copy", len(raw), len(zipped))
	}
	var size int64
	for i, r := range raw {
		z := zipped[i]
		if r.files != z.files {
			return manifest{}, fmt.Errorf("check content: segment %d holds %d files, its gzip copy %d", i, r.files, z.files)
		}
		m.Segments = append(m.Segments, segmentRecord{Content: r.name, Gzip: z.name, Files: r.files, Size: r.size, GzipSize: z.size})
		size += r.size
	}
	if size != m.Size {
		return manifest{}, fmt.Errorf("check content: %d bytes in segments, %d compressed", size, m.Size)
	}
	return m, nil
}

// effectiveLimits returns limits with the defaults in place of zeros.
func effectiveLimits(l fbc.Limits) fbc.Limits {
	if l.FileBytes <= 0 {
		l.FileBytes = fbc.DefaultFileBytes
	}
	if l.BlobBytes <= 0 {
		l.BlobBytes = fbc.DefaultBlobBytes
	}
	return l
}

// openForBuild opens a new database file with settings for a fast one-off
// bulk load: nobody else can see the file until it is complete, so a journal
// and fsync per commit buy nothing (the file is synced once at the end).
// The page cache is 256 KiB: the driver's allocator spends up to twice a
// page's size on each cached page, outside the Go heap, and keeps some of
// what a build freed mapped for reuse once the build is done, so each KiB
// of cache is about two of the build's peak resident set. The database is
// written sequentially and re-read through the kernel's page cache: on the
// bench catalog (98 MB) a 256 KiB cache peaks 5-6 MiB below a 2 MiB one
// at the same CPU time, and on the CRD catalog (1.3 GB) it costs 3% more.
// Sorting for CREATE INDEX stays in memory (temp_store): sorting through
// temporary files measured slower and no smaller.
func openForBuild(path string) (*sqlx.DB, error) {
	dsn := FileURI(path, url.Values{"_pragma": {"journal_mode(OFF)", "synchronous(OFF)",
		"locking_mode(EXCLUSIVE)", "temp_store(MEMORY)", "cache_size(-256)", "page_size(8192)"}})
	db, err := sqlx.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// load streams the catalog into the database in one transaction, and the
// blobs' bytes into content, telling gz how much of it is written. It
// returns what writeFiles records once the gzip copy is complete.
func load(ctx context.Context, db *sqlx.DB, content *segWriter, gz *compressor, src Content, builtAt time.Time, p *plan, mode BuildMode) (Stats, []fileRecord, []bigBlob, error) {
	if p != nil {
		if _, err := db.ExecContext(ctx, `ATTACH DATABASE ? AS prev`, previousURI(p.prev)); err != nil {
			return Stats{}, nil, nil, fallback("previous index unreadable: %v", err)
		}
		// Its rows are read once, in order: a cache saves nothing, and
		// would count against the build's memory as the main file's does
		// (see openForBuild).
		if _, err := db.ExecContext(ctx, `PRAGMA prev.cache_size = -256`); err != nil {
			return Stats{}, nil, nil, fmt.Errorf("attach previous index: %w", err)
		}
		// Attached, it would be checked with the new file (check).
		defer db.ExecContext(context.Background(), `DETACH DATABASE prev`) //nolint:errcheck // closing the file detaches it too
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return Stats{}, nil, nil, fmt.Errorf("begin load: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if p != nil && p.keep {
		if err := clearCopy(ctx, tx); err != nil {
			return Stats{}, nil, nil, err
		}
	}

	l, err := newLoader(ctx, tx, content, gz)
	if err != nil {
		return Stats{}, nil, nil, err
	}
	defer l.close()
	l.plan = p

	l.sums = &fileSums{fsys: src.FS, given: src.FileHash}
	// An incremental build takes the hashes of what it read from the
	// source (see Content.FileHash, fileSums.readSum): hashing the files it
	// parses again would be a third of its time where those are large.
	if p == nil {
		l.sums.hashes = newHashFS(src.FS)
		src.FS = l.sums.hashes
	}
	if err := walk(ctx, l, src); err != nil {
		return Stats{}, nil, nil, err
	}
	l.stats.Build = mode
	l.stats.Build.PackagesRebuilt = len(l.pkgs)
	l.stats.Work.BlobsReused = l.reused
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO catalog_info (id, source_ref, content_digest, built_at, all_size, schema_digest, build_mode, build_reason, packages_rebuilt) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)`,
		src.Ref, l.stats.Digest, builtAt.UTC().Format(time.RFC3339Nano), l.stats.AllBytes, migrations.Digest(),
		l.stats.Build.Mode, l.stats.Build.Reason, l.stats.Build.PackagesRebuilt); err != nil {
		return Stats{}, nil, nil, fmt.Errorf("record catalog info: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Stats{}, nil, nil, fmt.Errorf("commit load: %w", err)
	}
	return l.stats, l.records, l.big, nil
}

// walk reads src into l and finishes every package: what Build and Check
// share.
func walk(ctx context.Context, l *loader, src Content) error {
	var paths []string
	if l.plan != nil {
		paths = l.plan.parse
	} else {
		var err error
		if paths, err = fbc.Files(src.FS, src.Limits); err != nil {
			return err
		}
	}
	// olmBlobs says a blob of a schema every catalog holds was read: a
	// fault before any is most likely in a directory that is not a
	// catalog's root (see notACatalog).
	olmBlobs := false
	hooks := fbc.FileHooks{Start: l.fileStart, End: l.fileEnd, Prepare: prepareBlob, Blob: func(ctx context.Context, b fbc.Blob) error {
		switch b.Meta.Schema {
		case declcfg.SchemaPackage, declcfg.SchemaChannel, declcfg.SchemaBundle:
			olmBlobs = true
		}
		return l.add(ctx, b)
	}}
	if l.plan != nil {
		hooks.Known = l.plan.knownHook
	}
	if err := fbc.WalkFiles(ctx, src.FS, src.Limits, paths, hooks); err != nil {
		if l.plan == nil && !olmBlobs {
			notACatalog(err)
		}
		return err
	}
	if l.plan != nil {
		if err := l.copyUpTo(ctx, ""); err != nil {
			return err
		}
	}
	// finish reads blobs back from the file.
	if err := l.content.Flush(); err != nil {
		return fmt.Errorf("write content file: %w", fileError(err))
	}
	l.gz.advance(l.written, true)
	if err := l.finish(ctx); err != nil {
		return err
	}
	l.stats.Digest = src.Digest
	if src.ReadDigest != nil {
		l.stats.Digest = src.ReadDigest()
	}
	return nil
}

// check verifies the finished files before anyone may read them.
func check(ctx context.Context, db *sqlx.DB, content *segWriter, stats Stats) error {
	if err := checkDatabase(ctx, db, stats.Build.Mode); err != nil {
		return err
	}
	counts := []struct {
		table string
		want  int
	}{
		{"blobs", stats.Blobs},
		{"packages", stats.Packages},
		{"channels", stats.Channels},
		{"bundles", stats.Bundles},
	}
	for _, c := range counts {
		var got int
		if err := db.GetContext(ctx, &got, "SELECT count(*) FROM "+c.table); err != nil {
			return fmt.Errorf("count %s: %w", c.table, err)
		}
		if got != c.want {
			return fmt.Errorf("check index: %s has %d rows, loaded %d", c.table, got, c.want)
		}
	}
	var size int64
	for _, s := range content.segments() {
		info, err := s.f.Stat()
		if err != nil {
			return fmt.Errorf("check content: %w", fileError(err))
		}
		if info.Size() != s.size {
			return fmt.Errorf("check content: segment %s holds %d bytes, %d were written", s.name, info.Size(), s.size)
		}
		size += s.size
	}
	if size != stats.AllBytes {
		return fmt.Errorf("check content: %d bytes, loaded %d", size, stats.AllBytes)
	}
	return nil
}

// checkDatabase runs SQLite's check of a finished database file, built
// in the mode given (ModeFull or ModeIncremental).
//
// A full build runs integrity_check. An incremental build runs
// quick_check, a quarter of the cost (0.2 of 0.7 CPU-s on the bench
// catalog, BenchmarkBuildIncremental): it still reads every page of the
// file, so that a torn or lost write, a page used twice or not at all, a
// b-tree out of order, a malformed record or a NULL where NOT NULL stands
// fails the build, which is what writing with neither journal nor sync
// risks. What it leaves out is whether each index holds exactly its
// table's rows, and UNIQUE, both SQLite's own invariants rather than the
// disk's: an incremental build's indexes are those of a checked file,
// copied, and kept up to date by SQLite with every row the build deletes,
// inserts or updates, and every INSERT enforces UNIQUE. A full build,
// which makes its indexes by CREATE INDEX from the finished tables,
// starts every chain of incremental builds and is their fallback, keeps
// the whole check. It is now most of what an edit that moves no ids costs
// (0.05 of 0.15 CPU-s).
func checkDatabase(ctx context.Context, db *sqlx.DB, mode string) error {
	pragma := "PRAGMA integrity_check"
	if mode == ModeIncremental {
		pragma = "PRAGMA quick_check"
	}
	var result string
	if err := db.GetContext(ctx, &result, pragma); err != nil {
		return fmt.Errorf("check index integrity: %w", err)
	}
	if result != "ok" {
		return fmt.Errorf("check index integrity: %s", result)
	}
	return nil
}

// notACatalog adds to a parse fault met before any olm.package,
// olm.channel or olm.bundle blob that the source is likely not a catalog's
// root: a directory of documents, or the catalog's parent, fails on its
// first file that is not YAML, and the fault alone (a YAML error in a
// Markdown file) does not say the path is wrong. The fault keeps its
// position. An incremental build never gets here: its source was a
// catalog before.
func notACatalog(err error) {
	var pe *fbc.Error
	if errors.As(err, &pe) {
		pe.Err = fmt.Errorf("%w (no olm.package, olm.channel or olm.bundle blob was found before it: is the source the file-based catalog's root directory?)", pe.Err)
	}
}

// fileError drops the path from an error about one of the index's own
// files: the message names the file, and its path, a temporary one, means
// nothing to whoever reads the message ("write content file: no space left
// on device").
func fileError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Files lists the files of the index at path, the database first, then
// its content directory (ContentDir): what package store syncs, renames
// and removes as one index.
func Files(path string) []string { return []string{path, ContentDir(path)} }

// RemoveFiles removes the files of an index, its content directory and
// any side files SQLite made beside it. Build uses it on failure, package
// store when it retires an index.
func RemoveFiles(path string) {
	_ = os.RemoveAll(ContentDir(path))
	for _, p := range []string{path, path + "-journal", path + "-wal", path + "-shm"} {
		_ = os.Remove(p)
	}
}

// Info is what an index records about itself when it is built.
type Info struct {
	SourceRef string
	Digest    string
	BuiltAt   time.Time
	// AllBytes is the size of the catalogd-compatible /all stream.
	AllBytes int64
	// Build says how the index was built.
	Build BuildMode
}

// ErrOtherSchema marks an index built by another version of the schema
// (migrations): it cannot be read, only rebuilt.
var ErrOtherSchema = errors.New("index was built with another schema")

// ReadInfo reads what the index in db recorded when it was built. It fails
// with ErrOtherSchema for an index of another schema, since the queries of
// this build cannot read it. The table is Build's to write, so reading it
// lives here too.
func ReadInfo(ctx context.Context, db *sqlx.DB) (Info, error) {
	var info Info
	var builtAt, schema string
	// The schema is read first and alone: a file of another schema may lack
	// the other columns.
	if err := db.GetContext(ctx, &schema, `SELECT schema_digest FROM catalog_info WHERE id = 1`); err != nil {
		return Info{}, fmt.Errorf("read catalog info: %w", err)
	}
	if schema != migrations.Digest() {
		return Info{}, fmt.Errorf("%w (%s)", ErrOtherSchema, schema)
	}
	row := db.QueryRowxContext(ctx, `SELECT source_ref, content_digest, all_size, built_at, build_mode, build_reason, packages_rebuilt FROM catalog_info WHERE id = 1`)
	if err := row.Scan(&info.SourceRef, &info.Digest, &info.AllBytes, &builtAt, &info.Build.Mode, &info.Build.Reason, &info.Build.PackagesRebuilt); err != nil {
		return Info{}, fmt.Errorf("read catalog info: %w", err)
	}
	var err error
	if info.BuiltAt, err = time.Parse(time.RFC3339Nano, builtAt); err != nil {
		return Info{}, fmt.Errorf("read catalog info: build time: %w", err)
	}
	return info, nil
}

// rawJSON returns the exact JSON text of v, or "null" for a missing value.
func rawJSON(v json.RawMessage) string {
	if len(v) == 0 {
		return "null"
	}
	return string(v)
}
