package index

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/internal/fbc"
)

// loader inserts blobs as they stream in: each blob's bytes are appended
// to the content file, its row (schema, names, byte range) to the database. What can only be done once a
// package is complete (operator-registry's validation, version ranks,
// display metadata) is done by finish; until then a
// package's bundles and blobs are noted in two work tables of the file
// (see workTables), not in memory, so a build's memory grows with neither
// the catalog's bytes nor its bundles (only a little with its packages and
// channels). Package and bundle rows are written by finish, when their
// rank and display are known.
type loader struct {
	tx *sqlx.Tx
	// content buffers the writes to file, the content's segments, which
	// finish reads blobs back from once content is flushed, and gz
	// compresses as they are written.
	content *bufio.Writer
	file    *segWriter
	gz      *compressor
	stmts   map[string]*sql.Stmt
	stats   Stats
	pkgs    map[string]*pkgState
	// rows holds the rows of each table not yet inserted (see insert), and
	// rowBytes the bytes of their []byte values.
	rows     map[string][]any
	rowBytes map[string]int
	// Ids are given out here rather than by SQLite, so that rows which refer
	// to a blob, bundle or entry can be batched with it.
	bundleID, entryID int64
	// checkOnly says the loader serves Check: it stores only what
	// validation reads back (see readBack) and collects the problems in
	// problems rather than in the problems table.
	checkOnly bool
	problems  []Problem
	// written is how many bytes the content file holds.
	written int64
	// cur is the record of the file being read, records those of the
	// files read; sums gives their hashes.
	cur     fileRecord
	records []fileRecord
	sums    *fileSums
	// plan is the plan of an incremental build, nil for a full one; next
	// is the place in its actions, action the file being read, and
	// skipWrite says that file's bytes are copied rather than written.
	plan      *plan
	next      int
	action    *fileAction
	skipWrite bool
	// claimed is, by kind, the last id up to which the kept tables of
	// an incremental build's copy of the previous index hold the new
	// index's rows (see claim).
	claimed [idKinds]int64
	// unitStart is where the content's current piece of the gzip copy
	// begins (see gzipSegment); big are the big blobs (bigBlobBytes)
	// written so far outside unchanged files, whose big_blobs rows are
	// written once the gzip copy says where their pieces are; reused
	// counts the blobs taken from the previous index undecoded.
	unitStart int64
	big       []bigBlob
	reused    int
}

// bigBlob is what a build records of a big blob it wrote (the big_blobs
// table) but for its piece of the gzip copy.
type bigBlob struct {
	id       int64
	digest   []byte
	problems *string
	bundle   int64
}

// readBack says whether finish reads blobs of the schema back from the
// content file, which is all of the file Check needs.
func readBack(schema string) bool {
	switch schema {
	case declcfg.SchemaPackage, declcfg.SchemaChannel, declcfg.SchemaDeprecation:
		return true
	}
	return false
}

// pkgState is what the loader keeps in memory of a package during the walk.
type pkgState struct {
	// declared says an olm.package blob was seen.
	declared bool
	// channels holds the names of the package's channels; the first channel
	// of a name is the one indexed.
	channels map[string]bool
}

// workTables note, during the walk, what finish needs of each package: the
// ids of its olm.package, olm.channel and olm.deprecations blobs, the hash
// of each of its blobs (see blobHash) for its digest, and a row
// per bundle with what validation reads of it (problems holds, as a JSON
// array, what checkBundle found); pos is where the blob starts
// (fbc.Position), which the package's problems give. They are dropped
// before the load commits.
const workTables = `
CREATE TABLE work_blobs (
    package TEXT    NOT NULL,
    blob_id INTEGER NOT NULL,
    pos     TEXT    NOT NULL,
    PRIMARY KEY (package, blob_id)
) WITHOUT ROWID;
CREATE TABLE work_bundles (
    package  TEXT    NOT NULL,
    id       INTEGER NOT NULL,
    blob_id  INTEGER NOT NULL,
    name     TEXT    NOT NULL,
    version  TEXT    NOT NULL,
    release  TEXT    NOT NULL,
    image    TEXT    NOT NULL,
    problems TEXT    NOT NULL,
    pos      TEXT    NOT NULL,
    PRIMARY KEY (package, id)
) WITHOUT ROWID;
CREATE TABLE work_digests (
    package TEXT    NOT NULL,
    hash    BLOB    NOT NULL,
    blob_id INTEGER NOT NULL,
    PRIMARY KEY (package, hash, blob_id)
) WITHOUT ROWID;`

