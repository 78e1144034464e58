// Package index builds the catalog index: it turns a file-based catalog (an
// fs.FS) into one SQLite database file. Building is streaming and
// transactional, and the file is checked before Build returns; package
// store keeps, per catalog, the one file that is live and swaps in a new
// one only once Build succeeded.
package index

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"
	"unicode"

	"github.com/jmoiron/sqlx"
	"github.com/joelanford/ignore"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/catalogd/catalogd/migrations"
)

// ErrInvalidCatalog marks content that is not a catalog: bad JSON or YAML, a
// blob without a schema, a blob of the wrong shape. The same content always
// fails the same way, so retrying it without a change is pointless.
var ErrInvalidCatalog = errors.New("invalid catalog")

func invalid(err error) error { return fmt.Errorf("%w: %w", ErrInvalidCatalog, err) }

// Source is catalog content to index.
type Source struct {
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
	Limits Limits
}

// Stats describes a built index.
type Stats struct {
	// Digest is the content digest the index records (see Source.ReadDigest).
	Digest   string         `json:"digest"`
	Blobs    int            `json:"blobs"`
	Schemas  map[string]int `json:"schemas"`
	Packages int            `json:"packages"`
	Channels int            `json:"channels"`
	Bundles  int            `json:"bundles"`
	Problems int            `json:"problems"`
	// AllBytes is the size of the catalogd-compatible /all stream.
	AllBytes int64 `json:"allBytes"`
}

// Build writes the index of src into a new SQLite file at path. It parses the
// catalog as a stream, loads it in one transaction, records validation
// problems per package, then checks the result. On any error the file is
// removed; path must not exist beforehand. Every file Build opens in src.FS
// is closed by the time it returns, whatever the outcome, so that
// src.ReadDigest then covers all Build read.
func Build(ctx context.Context, path string, src Source, builtAt time.Time) (stats Stats, err error) {
	if _, statErr := os.Lstat(path); statErr == nil {
		return Stats{}, fmt.Errorf("build index: %s already exists", path)
	}
	defer func() {
		if err != nil {
			removeDBFiles(path)
		}
	}()

	db, err := openForBuild(path)
	if err != nil {
		return Stats{}, err
	}
	defer func() {
		if closeErr := db.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("close index %s: %w", path, closeErr)
		}
	}()

	if err := migrations.Apply(ctx, db, migrations.Tables); err != nil {
		return Stats{}, fmt.Errorf("create tables: %w", err)
	}

	stats, err = load(ctx, db, src, builtAt)
	if err != nil {
		return Stats{}, err
	}
	// No ANALYZE: without statistics SQLite takes every table to be large
	// and uses the indexes, so query plans do not flip with catalog size
	// (internal/httpapi's TestQueryPlans checks them).
	if err := migrations.Apply(ctx, db, migrations.Indexes); err != nil {
		return Stats{}, fmt.Errorf("create indexes: %w", err)
	}
	if err := check(ctx, db, stats); err != nil {
		return Stats{}, err
	}
	return stats, nil
}

