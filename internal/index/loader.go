package index

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/jmoiron/sqlx"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// loader inserts blobs as they stream in. Besides the rows it writes, it
// keeps a light copy of each package (everything but bundle object payloads,
// which are most of a catalog's bytes) for what can only be done once a
// package is complete: operator-registry's validation, version ranks and the
// package's display metadata.
type loader struct {
	tx    *sqlx.Tx
	stmts map[string]*sql.Stmt
	stats Stats
	pkgs  map[string]*pkgState
}

type pkgState struct {
	cfg       declcfg.DeclarativeConfig
	bundleIDs map[string]int64
	// heads maps a channel name to its head bundle ("" when it has none or several).
	heads map[string]string
}

// The statements of a build, prepared once.
var insertSQL = map[string]string{
	"blob":       `INSERT INTO blobs (schema, package, name, offset, data) VALUES (?, ?, ?, ?, ?)`,
	"package":    `INSERT INTO packages (name, default_channel, description, icon_data, icon_media_type) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	"channel":    `INSERT INTO channels (package, name, properties, head, head_problem) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	"entry":      `INSERT INTO channel_entries (package, channel, position, bundle, replaces, skip_range) VALUES (?, ?, ?, ?, ?, ?)`,
	"skip":       `INSERT INTO channel_entry_skips (entry_id, package, skip) VALUES (?, ?, ?)`,
	"bundle":     `INSERT INTO bundles (package, name, version, release, image, blob_id, ver_major, ver_minor, ver_patch, ver_pre) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	"related":    `INSERT INTO related_images (bundle_id, name, image) VALUES (?, ?, ?)`,
	"property":   `INSERT INTO properties (bundle_id, position, type, value) VALUES (?, ?, ?, ?)`,
	"provided":   `INSERT INTO provided_gvks (bundle_id, grp, version, kind) VALUES (?, ?, ?, ?)`,
	"required":   `INSERT INTO required_gvks (bundle_id, grp, version, kind) VALUES (?, ?, ?, ?)`,
	"reqpkg":     `INSERT INTO required_packages (bundle_id, package_name, version_range) VALUES (?, ?, ?)`,
	"deprec":     `INSERT INTO deprecations (package, schema, name, message) VALUES (?, ?, ?, ?)`,
	"problem":    `INSERT INTO problems (package, message) VALUES (?, ?)`,
	"rank":       `UPDATE bundles SET version_rank = ? WHERE id = ?`,
	"edge":       `INSERT INTO skip_range_edges (package, from_bundle, channel, to_bundle) VALUES (?, ?, ?, ?)`,
	"metadata":   `UPDATE packages SET display = ? WHERE name = ?`,
	"metadataOf": `SELECT value FROM property_values WHERE bundle_id = ? AND type = 'olm.csv.metadata' ORDER BY position LIMIT 1`,
	"search":     `INSERT INTO package_search (name, display_name, keywords, provider, description) VALUES (?, ?, ?, ?, ?)`,
}

func newLoader(ctx context.Context, tx *sqlx.Tx) (*loader, error) {
	l := &loader{tx: tx, stmts: map[string]*sql.Stmt{}, pkgs: map[string]*pkgState{},
		stats: Stats{Schemas: map[string]int{}}}
	for name, q := range insertSQL {
		stmt, err := tx.PrepareContext(ctx, q)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("prepare %s insert: %w", name, err)
		}
		l.stmts[name] = stmt
	}
	return l, nil
}

func (l *loader) close() {
	for _, s := range l.stmts {
		_ = s.Close()
	}
}

func (l *loader) exec(ctx context.Context, stmt string, args ...any) (sql.Result, error) {
	return l.stmts[stmt].ExecContext(ctx, args...)
}

func (l *loader) pkg(name string) *pkgState {
	p, ok := l.pkgs[name]
	if !ok {
		p = &pkgState{bundleIDs: map[string]int64{}, heads: map[string]string{}}
		l.pkgs[name] = p
	}
	return p
}

// add stores one blob: always as a raw blob, and in the typed tables when it
// is of a schema this index understands.
func (l *loader) add(ctx context.Context, b blob) error {
	m := b.meta
	res, err := l.exec(ctx, "blob", m.Schema, m.Package, m.Name, l.stats.AllBytes, string(m.Blob))
	if err != nil {
		return fmt.Errorf("store blob %s %q: %w", m.Schema, m.Name, err)
	}
	blobID, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("store blob %s %q: %w", m.Schema, m.Name, err)
	}
	l.stats.Blobs++
	l.stats.Schemas[m.Schema]++
	l.stats.AllBytes += int64(len(m.Blob))

	switch v := b.value.(type) {
	case *declcfg.Package:
		return l.addPackage(ctx, v)
	case *declcfg.Channel:
		return l.addChannel(ctx, v)
	case *declcfg.Bundle:
		return l.addBundle(ctx, v, blobID, b.valueStarts)
	case *declcfg.Deprecation:
		return l.addDeprecation(ctx, v)
	}
	return nil
}

func (l *loader) addPackage(ctx context.Context, p *declcfg.Package) error {
	st := l.pkg(p.Name)
	st.cfg.Packages = append(st.cfg.Packages, *p)
	var iconData []byte
	var iconType string
	if p.Icon != nil {
		iconData, iconType = p.Icon.Data, p.Icon.MediaType
	}
	res, err := l.exec(ctx, "package", p.Name, p.DefaultChannel, p.Description, iconData, iconType)
	if err != nil {
		return fmt.Errorf("index package %q: %w", p.Name, err)
	}
	if inserted(res) {
		l.stats.Packages++
	}
	return nil
}

func (l *loader) addChannel(ctx context.Context, c *declcfg.Channel) error {
	st := l.pkg(c.Package)
	st.cfg.Channels = append(st.cfg.Channels, *c)

	head, problem := channelHead(c.Entries)
	var headArg, problemArg any
	if problem == "" {
		headArg = head
	} else {
		problemArg = problem
	}
	if _, seen := st.heads[c.Name]; !seen {
		st.heads[c.Name] = head
	}
	props, err := json.Marshal(c.Properties)
	if err != nil {
		return fmt.Errorf("index channel %q of package %q: %w", c.Name, c.Package, err)
	}
	if len(c.Properties) == 0 {
		props = []byte("[]")
	}
	res, err := l.exec(ctx, "channel", c.Package, c.Name, string(props), headArg, problemArg)
	if err != nil {
		return fmt.Errorf("index channel %q of package %q: %w", c.Name, c.Package, err)
	}
	if !inserted(res) {
		return nil // a duplicate: validation records it, the first one answers
	}
	l.stats.Channels++
	for i, e := range c.Entries {
		res, err := l.exec(ctx, "entry", c.Package, c.Name, i, e.Name, e.Replaces, e.SkipRange)
		if err != nil {
			return fmt.Errorf("index entry %q of channel %q: %w", e.Name, c.Name, err)
		}
		entryID, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("index entry %q of channel %q: %w", e.Name, c.Name, err)
		}
		for _, skip := range e.Skips {
			if _, err := l.exec(ctx, "skip", entryID, c.Package, skip); err != nil {
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

// validatedProperties are the property types operator-registry's validation
// interprets; the others (bundle objects, CSV metadata, custom types) are
// most of a catalog's bytes and are left out of the validation copy.
var validatedProperties = map[string]bool{
	property.TypePackage: true, property.TypePackageRequired: true, property.TypeGVK: true,
	property.TypeGVKRequired: true, property.TypeChannel: true,
}

func (l *loader) addBundle(ctx context.Context, b *declcfg.Bundle, blobID int64, valueStarts []int) error {
	st := l.pkg(b.Package)

	var pkgProp packageProperty
	light := declcfg.Bundle{Schema: b.Schema, Name: b.Name, Package: b.Package, Image: b.Image}
	for _, p := range b.Properties {
		switch {
		case p.Type == property.TypeBundleObject:
			// Validation only needs to know an object is there.
			light.Objects = append(light.Objects, "")
		case p.Type == property.TypePackage:
			// A bad value is reported by validation, which parses it again.
			_ = json.Unmarshal(p.Value, &pkgProp)
			light.Properties = append(light.Properties, cloneProperty(p))
		case validatedProperties[p.Type]:
			light.Properties = append(light.Properties, cloneProperty(p))
		}
	}
	st.cfg.Bundles = append(st.cfg.Bundles, light)

	var major, minor, patch any
	var pre string
	if v, err := semver.Parse(pkgProp.Version); err == nil {
		major, minor, patch = int64(v.Major), int64(v.Minor), int64(v.Patch)
		pre = preRelease(v)
	}
	res, err := l.exec(ctx, "bundle", b.Package, b.Name, pkgProp.Version, pkgProp.Release, b.Image, blobID, major, minor, patch, pre)
	if err != nil {
		return fmt.Errorf("index bundle %q of package %q: %w", b.Name, b.Package, err)
	}
	if !inserted(res) {
		return nil
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("index bundle %q of package %q: %w", b.Name, b.Package, err)
	}
	st.bundleIDs[b.Name] = id
	l.stats.Bundles++

	for _, ri := range b.RelatedImages {
		if _, err := l.exec(ctx, "related", id, ri.Name, ri.Image); err != nil {
			return fmt.Errorf("index related images of bundle %q: %w", b.Name, err)
		}
	}
	if err := l.insertProperties(ctx, id, b.Properties, valueStarts); err != nil {
		return fmt.Errorf("index properties of bundle %q: %w", b.Name, err)
	}
	for i, p := range b.Properties {
		if err := l.addTypedProperty(ctx, id, p); err != nil {
			return fmt.Errorf("index property %d (%s) of bundle %q: %w", i, p.Type, b.Name, err)
		}
	}
	return nil
}

// cloneProperty copies a property whose value may be a slice of its blob,
// so that keeping the property does not keep the whole blob.
func cloneProperty(p property.Property) property.Property {
	return property.Property{Type: p.Type, Value: bytes.Clone(p.Value)}
}

// propertyBatch is the most rows one properties INSERT carries. A bundle's
// properties go in a few multi-row statements rather than one per property,
// which is most of the cost of a build.
const propertyBatch = 64

// insertProperties stores every property in order, its value as a range of
// the bundle's blob (starts from valueStarts) or, without one, as JSON.
func (l *loader) insertProperties(ctx context.Context, bundleID int64, props []property.Property, valueStarts []int) error {
	for start := 0; start < len(props); start += propertyBatch {
		batch := props[start:min(start+propertyBatch, len(props))]
		stmt, err := l.propertyStmt(ctx, len(batch))
		if err != nil {
			return err
		}
		args := make([]any, 0, 6*len(batch))
		for i, p := range batch {
			if at := valueStarts[start+i]; at >= 0 {
				args = append(args, bundleID, start+i, p.Type, nil, at, len(p.Value))
			} else {
				args = append(args, bundleID, start+i, p.Type, rawJSON(p.Value), nil, nil)
			}
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// propertyStmt returns the prepared INSERT of n property rows.
func (l *loader) propertyStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	key := "properties/" + strconv.Itoa(n)
	if stmt, ok := l.stmts[key]; ok {
		return stmt, nil
	}
	q := "INSERT INTO properties (bundle_id, position, type, value, value_start, value_length) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", n), ", ")
	stmt, err := l.tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare properties insert: %w", err)
	}
	l.stmts[key] = stmt
	return stmt, nil
}

// addTypedProperty stores a property of a type queries filter on in its own
// table. A value of the wrong shape stays in properties only; validation
// reports it.
func (l *loader) addTypedProperty(ctx context.Context, bundleID int64, p property.Property) error {
	switch p.Type {
	case property.TypeGVK:
		var g property.GVK
		if json.Unmarshal(p.Value, &g) == nil {
			_, err := l.exec(ctx, "provided", bundleID, g.Group, g.Version, g.Kind)
			return err
		}
	case property.TypeGVKRequired:
		var g property.GVKRequired
		if json.Unmarshal(p.Value, &g) == nil {
			_, err := l.exec(ctx, "required", bundleID, g.Group, g.Version, g.Kind)
			return err
		}
	case property.TypePackageRequired:
		var r property.PackageRequired
		if json.Unmarshal(p.Value, &r) == nil {
			_, err := l.exec(ctx, "reqpkg", bundleID, r.PackageName, r.VersionRange)
			return err
		}
	}
	return nil
}

func (l *loader) addDeprecation(ctx context.Context, d *declcfg.Deprecation) error {
	st := l.pkg(d.Package)
	st.cfg.Deprecations = append(st.cfg.Deprecations, *d)
	for _, e := range d.Entries {
		if _, err := l.exec(ctx, "deprec", d.Package, e.Reference.Schema, e.Reference.Name, e.Message); err != nil {
			return fmt.Errorf("index deprecations of package %q: %w", d.Package, err)
		}
	}
	return nil
}

func inserted(res sql.Result) bool {
	n, err := res.RowsAffected()
	return err == nil && n > 0
}

// preRelease returns the pre-release part of v as written ("" for a release).
func preRelease(v semver.Version) string {
	parts := make([]string, len(v.Pre))
	for i, p := range v.Pre {
		parts[i] = p.String()
	}
	return strings.Join(parts, ".")
}
