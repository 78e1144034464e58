package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/fbc"
)

// The reads below answer OLM v0's registry API (operator-registry's
// api.Registry), which sees a catalog as channel entries: a bundle once per
// channel that lists it, with that entry's replaces, skips and skipRange.

// EntryRef is a channel entry: the bundle a channel lists, with the edges
// the entry gives it.
type EntryRef struct {
	Package, Channel, Bundle, Replaces string
	Skips                              []string
}

// ChannelBundle is a bundle as one channel lists it: everything the index
// holds of the bundle that the registry API answers, its entry in that
// channel, and its own deprecation (not its package's: the registry API
// tells them apart).
type ChannelBundle struct {
	EntryRef
	Version, Image, SkipRange string
	// Properties are the bundle's properties in the catalog's order, each
	// value the JSON the catalog gave.
	Properties  []Property
	Deprecation string
}

// entryRow is a channel entry as the reads below select it.
type entryRow struct {
	ID       int64  `db:"id"`
	Package  string `db:"package"`
	Channel  string `db:"channel"`
	Bundle   string `db:"bundle"`
	Replaces string `db:"replaces"`
}

const entryColumns = `e.id, e.package, e.channel, e.bundle, e.replaces`

// withSkips reads the skips of each entry, one indexed read per entry:
// the reads that use it return a handful of entries.
func (c *Catalog) withSkips(ctx context.Context, rows []entryRow) ([]EntryRef, error) {
	out := make([]EntryRef, 0, len(rows))
	for _, r := range rows {
		var skips []string
		if err := c.sel(ctx, &skips, `SELECT skip FROM channel_entry_skips WHERE entry_id = ? ORDER BY rowid`, r.ID); err != nil {
			return nil, fmt.Errorf("read skips of %q in channel %q: %w", r.Bundle, r.Channel, err)
		}
		out = append(out, EntryRef{Package: r.Package, Channel: r.Channel, Bundle: r.Bundle, Replaces: r.Replaces, Skips: skips})
	}
	return out, nil
}

// EntriesReplacing returns the channel entries, of any package, that
// replace or skip the named bundle, by package, channel and position.
func (c *Catalog) EntriesReplacing(ctx context.Context, bundle string) ([]EntryRef, error) {
	var rows []entryRow
	if err := c.sel(ctx, &rows, `SELECT `+entryColumns+` FROM channel_entries e WHERE e.replaces = ?
		UNION SELECT `+entryColumns+` FROM channel_entry_skips s JOIN channel_entries e ON e.id = s.entry_id WHERE s.skip = ?
		ORDER BY 2, 3, 1`, bundle, bundle); err != nil {
		return nil, fmt.Errorf("find entries replacing %q: %w", bundle, err)
	}
	return c.withSkips(ctx, rows)
}

// BundlesReplacing returns the bundles of one channel whose entries
// replace or skip the named bundle, in the channel's order.
func (c *Catalog) BundlesReplacing(ctx context.Context, pkg, channel, bundle string) ([]string, error) {
	var out []string
	if err := c.sel(ctx, &out, `SELECT e.bundle FROM channel_entries e
		WHERE e.package = ? AND e.channel = ? AND (e.replaces = ? OR EXISTS
			(SELECT 1 FROM channel_entry_skips s WHERE s.entry_id = e.id AND s.skip = ?))
		ORDER BY e.position`, pkg, channel, bundle, bundle); err != nil {
		return nil, fmt.Errorf("find entries of channel %q replacing %q: %w", channel, bundle, err)
	}
	return out, nil
}

// ChannelHead returns the head of a channel of pkg ("" when it has no
// single head), and whether pkg has the channel, from what is kept in
// memory per index file.
func (c *Catalog) ChannelHead(ctx context.Context, pkg, channel string) (string, bool, error) {
	heads, err := c.channelHeads(ctx)
	if err != nil {
		return "", false, err
	}
	head, ok := heads[pkg].channels[channel]
	return head.String, ok, nil
}