// openForBuild opens a new database file with settings for a fast one-off
// bulk load: nobody else can see the file until it is complete, so a journal
// and fsync per commit buy nothing (the file is synced once at the end).
// The page cache is 8 MiB: the driver's allocator spends about twice a
// page's size on each cached page, so the 32 MiB tried before cost some
// 70 MiB of RSS, and builds measured no faster for it.
func openForBuild(path string) (*sqlx.DB, error) {
	dsn := FileURI(path, url.Values{"_pragma": {"journal_mode(OFF)", "synchronous(OFF)",
		"locking_mode(EXCLUSIVE)", "temp_store(MEMORY)", "cache_size(-8192)", "page_size(8192)"}})
	db, err := sqlx.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// load streams the catalog into the database in one transaction.
func load(ctx context.Context, db *sqlx.DB, src Source, builtAt time.Time) (Stats, error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return Stats{}, fmt.Errorf("begin load: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit

	l, err := newLoader(ctx, tx)
	if err != nil {
		return Stats{}, err
	}
	defer l.close()

	limits := buildLimits
	limits.content = src.Limits
	if err := walk(ctx, src.FS, limits, l.add); err != nil {
		return Stats{}, err
	}
	if err := l.finish(ctx); err != nil {
		return Stats{}, err
	}
	l.stats.Digest = src.Digest
	if src.ReadDigest != nil {
		l.stats.Digest = src.ReadDigest()
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO catalog_info (id, source_ref, content_digest, built_at, all_size, schema_digest) VALUES (1, ?, ?, ?, ?, ?)`,
		src.Ref, l.stats.Digest, builtAt.UTC().Format(time.RFC3339Nano), l.stats.AllBytes, migrations.Digest()); err != nil {
		return Stats{}, fmt.Errorf("record catalog info: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Stats{}, fmt.Errorf("commit load: %w", err)
	}
	return l.stats, nil
}

// blob is one parsed blob, with its typed value decoded for the schemas the
// index interprets (a declcfg.Package, Channel, Bundle or Deprecation).
type blob struct {
	meta  *declcfg.Meta
	value any
	// valueStarts holds, for a bundle, where each property's value starts
	// in meta.Blob (-1 when it has none).
	valueStarts []int
	err         error
}

// size is what a blob counts against the walk's byte budget.
func (b blob) size() int64 {
	if b.meta == nil {
		return 0
	}
	return int64(len(b.meta.Blob))
}

// walkLimits bound a walk: it parses workers files at once, up to
// aheadFiles files ahead of the loader, and holds about aheadBytes of
// parsed blobs (see byteBudget). A file's blobs wait in a channel of
// fileBuffer, so that a worker rarely blocks on a long file and leaves its
// core idle; the byte budget, not the channel, bounds the memory a build
// holds, whatever the catalog's size.
//
// One worker: the loader, which writes SQLite on one goroutine, is the
// slower side (an 8,000-bundle catalog built in the same time with one
// worker as with two), and each worker is one more blob of many MB held in
// two copies (as read and as encoded) while it parses. The budget is a few
// MB for the same reason: it is what lets a parser run ahead of the loader,
// which small blobs need and large ones only pay for in memory.
type walkLimits struct {
	workers, aheadFiles, fileBuffer int
	aheadBytes                      int64
	// content bounds each file and blob (see Limits).
	content Limits
}

var buildLimits = walkLimits{workers: 1, aheadFiles: 32, fileBuffer: 1024, aheadBytes: 4 << 20}

// walk parses the catalog's files and calls add with each blob, in walk
// order. It returns once every file it opened is closed, even when it
// stops early.
func walk(ctx context.Context, fsys fs.FS, limits walkLimits, add func(context.Context, blob) error) error {
	if fsys == nil {
		return errors.New("parse catalog: no filesystem given")
	}
	content := limits.content.withDefaults()
	paths, err := catalogFiles(fsys, content)
	if err != nil {
		return fmt.Errorf("list catalog files: %w", err)
	}
	// Cancelled first, then waited for: parsers stop at their next blob.
	var parsers sync.WaitGroup
	defer parsers.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The launcher opens files in walk order; the loader takes each file's
	// channel from opened in the same order.
	budget := newByteBudget(ctx, limits.aheadBytes)
	opened := make(chan chan blob, limits.aheadFiles)
	workers := make(chan struct{}, limits.workers)
	parsers.Go(func() {
		defer close(opened)
		for i, path := range paths {
			file := make(chan blob, limits.fileBuffer)
			select {
			case opened <- file:
			case <-ctx.Done():
				return
			}
			select {
			case workers <- struct{}{}:
			case <-ctx.Done():
				close(file) // the loader may be waiting on it; it finds ctx done
				return
			}
			parsers.Go(func() {
				defer func() { <-workers }()
				parseFile(ctx, fsys, path, content, file, fileBudget{budget, i})
			})
		}
	})

	i := -1
	for file := range opened {
		i++
		budget.advance(i)
		for b := range file {
			if b.err != nil {
				return b.err
			}
			err := add(ctx, b)
			budget.release(i, b.size())
			if err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// byteBudget bounds the bytes of blobs being parsed or waiting for the
// loader: all files together hold at most limit, except the file the
// loader reads, which only waits for its own blobs (and so never on files
// behind it, whose blobs the loader cannot free before it). Memory is thus
// about twice the limit. A blob is reserved as it is read. One larger than
// the limit passes alone, and only in the loader's file, once the loader
// has stored that file's earlier blobs: so at most one such blob is being
// read while the loader stores another, however many files are ahead.
type byteBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	ctx   context.Context
	limit int64
	used  int64
	// held is the bytes waiting or being parsed, per file; partial, of
	// those, the bytes reserved for the blob the file's parser is on.
	held, partial map[int]int64
	// head is the index of the file the loader reads.
	head int
}

func newByteBudget(ctx context.Context, limit int64) *byteBudget {
	b := &byteBudget{ctx: ctx, limit: limit, held: map[int]int64{}, partial: map[int]int64{}}
	b.cond = sync.NewCond(&b.mu)
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.cond.Broadcast()
	})
	return b
}

// reserve waits until n more bytes of the blob file's parser is on fit,
// and reports false if the walk was cancelled meanwhile.
func (b *byteBudget) reserve(file int, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.ctx.Err() == nil {
		if file == b.head && b.held[file]-b.partial[file] == 0 {
			break
		}
		waiting := b.used
		if file == b.head {
			waiting = b.held[file]
		}
		if waiting+n <= b.limit {
			break
		}
		b.cond.Wait()
	}
	b.used += n
	b.held[file] += n
	b.partial[file] += n
	return b.ctx.Err() == nil
}

// settle ends the blob file's parser was on: what was reserved for it
// becomes size, the bytes it holds until the loader has it.
func (b *byteBudget) settle(file int, size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delta := size - b.partial[file]
	delete(b.partial, file)
	b.used += delta
	if b.held[file] += delta; b.held[file] == 0 {
		delete(b.held, file)
	}
	b.cond.Broadcast()
}

// acquire reserves a whole blob of n bytes at once (see reserve).
func (b *byteBudget) acquire(file int, n int64) bool {
	ok := b.reserve(file, n)
	b.settle(file, n)
	return ok
}

// release returns the bytes of a blob of file once the loader has it.
func (b *byteBudget) release(file int, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.held[file] -= n; b.held[file] == 0 {
		delete(b.held, file)
	}
	b.cond.Broadcast()
}

// fileBudget is the budget as one file's parser uses it.
type fileBudget struct {
	b    *byteBudget
	file int
}

func (f fileBudget) reserve(n int64) bool { return f.b.reserve(f.file, n) }
func (f fileBudget) settle(size int64)    { f.b.settle(f.file, size) }

// advance tells the budget which file the loader now reads.
func (b *byteBudget) advance(file int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.head = file
	b.cond.Broadcast()
}

// catalogFiles lists the catalog's files as declcfg walks them: lexical
// order, skipping .indexignore files and what their patterns match. The
// entries are counted against limits.Files before the ignore matcher walks
// the whole tree in its turn.
func catalogFiles(fsys fs.FS, limits Limits) ([]string, error) {
	var paths []string
	entries := 0
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == "." {
			return nil
		}
		entries++
		if err := limits.CheckFiles(entries); err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != ".indexignore" {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	matcher, err := ignore.NewMatcher(fsys, ".indexignore")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(paths, func(p string) bool { return matcher.Match(p, false) }), nil
}

// parseFile streams one file's blobs into out and closes it; a failure is
// sent as the last blob. Each blob's bytes are reserved in budget while it
// is read and decoded, so that the walk's memory stays within the budget
// whatever the size of single blobs.
//
// A JSON stream (a file whose first non-space byte is '{') is read one
// value at a time and each blob encoded by canonicalMeta, in about its own
// size in memory. Anything else, and a JSON stream whose first two values
// do not both parse (operator-registry's parser then reads the rest as
// YAML), goes to operator-registry's parser, which takes several times a
// blob's size.
func parseFile(ctx context.Context, fsys fs.FS, path string, limits Limits, out chan<- blob, budget fileBudget) {
	defer close(out)
	send := func(b blob) bool {
		budget.settle(b.size())
		select {
		case out <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(err error) { send(blob{err: fmt.Errorf("parse %s: %w", path, err)}) }

	f, err := fsys.Open(path)
	if err != nil {
		fail(err)
		return
	}
	guarded := newGuardedReader(f, limits)
	head := make([]byte, 4096)
	n, err := io.ReadFull(guarded, head)
	head = head[:n]
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		f.Close()
		fail(readError(guarded, err))
		return
	}
	if bytes.HasPrefix(bytes.TrimLeftFunc(head, unicode.IsSpace), []byte("{")) {
		done, err := parseJSONStream(ctx, io.MultiReader(bytes.NewReader(head), guarded), guarded, limits, budget, send)
		f.Close()
		if done {
			if err != nil {
				fail(err)
			}
			return
		}
		budget.settle(0)
		if f, err = fsys.Open(path); err != nil {
			fail(err)
			return
		}
		guarded, head = newGuardedReader(f, limits), nil
	}
	defer f.Close()
	err = declcfg.WalkMetasReader(io.MultiReader(bytes.NewReader(head), guarded), func(meta *declcfg.Meta, err error) error {
		if err != nil {
			return readError(guarded, err)
		}
		b, err := newBlob(meta, limits)
		if err != nil {
			return err
		}
		if !budget.reserve(b.size()) || !send(b) {
			return ctx.Err()
		}
		return nil
	})
	if err == nil && guarded.err != nil {
		err = invalid(guarded.err) // a limit broken where the parser stopped anyway
	}
	if err != nil {
		fail(err)
	}
}

// readError is the error of a parser that stopped on err: the guard's, if
// it stopped the reading (the parser's error then only says it could not
// read on), else the parser's.
func readError(guarded *guardedReader, err error) error {
	if guarded.err != nil {
		return invalid(guarded.err)
	}
	return invalid(err)
}

// parseJSONStream sends the blobs of a JSON stream; see parseFile. It
// reports done == false, having sent nothing, when the stream's first two
// values do not both parse.
func parseJSONStream(ctx context.Context, r io.Reader, guarded *guardedReader, limits Limits, budget fileBudget, send func(blob) bool) (done bool, err error) {
	split := &jsonSplitter{r: r}
	var first []blob // held until a second value parses
	parsed := 0
	for {
		raw, err := split.nextValue(func(n int) bool { return budget.reserve(int64(n)) })
		if err == io.EOF {
			break
		}
		if errors.Is(err, errCancelled) {
			return true, ctx.Err()
		}
		var meta *declcfg.Meta
		if err == nil {
			// The encoding takes about the value's size again.
			if !budget.reserve(int64(len(raw))) {
				return true, ctx.Err()
			}
			var ok bool
			out := make([]byte, 0, len(raw)+1)
			if meta, ok = canonicalMeta(raw, out); !ok {
				meta = &declcfg.Meta{}
				err = meta.UnmarshalJSON(raw)
			}
		}
		if err != nil {
			switch {
			case guarded.err != nil:
				return true, invalid(guarded.err)
			case parsed < 2:
				return false, nil
			}
			return true, invalid(fmt.Errorf("JSON value %d: %w", parsed+1, err))
		}
		parsed++
		b, err := newBlob(meta, limits)
		if err != nil {
			return true, err
		}
		if parsed == 1 {
			first = append(first, b)
			continue
		}
		for _, b := range append(first, b) {
			if !send(b) {
				return true, ctx.Err()
			}
		}
		first = nil
	}
	for _, b := range first {
		if !send(b) {
			return true, ctx.Err()
		}
	}
	return true, nil
}

// newBlob checks a parsed blob and decodes its typed value.
func newBlob(meta *declcfg.Meta, limits Limits) (blob, error) {
	if meta.Schema == "" {
		return blob{}, invalid(fmt.Errorf("blob without a schema: %.200s", meta.Blob))
	}
	if n := int64(len(bytes.TrimSuffix(meta.Blob, []byte("\n")))); n > limits.BlobBytes {
		// A YAML document can grow on the way to JSON.
		return blob{}, invalid(fmt.Errorf("blob %s %q is %d bytes, over the limit of %d bytes per blob", meta.Schema, meta.Name, n, limits.BlobBytes))
	}
	value, starts, err := decodeValue(meta)
	if err != nil {
		return blob{}, invalid(err)
	}
	return blob{meta: meta, value: value, valueStarts: starts}, nil
}

// findValueStarts finds where each property's value stands in the blob it
// was decoded from by encoding/json. A decoded value is a byte-for-byte slice of its blob, so
// any place holding the same bytes serves; properties are searched in
// order, each from where the previous one ended.
func findValueStarts(blob []byte, props []property.Property) []int {
	starts := make([]int, len(props))
	pos := 0
	for i, p := range props {
		starts[i] = -1
		if len(p.Value) == 0 {
			continue
		}
		j := bytes.Index(blob[pos:], p.Value)
		if j < 0 {
			j = bytes.Index(blob, p.Value)
			if j < 0 {
				continue
			}
			pos = 0
		}
		starts[i] = pos + j
		pos += j + len(p.Value)
	}
	return starts
}

// decodeValue decodes the typed value of a blob of a schema the index
// interprets; other schemas have none. For a bundle it also returns where
// each property's value starts in the blob (see blob.valueStarts).
func decodeValue(m *declcfg.Meta) (value any, valueStarts []int, err error) {
	var v any
	switch m.Schema {
	case declcfg.SchemaPackage:
		v = &declcfg.Package{}
	case declcfg.SchemaChannel:
		v = &declcfg.Channel{}
	case declcfg.SchemaBundle:
		if b, starts, ok := scanBundle(m.Blob); ok {
			return b, starts, nil
		}
		v = &declcfg.Bundle{}
	case declcfg.SchemaDeprecation:
		v = &declcfg.Deprecation{}
	default:
		return nil, nil, nil
	}
	if err := json.Unmarshal(m.Blob, v); err != nil {
		return nil, nil, fmt.Errorf("parse %s %q: %w", m.Schema, m.Name, err)
	}
	if b, ok := v.(*declcfg.Bundle); ok {
		valueStarts = findValueStarts(m.Blob, b.Properties)
	}
	return v, valueStarts, nil
}

// check verifies the finished file before anyone may read it.
func check(ctx context.Context, db *sqlx.DB, stats Stats) error {
	var result string
	if err := db.GetContext(ctx, &result, "PRAGMA integrity_check"); err != nil {
		return fmt.Errorf("check index integrity: %w", err)
	}
	if result != "ok" {
		return fmt.Errorf("check index integrity: %s", result)
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
	return nil
}

// removeDBFiles removes a database file and any side files SQLite made.
func removeDBFiles(path string) {
	for _, p := range []string{path, path + "-journal", path + "-wal", path + "-shm"} {
		_ = os.Remove(p)
	}
}

// rawJSON returns the exact JSON text of v, or "null" for a missing value.
func rawJSON(v json.RawMessage) string {
	if len(v) == 0 {
		return "null"
	}
	return string(v)
}