// tables are the columns the loader inserts, per table.
var tables = map[string]string{
	"work_blobs":          "package, blob_id, pos",
	"work_bundles":        "package, id, blob_id, name, version, release, image, problems, pos",
	"work_digests":        "package, hash, blob_id",
	"blobs":               "id, schema, package, name, offset, length",
	"packages":            "name, default_channel, description, icon_data, icon_media_type, display, digest",
	"channels":            "package, name, properties, head, head_problem",
	"channel_entries":     "id, package, channel, position, bundle, replaces, skip_range",
	"channel_entry_skips": "entry_id, package, skip",
	"bundles":             "id, package, name, version, release, image, blob_id, ver_major, ver_minor, ver_patch, ver_pre, version_rank, channels",
	"related_images":      "bundle_id, position, name, image",
	"properties":          "bundle_id, position, type, value, value_start, value_length",
	"property_spans":      "bundle_id, spans",
	"provided_gvks":       "bundle_id, position, grp, version, kind",
	"required_gvks":       "bundle_id, position, grp, version, kind",
	"required_packages":   "bundle_id, position, package_name, version_range",
	"deprecations":        "package, schema, name, message, blob_id",
	"problems":            "package, position, message",
	"package_search":      "name, display_name, keywords, provider, description",
}

// insertParams is about how many values one INSERT carries. Running a
// statement costs far more than the row it adds, so rows wait in l.rows and
// go in multi-row statements; but the driver binds parameters in time
// quadratic in their number (it searches the arguments for each one), so
// statements are kept to about a hundred (measured: 96 builds faster than
// 48 or 256).
const insertParams = 96

// insertBytes is about how many bytes of []byte values (icons) one INSERT
// carries: the rows waiting hold them, and SQLite copies each while it
// binds and again while it builds the row.
const insertBytes = 1 << 20

// contentBuffer is the write buffer of the content file.
const contentBuffer = 256 << 10

func newLoader(ctx context.Context, tx *sqlx.Tx, file *segWriter, gz *compressor) (*loader, error) {
	if _, err := tx.ExecContext(ctx, workTables); err != nil {
		return nil, fmt.Errorf("create work tables: %w", err)
	}
	return &loader{tx: tx, content: bufio.NewWriterSize(file, contentBuffer), file: file, gz: gz, stmts: map[string]*sql.Stmt{},
		pkgs: map[string]*pkgState{}, rows: map[string][]any{}, rowBytes: map[string]int{}, stats: Stats{Schemas: map[string]int{}}}, nil
}

func (l *loader) close() {
	for _, s := range l.stmts {
		_ = s.Close()
	}
}

// insert queues one row of table, given as its values in the order of tables[table].
func (l *loader) insert(ctx context.Context, table string, values ...any) error {
	l.rows[table] = append(l.rows[table], values...)
	for _, v := range values {
		// By capacity, which is what a waiting row keeps alive.
		if b, ok := v.([]byte); ok {
			l.rowBytes[table] += cap(b)
		}
	}
	if len(l.rows[table])+len(values) > insertParams || l.rowBytes[table] >= insertBytes {
		return l.flush(ctx, table)
	}
	return nil
}

// flush inserts the queued rows of table.
func (l *loader) flush(ctx context.Context, table string) error {
	values := l.rows[table]
	if len(values) == 0 {
		return nil
	}
	columns := strings.Split(tables[table], ", ")
	n := len(values) / len(columns)
	if k, ok := keptKind[table]; ok && l.plan != nil && l.plan.keep {
		if err := l.claimRows(ctx, k, table, values, len(columns)); err != nil {
			return err
		}
	}
	key := table + "/" + strconv.Itoa(n)
	stmt, ok := l.stmts[key]
	if !ok {
		row := "(?" + strings.Repeat(", ?", len(columns)-1) + ")"
		q := "INSERT INTO " + table + " (" + tables[table] + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
		var err error
		if stmt, err = l.tx.PrepareContext(ctx, q); err != nil {
			return fmt.Errorf("prepare %s insert: %w", table, err)
		}
		l.stmts[key] = stmt
	}
	if _, err := stmt.ExecContext(ctx, values...); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", n, table, err)
	}
	clear(values)
	l.rows[table] = values[:0]
	l.rowBytes[table] = 0
	return nil
}