// EntriesProviding returns the channel entries of every bundle that
// provides g (an olm.gvk property), by package, channel and bundle; with
// heads, only the entries that head their channel.
func (c *Catalog) EntriesProviding(ctx context.Context, g GVK, heads bool) ([]EntryRef, error) {
	head := ""
	if heads {
		head = ` AND EXISTS (SELECT 1 FROM channels c WHERE c.package = e.package AND c.name = e.channel AND c.head = e.bundle)`
	}
	var rows []entryRow
	if err := c.sel(ctx, &rows, `SELECT DISTINCT `+entryColumns+` FROM provided_gvks g
		JOIN bundles b ON b.id = g.bundle_id
		JOIN channel_entries e ON e.package = b.package AND e.bundle = b.name
		WHERE g.kind = ? AND g.grp = ? AND g.version = ?`+head+`
		ORDER BY e.package, e.channel, e.bundle`, g.Kind, g.Group, g.Version); err != nil {
		return nil, fmt.Errorf("find entries providing %s/%s %s: %w", g.Group, g.Version, g.Kind, err)
	}
	return c.withSkips(ctx, rows)
}

// InChannel reports whether the channel lists the named bundle.
func (c *Catalog) InChannel(ctx context.Context, pkg, channel, bundle string) (bool, error) {
	var in bool
	if err := c.get(ctx, &in, `SELECT count(*) > 0 FROM channel_entries WHERE package = ? AND bundle = ? AND channel = ?`, pkg, bundle, channel); err != nil {
		return false, fmt.Errorf("read entry %q of channel %q: %w", bundle, channel, err)
	}
	return in, nil
}

// EachListedBundle calls fn with the bundle of every channel entry of the
// catalog, ordered by channel name, then package, then bundle name (byte
// order): the order in which OLM v0's registry lists bundles. It reads the
// entries a page at a time in that order, through the index that keeps it
// (channel_entries_listing), each with its bundle's row, deprecation and
// property spans, and the page's skips in one more query; then each
// bundle's blob, from which its properties are sliced (see blobReader): a
// stream of the whole catalog costs two queries per listPage entries and a
// read per bundle. The next page is read while fn is called with the
// bundles of this one, which takes as long (on a second core, the
// stream's queries cost no time), so a stream holds two pages of entries
// and one blob at a time. The values of a bundle's olm.bundle.object and
// olm.csv.metadata properties are given only when it has no image (Value
// nil otherwise): the registry lists a bundle with an image without its
// objects, and they are most of a catalog's bytes. A bundle's properties
// are valid only during fn, which gets them (list and values) in memory
// the next bundle is read into; no query waits on fn, which may wait on a
// slow client. It returns once its page read has ended.
func (c *Catalog) EachListedBundle(ctx context.Context, fn func(ChannelBundle) error) error {
	type page struct {
		entries []registryEntry
		err     error
	}
	next := make(chan page, 1)
	fetch := func(after registryEntry) {
		go func() {
			entries, err := c.listPage(ctx, after, nil)
			next <- page{entries, err}
		}()
	}
	fetch(registryEntry{id: -1})
	pending := true
	defer func() {
		if pending {
			<-next
		}
	}()
	var r blobReader
	for pending {
		p := <-next
		pending = false
		if p.err != nil {
			return p.err
		}
		if len(p.entries) == listPage {
			fetch(p.entries[len(p.entries)-1])
			pending = true
		}
		for _, e := range p.entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := e.bundle(ctx, c, &r, e.image != "")
			if err != nil {
				return err
			}
			if err := fn(b); err != nil {
				return err
			}
			if cap(r.buf) > smallBlob {
				// A bundle's objects: not kept for the next bundle.
				r.buf = nil
			}
		}
	}
	return nil
}

// listPage is how many entries EachListedBundle reads at a time: enough
// that its queries cost little per entry, few enough that a page is a
// few hundred KiB at most (the spans of its bundles).
const listPage = 256

