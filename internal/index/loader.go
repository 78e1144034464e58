package index

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

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
	// content buffers the writes to file, the content file, which finish
	// reads blobs back from once content is flushed, and gz compresses as
	// it is written.
	content *bufio.Writer
	file    *os.File
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
// ids of its olm.package, olm.channel and olm.deprecations blobs, and a row
// per bundle with what validation reads of it. They are dropped before the
// load commits.
const workTables = `
CREATE TABLE work_blobs (
    package TEXT    NOT NULL,
    blob_id INTEGER NOT NULL,
    PRIMARY KEY (package, blob_id)
) WITHOUT ROWID;
CREATE TABLE work_bundles (
    package TEXT    NOT NULL,
    id      INTEGER NOT NULL,
    blob_id INTEGER NOT NULL,
    name    TEXT    NOT NULL,
    version TEXT    NOT NULL,
    release TEXT    NOT NULL,
    image   TEXT    NOT NULL,
    props   TEXT    NOT NULL,
    objects INTEGER NOT NULL,
    PRIMARY KEY (package, id)
) WITHOUT ROWID;`

// tables are the columns the loader inserts, per table.
var tables = map[string]string{
	"work_blobs":          "package, blob_id",
	"work_bundles":        "package, id, blob_id, name, version, release, image, props, objects",
	"blobs":               "id, schema, package, name, offset, length",
	"packages":            "name, default_channel, description, icon_data, icon_media_type, display",
	"channels":            "package, name, properties, head, head_problem",
	"channel_entries":     "id, package, channel, position, bundle, replaces, skip_range",
	"channel_entry_skips": "entry_id, package, skip",
	"bundles":             "id, package, name, version, release, image, blob_id, ver_major, ver_minor, ver_patch, ver_pre, version_rank, channels",
	"related_images":      "bundle_id, position, name, image",
	"properties":          "bundle_id, position, type, value, value_start, value_length",
	"provided_gvks":       "bundle_id, position, grp, version, kind",
	"required_gvks":       "bundle_id, position, grp, version, kind",
	"required_packages":   "bundle_id, position, package_name, version_range",
	"deprecations":        "package, schema, name, message",
	"problems":            "package, message",
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

func newLoader(ctx context.Context, tx *sqlx.Tx, file *os.File, gz *compressor) (*loader, error) {
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
// understands.
func (l *loader) add(ctx context.Context, b fbc.Blob) error {
	m := b.Meta
	blobID := int64(l.stats.Blobs) + 1
	if _, err := l.content.Write(m.Blob); err != nil {
		return fmt.Errorf("store blob %s %q: write content file: %w", m.Schema, m.Name, fileError(err))
	}
	if err := l.insert(ctx, "blobs", blobID, m.Schema, m.Package, m.Name, l.stats.AllBytes, len(m.Blob)); err != nil {
		return fmt.Errorf("store blob %s %q: %w", m.Schema, m.Name, err)
	}
	l.stats.Blobs++
	l.stats.Schemas[m.Schema]++
	l.stats.AllBytes += int64(len(m.Blob))
	// What the buffer holds is not in the file yet.
	l.gz.advance(l.stats.AllBytes-int64(l.content.Buffered()), false)

	switch v := b.Value.(type) {
	case *declcfg.Package:
		return l.addPackage(ctx, v, blobID)
	case *declcfg.Channel:
		return l.addChannel(ctx, v, blobID)
	case *declcfg.Bundle:
		return l.addBundle(ctx, v, blobID, b.ValueStarts)
	case *declcfg.Deprecation:
		return l.addDeprecation(ctx, v, blobID)
	}
	return nil
}

// addPackage notes the package for finish, which writes its row with its
// display metadata. A repeated package is only validated (and reported).
func (l *loader) addPackage(ctx context.Context, p *declcfg.Package, blobID int64) error {
	st := l.pkg(p.Name)
	if !st.declared {
		st.declared = true
		l.stats.Packages++
	}
	return l.insert(ctx, "work_blobs", p.Name, blobID)
}

func (l *loader) addChannel(ctx context.Context, c *declcfg.Channel, blobID int64) error {
	st := l.pkg(c.Package)
	if err := l.insert(ctx, "work_blobs", c.Package, blobID); err != nil {
		return fmt.Errorf("index channel %q of package %q: %w", c.Name, c.Package, err)
	}
	if st.channels[c.Name] {
		return nil // a duplicate: validation records it, the first one answers
	}
	st.channels[c.Name] = true
	head, problem := channelHead(c.Entries)
	var headArg, problemArg any
	if problem == "" {
		headArg = head
	} else {
		problemArg = problem
	}
	props, err := json.Marshal(c.Properties)
	if err != nil {
		return fmt.Errorf("index channel %q of package %q: %w", c.Name, c.Package, err)
	}
	if len(c.Properties) == 0 {
		props = []byte("[]")
	}
	if err := l.insert(ctx, "channels", c.Package, c.Name, string(props), headArg, problemArg); err != nil {
		return fmt.Errorf("index channel %q of package %q: %w", c.Name, c.Package, err)
	}
	l.stats.Channels++
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

// channelHead finds the entry that no other entry replaces or skips, as
// operator-registry's model.Channel.Head does (skipRange does not count).
// When there is not exactly one, it returns a problem naming the candidates.
func channelHead(entries []declcfg.ChannelEntry) (head, problem string) {
	incoming := map[string]bool{}
	for _, e := range entries {
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			incoming[s] = true
		}
	}
	var heads []string
	seen := map[string]bool{}
	for _, e := range entries {
		if !incoming[e.Name] && !seen[e.Name] {
			heads = append(heads, e.Name)
			seen[e.Name] = true
		}
	}
	switch len(heads) {
	case 1:
		return heads[0], ""
	case 0:
		return "", "no channel head: every entry is replaced or skipped by another"
	default:
		sort.Strings(heads)
		return "", "multiple channel heads: " + strings.Join(heads, ", ")
	}
}

// packageProperty is olm.package's value; release is read too, for catalogs
// that carry it.
type packageProperty struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
	Release     string `json:"release"`
}

// addBundle stores the bundle's parts (properties, related images, GVKs
// and required packages) and notes its row for finish. A bundle repeating an
// earlier one's name is stored the same way; finish, which sees the whole
// package, removes its parts again and only validates it.
func (l *loader) addBundle(ctx context.Context, b *declcfg.Bundle, blobID int64, valueStarts []int) error {
	l.pkg(b.Package)
	l.bundleID++
	id := l.bundleID

	var pkgProp packageProperty
	// kept is what operator-registry's validation reads of the properties:
	// olm.package and olm.channel. Of the other types it interprets, it
	// only checks that each value decodes; those are decoded here, into
	// the same types, and left out when they do.
	var kept []property.Property
	decodes, objects := true, false
	for i, p := range b.Properties {
		var err error
		switch p.Type {
		case property.TypePackage:
			err = json.Unmarshal(p.Value, &pkgProp)
			kept = append(kept, p)
		case property.TypeChannel:
			err = json.Unmarshal(p.Value, &property.Channel{})
			kept = append(kept, p)
		case property.TypeBundleObject:
			objects = true
		default:
			var row typedRow
			if row, err = typedRowOf(id, i, p); err == nil && row.table != "" {
				if err := l.insert(ctx, row.table, row.values...); err != nil {
					return fmt.Errorf("index property %d (%s) of bundle %q: %w", i, p.Type, b.Name, err)
				}
			}
		}
		decodes = decodes && err == nil
	}
	if !decodes {
		// Validation reports the first property that does not decode, by
		// its position: it gets them all, so the report is its own.
		kept = b.Properties
	}
	props, err := storeProperties(kept)
	if err != nil {
		return fmt.Errorf("index bundle %q: %w", b.Name, err)
	}
	if err := l.insert(ctx, "work_bundles", b.Package, id, blobID, b.Name, pkgProp.Version, pkgProp.Release, b.Image, props, objects); err != nil {
		return fmt.Errorf("index bundle %q: %w", b.Name, err)
	}

	for i, ri := range b.RelatedImages {
		if err := l.insert(ctx, "related_images", id, i, ri.Name, ri.Image); err != nil {
			return fmt.Errorf("index related images of bundle %q: %w", b.Name, err)
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
			return fmt.Errorf("index properties of bundle %q: %w", b.Name, err)
		}
	}
	return nil
}

// storeProperties encodes properties for the work table (see
// storedProperty), values as they are.
func storeProperties(props []property.Property) (string, error) {
	stored := make([]storedProperty, len(props))
	for i, p := range props {
		stored[i] = storedProperty(p)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(stored)
	return buf.String(), err
}

// typedRow is a row of one of the tables that hold a property type queries
// filter on.
type typedRow struct {
	table  string
	values []any
}

// typedRowOf decodes a property of a type queries filter on into its row;
// other types have none (an empty table). A value of the wrong shape is an
// error: it stays in properties only, and validation reports it.
func typedRowOf(bundleID int64, position int, p property.Property) (typedRow, error) {
	switch p.Type {
	case property.TypeGVK:
		var g property.GVK
		err := json.Unmarshal(p.Value, &g)
		return typedRow{"provided_gvks", []any{bundleID, position, g.Group, g.Version, g.Kind}}, err
	case property.TypeGVKRequired:
		var g property.GVKRequired
		err := json.Unmarshal(p.Value, &g)
		return typedRow{"required_gvks", []any{bundleID, position, g.Group, g.Version, g.Kind}}, err
	case property.TypePackageRequired:
		var r property.PackageRequired
		err := json.Unmarshal(p.Value, &r)
		return typedRow{"required_packages", []any{bundleID, position, r.PackageName, r.VersionRange}}, err
	}
	return typedRow{}, nil
}

func (l *loader) addDeprecation(ctx context.Context, d *declcfg.Deprecation, blobID int64) error {
	if err := l.insert(ctx, "work_blobs", d.Package, blobID); err != nil {
		return fmt.Errorf("index deprecations of package %q: %w", d.Package, err)
	}
	l.pkg(d.Package)
	for _, e := range d.Entries {
		if err := l.insert(ctx, "deprecations", d.Package, e.Reference.Schema, e.Reference.Name, e.Message); err != nil {
			return fmt.Errorf("index deprecations of package %q: %w", d.Package, err)
		}
	}
	return nil
}