// flushAll inserts every queued row, so that the tables can be read.
func (l *loader) flushAll(ctx context.Context) error {
	names := make([]string, 0, len(l.rows))
	for table := range l.rows {
		names = append(names, table)
	}
	sort.Strings(names) // one order for every build
	for _, table := range names {
		if err := l.flush(ctx, table); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) pkg(name string) *pkgState {
	p, ok := l.pkgs[name]
	if !ok {
		p = &pkgState{channels: map[string]bool{}}
		l.pkgs[name] = p
	}
	return p
}

// add stores one blob: always its bytes in the content file and its row in
// blobs, and in the typed tables when it is of a schema this index
// understands. A big blob (bigBlobBytes) has a piece of the gzip copy of
// its own, and a row in big_blobs; one the previous index holds (b.Known)
// is taken from there (addKnown).
func (l *loader) add(ctx context.Context, b fbc.Blob) error {
	m := b.Meta
	if err := l.checkPlanned(packageOf(m)); err != nil {
		return err
	}
	if k, ok := b.Known.(*knownBlob); ok {
		return l.addKnown(ctx, b, k)
	}
	blobID := int64(l.stats.Blobs) + 1
	// Units are cut where the content is written: an unchanged file's
	// pieces are copied whole.
	big := !l.checkOnly && !l.skipWrite && int64(len(m.Blob)) >= bigBlobBytes
	if big {
		if err := l.endUnit(0); err != nil {
			return err
		}
	}
	if !l.checkOnly || readBack(m.Schema) {
		// An unchanged file's bytes are copied at its end (skipWrite).
		if !l.skipWrite {
			if _, err := l.content.Write(m.Blob); err != nil {
				return fmt.Errorf("store blob %s %q: write content file: %w", m.Schema, m.Name, fileError(err))
			}
		}
		if err := l.insert(ctx, "blobs", blobID, m.Schema, m.Package, m.Name, l.written, len(m.Blob)); err != nil {
			return fmt.Errorf("store blob %s %q: %w", m.Schema, m.Name, err)
		}
		l.written += int64(len(m.Blob))
	}
	var digest []byte
	if owner := packageOf(m); owner != "" || big {
		digest = blobHash(m)
	}
	if owner := packageOf(m); owner != "" {
		if err := l.insert(ctx, "work_digests", owner, digest, blobID); err != nil {
			return fmt.Errorf("store blob %s %q: %w", m.Schema, m.Name, err)
		}
	}
	l.stats.Blobs++
	l.stats.Schemas[m.Schema]++
	l.stats.AllBytes += int64(len(m.Blob))
	// What the buffer holds is not in the file yet.
	if !l.skipWrite {
		l.gz.advance(l.written-int64(l.content.Buffered()), false)
	}

	pos := b.Pos.String()
	var err error
	var problems *string
	switch v := b.Value.(type) {
	case *declcfg.Package:
		err = l.addPackage(ctx, v, blobID, pos)
	case *declcfg.Channel:
		err = l.addChannel(ctx, v, blobID, pos)
	case *declcfg.Bundle:
		// walk's Prepare hook (prepareBlob) checked every decoded bundle.
		problems, err = l.addBundle(ctx, v, b.Prepared.(*bundleCheck), blobID, pos, b.ValueStarts)
	case *declcfg.Deprecation:
		err = l.addDeprecation(ctx, v, blobID, pos)
	}
	if err != nil || !big {
		return err
	}
	bb := bigBlob{id: blobID, digest: digest, problems: problems}
	if problems != nil {
		bb.bundle = l.bundleID
	}
	l.big = append(l.big, bb)
	return l.endUnit(blobID)
}

// prepareBlob is the walk's Prepare hook (fbc.FileHooks): a bundle's own
// checks (checkBundle) need no other blob, so they run on the goroutine
// that parsed it, beside the loader, whose inserts in walk order are the
// longest stage of a build; add takes the result from Blob.Prepared.
func prepareBlob(b fbc.Blob) any {
	if v, ok := b.Value.(*declcfg.Bundle); ok {
		c := checkBundle(v)
		c.spans, _ = fbc.PropertySpans(b.Meta.Blob)
		return &c
	}
	return nil
}

// checkPlanned checks that an incremental build planned to load the
// package group of a blob: a group it did not know is a new package, one
// it knew and did not plan to load makes it start over (restartError).
func (l *loader) checkPlanned(group string) error {
	if l.plan == nil || l.plan.affected[group] {
		return nil
	}
	if l.plan.known[group] {
		return &restartError{group: group}
	}
	l.plan.affected[group] = true // a new package
	return nil
}

// endUnit ends the content's current piece of the gzip copy, unless it is
// empty, as the piece of the big blob given (0 for none).
func (l *loader) endUnit(blob int64) error {
	if l.written == l.unitStart {
		return nil
	}
	// The piece's bytes must be in the file before the compressor reads
	// them.
	if err := l.content.Flush(); err != nil {
		return fmt.Errorf("write content file: %w", fileError(err))
	}
	l.gz.endSegment(segmentSource{size: l.written - l.unitStart, blob: blob}, l.written)
	l.unitStart = l.written
	return nil
}

// addPackage notes the package for finish, which writes its row with its
// display metadata. A repeated package is only validated (and reported).
func (l *loader) addPackage(ctx context.Context, p *declcfg.Package, blobID int64, pos string) error {
	st := l.pkg(p.Name)
	if !st.declared {
		st.declared = true
		l.stats.Packages++
	}
	return l.insert(ctx, "work_blobs", p.Name, blobID, pos)
}

func (l *loader) addChannel(ctx context.Context, c *declcfg.Channel, blobID int64, pos string) error {
	st := l.pkg(c.Package)
	if err := l.insert(ctx, "work_blobs", c.Package, blobID, pos); err != nil {
		return fmt.Errorf("index channel %q of package %q: %w", c.Name, c.Package, err)
	}
	if st.channels[c.Name] {
		return nil // a duplicate: validation records it, the first one answers
	}
	st.channels[c.Name] = true
	l.stats.Channels++
	if l.checkOnly {
		return nil
	}
	for i, e := range c.Entries {
		l.entryID++
		if err := l.insert(ctx, "channel_entries", l.entryID, c.Package, c.Name, i, e.Name, e.Replaces, e.SkipRange); err != nil {
			return fmt.Errorf("index entry %q of channel %q: %w", e.Name, c.Name, err)
		}
		for _, skip := range e.Skips {
			if err := l.insert(ctx, "channel_entry_skips", l.entryID, c.Package, skip); err != nil {
				return fmt.Errorf("index skips of entry %q: %w", e.Name, err)
			}
		}
	}
	return nil
}

// addBundle stores the bundle's parts (properties, related images, GVKs
// and required packages) and notes its row for finish, with what
// checkBundle found wrong with it (check), which it returns as stored. A bundle
// repeating an earlier one's name is stored the same way; finish, which
// sees the whole package, removes its parts again and only validates it.
func (l *loader) addBundle(ctx context.Context, b *declcfg.Bundle, check *bundleCheck, blobID int64, pos string, valueStarts []int) (*string, error) {
	l.pkg(b.Package)
	l.bundleID++
	id := l.bundleID

	data, err := json.Marshal(check.problems)
	if err != nil {
		return nil, fmt.Errorf("index bundle %q: %w", b.Name, err)
	}
	problems := string(data)
	if err := l.insert(ctx, "work_bundles", b.Package, id, blobID, b.Name, check.version, check.release, b.Image, problems, pos); err != nil {
		return nil, fmt.Errorf("index bundle %q: %w", b.Name, err)
	}
	if l.checkOnly {
		return &problems, nil
	}

	for i, v := range check.values {
		if row := typedRowOf(id, i, v); row.table != "" {
			if err := l.insert(ctx, row.table, row.values...); err != nil {
				return nil, fmt.Errorf("index property %d (%s) of bundle %q: %w", i, b.Properties[i].Type, b.Name, err)
			}
		}
	}
	for i, ri := range b.RelatedImages {
		if err := l.insert(ctx, "related_images", id, i, ri.Name, ri.Image); err != nil {
			return nil, fmt.Errorf("index related images of bundle %q: %w", b.Name, err)
		}
	}
	for i, p := range b.Properties {
		var err error
		if at := valueStarts[i]; at >= 0 {
			err = l.insert(ctx, "properties", id, i, p.Type, nil, at, len(p.Value))
		} else {
			err = l.insert(ctx, "properties", id, i, p.Type, rawJSON(p.Value), nil, nil)
		}
		if err != nil {
			return nil, fmt.Errorf("index properties of bundle %q: %w", b.Name, err)
		}
	}
	if check.spans != nil {
		if err := l.insert(ctx, "property_spans", id, check.spans); err != nil {
			return nil, fmt.Errorf("index properties of bundle %q: %w", b.Name, err)
		}
	}
	return &problems, nil
}

// typedRow is a row of one of the tables that hold a property type queries
// filter on.
type typedRow struct {
	table  string
	values []any
}

// typedRowOf is the row of a decoded property (see decodeProperty) of a
// type queries filter on; other types, and values that did not decode
// (nil), have none (an empty table).
func typedRowOf(bundleID int64, position int, value any) typedRow {
	switch v := value.(type) {
	case *property.GVK:
		return typedRow{"provided_gvks", []any{bundleID, position, v.Group, v.Version, v.Kind}}
	case *property.GVKRequired:
		return typedRow{"required_gvks", []any{bundleID, position, v.Group, v.Version, v.Kind}}
	case *property.PackageRequired:
		return typedRow{"required_packages", []any{bundleID, position, v.PackageName, v.VersionRange}}
	}
	return typedRow{}
}

func (l *loader) addDeprecation(ctx context.Context, d *declcfg.Deprecation, blobID int64, pos string) error {
	if err := l.insert(ctx, "work_blobs", d.Package, blobID, pos); err != nil {
		return fmt.Errorf("index deprecations of package %q: %w", d.Package, err)
	}
	l.pkg(d.Package)
	if l.checkOnly {
		return nil
	}
	for _, e := range d.Entries {
		if err := l.insert(ctx, "deprecations", d.Package, e.Reference.Schema, e.Reference.Name, e.Message, blobID); err != nil {
			return fmt.Errorf("index deprecations of package %q: %w", d.Package, err)
		}
	}
	return nil
}