// listPageQuery reads the page of entries after a key (channel, package,
// bundle, id) in that order: a range of channel_entries_listing, whose
// keys end with the id.
const listPageQuery = `SELECT ` + registryEntryColumns + `,
	coalesce((SELECT d.message FROM deprecations d WHERE d.package = e.package AND d.schema = 'olm.bundle' AND d.name = e.bundle LIMIT 1), '')
	FROM channel_entries e INDEXED BY channel_entries_listing ` + registryEntryJoins + `
	WHERE (e.channel, e.package, e.bundle, e.id) > (?, ?, ?, ?)
	ORDER BY e.channel, e.package, e.bundle, e.id LIMIT ?`

// listPage reads the page of entries after the entry after into page, with
// their skips.
func (c *Catalog) listPage(ctx context.Context, after registryEntry, page []registryEntry) ([]registryEntry, error) {
	if err := c.each(ctx, listPageQuery, []any{after.ref.Channel, after.ref.Package, after.ref.Bundle, after.id, listPage}, func(rows *sqlx.Rows) error {
		var deprecation string
		e, err := scanRegistryEntry(rows, &deprecation)
		e.deprecation = deprecation
		page = append(page, e)
		return err
	}); err != nil {
		return nil, fmt.Errorf("list entries after %q in channel %q of %q: %w", after.ref.Bundle, after.ref.Channel, after.ref.Package, err)
	}
	if len(page) == 0 {
		return page, nil
	}
	ids := make([]byte, 0, 8*len(page))
	byID := make(map[int64]*registryEntry, len(page))
	ids = append(ids, '[')
	for i := range page {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, page[i].id, 10)
		byID[page[i].id] = &page[i]
	}
	ids = append(ids, ']')
	if err := c.each(ctx, `SELECT s.entry_id, s.skip FROM channel_entry_skips s
		WHERE s.entry_id IN (SELECT value FROM json_each(?)) ORDER BY s.entry_id, s.rowid`, []any{string(ids)}, func(rows *sqlx.Rows) error {
		var (
			id   int64
			skip string
		)
		if err := rows.Scan(&id, &skip); err != nil {
			return err
		}
		if e := byID[id]; e != nil {
			e.ref.Skips = append(e.ref.Skips, skip)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read skips of entries after %q in channel %q of %q: %w", after.ref.Bundle, after.ref.Channel, after.ref.Package, err)
	}
	return page, nil
}

// registryEntry is a channel entry as the registry reads it
// (registryEntryColumns): with its skips, its bundle's row and own
// deprecation, and where the bundle's blob is.
type registryEntry struct {
	id, bundleID int64
	ref          EntryRef
	version      string
	image        string
	skipRange    string
	deprecation  string
	blob         Range
	// spans are where the bundle's properties stand in its blob
	// (fbc.PropertySpans), nil when the index has none for it.
	spans []byte
}

// registryEntryColumns select a registryEntry but its skips and
// deprecation from channel entries e joined to bundles b, blobs bl and
// property spans ps (registryEntryJoins; scanRegistryEntry reads them).
const (
	registryEntryColumns = `e.id, e.package, e.channel, e.bundle, e.replaces, e.skip_range, b.id, b.version, b.image, bl.offset, bl.length, ps.spans`
	registryEntryJoins   = `JOIN bundles b ON b.package = e.package AND b.name = e.bundle JOIN blobs bl ON bl.id = b.blob_id
		LEFT JOIN property_spans ps ON ps.bundle_id = b.id`
)

// scanRegistryEntry reads a row of registryEntryColumns, and the columns
// after them into more, by hand: sqlx's reflection cost more than the
// query.
func scanRegistryEntry(rows *sqlx.Rows, more ...any) (registryEntry, error) {
	var e registryEntry
	return e, rows.Scan(append([]any{&e.id, &e.ref.Package, &e.ref.Channel, &e.ref.Bundle, &e.ref.Replaces, &e.skipRange, &e.bundleID,
		&e.version, &e.image, &e.blob.Offset, &e.blob.Length, &e.spans}, more...)...)
}

// bundle is the bundle of e, its properties read with r (see
// blobReader.properties).
func (e registryEntry) bundle(ctx context.Context, c *Catalog, r *blobReader, withoutObjects bool) (ChannelBundle, error) {
	props, err := r.properties(ctx, c, e.bundleID, e.ref.Bundle, e.blob, e.spans, withoutObjects)
	if err != nil {
		return ChannelBundle{}, err
	}
	return ChannelBundle{EntryRef: e.ref, Version: e.version, Image: e.image, SkipRange: e.skipRange, Properties: props, Deprecation: e.deprecation}, nil
}

// smallBlob is the size of blob read whole even when its objects are not
// wanted: one read rather than one per property.
const smallBlob = 64 << 10

// isObject says whether a property of type typ is one the registry lists
// bundles with an image without: a bundle's objects, or the CSV made from
// its metadata.
func isObject(typ string) bool { return typ == "olm.bundle.object" || typ == "olm.csv.metadata" }

// nullValue is the value of a property the catalog gave none, as the
// properties table holds it.
var nullValue = json.RawMessage("null")

// blobReader reads bundles' properties from their blobs (properties):
// into one buffer and one list, reused from bundle to bundle, each
// property type's name made a string once.
type blobReader struct {
	buf   []byte
	props []Property
	types map[string]string
}

// properties returns the properties of the bundle of id and name, whose
// blob is at where, in the catalog's order. With withoutObjects, the
// values of olm.bundle.object and olm.csv.metadata are left nil. The blob
// is read whole into r's buffer and its properties sliced from it where
// the index recorded them (spans, fbc.EachPropertyIn), or, without spans,
// scanned from it as the walk scanned them when it was indexed
// (fbc.EachProperty); the values are slices of the buffer, in a list
// reused too: valid until the next call. One read and no query. A blob
// larger than smallBlob whose objects are not wanted is not read whole:
// its properties table says where each other value is, read alone. So
// does it for a blob neither reads.
func (r *blobReader) properties(ctx context.Context, c *Catalog, id int64, name string, where Range, spans []byte, withoutObjects bool) ([]Property, error) {
	if !withoutObjects || where.Length <= smallBlob {
		blob, err := c.readInto(r.buf, where)
		if err != nil {
			return nil, fmt.Errorf("read blob of %q: %w", name, err)
		}
		r.buf = blob
		out := r.props[:0]
		add := func(typ, value []byte) {
			p := Property{Type: r.typeName(typ), Value: value}
			switch {
			case withoutObjects && isObject(p.Type):
				p.Value = nil
			case len(value) == 0:
				p.Value = nullValue
			}
			out = append(out, p)
		}
		if spans != nil && fbc.EachPropertyIn(blob, spans, add) {
			r.props = out
			return out, nil
		}
		out = out[:0]
		if fbc.EachProperty(blob, add) {
			r.props = out
			return out, nil
		}
	}
	return c.properties(ctx, id, name, where, withoutObjects)
}

// typeName is typ as a string, made once per name.
func (r *blobReader) typeName(typ []byte) string {
	if t, ok := r.types[string(typ)]; ok {
		return t
	}
	if r.types == nil {
		r.types = map[string]string{}
	}
	t := string(typ)
	r.types[t] = t
	return t
}

// propertyRow is a row of the properties table.
type propertyRow struct {
	Type   string         `db:"type"`
	Value  sql.NullString `db:"value"`
	Start  sql.NullInt64  `db:"value_start"`
	Length sql.NullInt64  `db:"value_length"`
}

// propertyValues reads the values of a bundle's properties from its blob,
// at where in the content: the whole blob, or, with withoutObjects and a
// blob larger than smallBlob, each value alone but those of
// olm.bundle.object and olm.csv.metadata, which are left nil (as they are
// with withoutObjects whatever the blob's size).
func (c *Catalog) propertyValues(name string, where Range, rows []propertyRow, withoutObjects bool) ([]Property, error) {
	var blob []byte
	whole := !withoutObjects || where.Length <= smallBlob
	if whole {
		var err error
		if blob, err = c.readContent(where); err != nil {
			return nil, fmt.Errorf("read blob of %q: %w", name, err)
		}
	}
	out := make([]Property, 0, len(rows))
	for _, p := range rows {
		value := json.RawMessage(p.Value.String)
		if !p.Value.Valid {
			start, end := p.Start.Int64, p.Start.Int64+p.Length.Int64
			if !p.Start.Valid || start < 0 || end > where.Length || start > end {
				return nil, fmt.Errorf("read property %s of %q: value range %d-%d outside its %d-byte blob", p.Type, name, start, end, where.Length)
			}
			switch {
			case withoutObjects && isObject(p.Type):
				value = nil
			case whole:
				value = json.RawMessage(blob[start:end])
			default:
				v, err := c.readContent(Range{Offset: where.Offset + start, Length: end - start})
				if err != nil {
					return nil, fmt.Errorf("read property %s of %q: %w", p.Type, name, err)
				}
				value = v
			}
		}
		out = append(out, Property{Type: p.Type, Value: value})
	}
	return out, nil
}

// ChannelBundle returns the named bundle as the named channel of pkg lists
// it, or an error wrapping ErrNotFound when the channel does not list it.
// One query reads the entry, its skips, the bundle's row and deprecation
// and where its blob is; the blob is then read once, its properties
// scanned from it (blobReader). The bundle's related images are left to
// RelatedImages: only a CSV made from olm.csv.metadata needs them.
func (c *Catalog) ChannelBundle(ctx context.Context, pkg, channel, name string) (ChannelBundle, error) {
	var (
		e           registryEntry
		found       bool
		skips       []byte
		deprecation string
	)
	if err := c.each(ctx, `SELECT `+registryEntryColumns+`,
		(SELECT json_group_array(s.skip ORDER BY s.rowid) FROM channel_entry_skips s WHERE s.entry_id = e.id),
		coalesce((SELECT d.message FROM deprecations d WHERE d.package = e.package AND d.schema = 'olm.bundle' AND d.name = e.bundle LIMIT 1), '')
		FROM channel_entries e `+registryEntryJoins+`
		WHERE e.package = ? AND e.bundle = ? AND e.channel = ? LIMIT 1`, []any{pkg, name, channel}, func(rows *sqlx.Rows) error {
		var err error
		e, err = scanRegistryEntry(rows, &skips, &deprecation)
		found = true
		return err
	}); err != nil {
		return ChannelBundle{}, fmt.Errorf("read entry %q of channel %q: %w", name, channel, err)
	}
	if !found {
		return ChannelBundle{}, fmt.Errorf("bundle %q in channel %q: %w", name, channel, ErrNotFound)
	}
	if string(skips) != "[]" {
		if err := json.Unmarshal(skips, &e.ref.Skips); err != nil {
			return ChannelBundle{}, fmt.Errorf("read skips of %q in channel %q: %w", name, channel, err)
		}
	}
	e.deprecation = deprecation
	var r blobReader
	return e.bundle(ctx, c, &r, false)
}

// RelatedImages returns the related images of a bundle of pkg, in order.
func (c *Catalog) RelatedImages(ctx context.Context, pkg, bundle string) ([]RelatedImage, error) {
	var out []RelatedImage
	if err := c.sel(ctx, &out, `SELECT r.name, r.image FROM bundles b JOIN related_images r ON r.bundle_id = b.id
		WHERE b.package = ? AND b.name = ? ORDER BY r.position`, pkg, bundle); err != nil {
		return nil, fmt.Errorf("read related images of %q: %w", bundle, err)
	}
	return out, nil
}

// properties reads the properties of the bundle of id and name in order,
// their values read from its blob, at where in the content, as
// propertyValues reads them.
func (c *Catalog) properties(ctx context.Context, id int64, name string, where Range, withoutObjects bool) ([]Property, error) {
	var rows []propertyRow
	if err := c.sel(ctx, &rows, `SELECT type, value, value_start, value_length FROM properties WHERE bundle_id = ? ORDER BY position`, id); err != nil {
		return nil, fmt.Errorf("read properties of %q: %w", name, err)
	}
	return c.propertyValues(name, where, rows, withoutObjects)
}
