package catalogdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/catalogd/catalogd/client"
)

// Bundle is a bundle's row: its name, version and where it ranks in its
// package's version order (0 = lowest; versions that do not parse rank
// below all others).
type Bundle struct {
	ID      int64  `db:"id"`
	Name    string `db:"name"`
	Version string `db:"version"`
	Release string `db:"release"`
	Image   string `db:"image"`
	Rank    int    `db:"version_rank"`
	BlobID  int64  `db:"blob_id"`
	// Channels are the names of the channels that list the bundle, as the
	// JSON array the build stored.
	Channels string `db:"channels"`
}

const bundleColumns = `id, name, version, release, image, version_rank, blob_id, channels`

// BundleByName returns a bundle of pkg, or an error wrapping ErrNotFound.
func (c *Catalog) BundleByName(ctx context.Context, pkg, name string) (Bundle, error) {
	var b Bundle
	err := c.get(ctx, &b, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND name = ?`, pkg, name)
	if errors.Is(err, sql.ErrNoRows) {
		return Bundle{}, fmt.Errorf("bundle %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Bundle{}, fmt.Errorf("read bundle %q: %w", name, err)
	}
	return b, nil
}

// BundlesByVersion returns the bundles of pkg whose version is written
// exactly as version, by name. The sort is on +name, which no index
// serves: on name, SQLite would read the whole package through the (package,
// name) index to spare sorting the few bundles of one version.
func (c *Catalog) BundlesByVersion(ctx context.Context, pkg, version string) ([]Bundle, error) {
	var out []Bundle
	if err := c.sel(ctx, &out, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND version = ? ORDER BY +name`, pkg, version); err != nil {
		return nil, fmt.Errorf("find bundles of version %q: %w", version, err)
	}
	return out, nil
}

// Bundles returns up to limit bundles of pkg (all with a negative limit)
// ranked below below, newest first; only those in channel unless it is "".
// The channel is checked per bundle read, so a page costs the bundles read
// until it is full: about its length, unless the channel holds few of the
// package's bundles. A list of the channel's bundles (name IN ...) was
// built whole for every page instead, 20 ms for a channel of 50,000.
func (c *Catalog) Bundles(ctx context.Context, pkg, channel string, below int64, limit int) ([]Bundle, error) {
	var rows []Bundle
	if limit > 0 {
		rows = make([]Bundle, 0, min(limit, 1000))
	}
	var err error
	if channel != "" {
		err = c.sel(ctx, &rows, `SELECT `+bundleColumns+` FROM bundles b WHERE package = ? AND version_rank < ?
			AND EXISTS (SELECT 1 FROM channel_entries e WHERE e.package = b.package AND e.bundle = b.name AND e.channel = ?)
			ORDER BY version_rank DESC LIMIT ?`, pkg, below, channel, limit)
	} else {
		err = c.sel(ctx, &rows, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND version_rank < ?
			ORDER BY version_rank DESC LIMIT ?`, pkg, below, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("list bundles of %q: %w", pkg, err)
	}
	return rows, nil
}

// BundleSummaries lists page, bundles of pkg newest first, each with its
// channels and deprecation: one query, whatever the page's length.
func (c *Catalog) BundleSummaries(ctx context.Context, pkg string, page []Bundle) ([]client.BundleSummary, error) {
	out := make([]client.BundleSummary, 0, len(page))
	if len(page) == 0 {
		return out, nil
	}
	deprecations, err := c.bundleDeprecations(ctx, pkg)
	if err != nil {
		return nil, err
	}
	for _, b := range page {
		names := []string{}
		if err := json.Unmarshal([]byte(b.Channels), &names); err != nil {
			return nil, fmt.Errorf("read channels of bundle %q: %w", b.Name, err)
		}
		dep := deprecations[b.Name]
		if dep.Message == "" {
			dep = deprecations[""] // a deprecated package deprecates each of its bundles
		}
		out = append(out, client.BundleSummary{Name: b.Name, Version: b.Version, Release: b.Release,
			Image: b.Image, Channels: names, Deprecation: dep})
	}
	return out, nil
}

// bundleDeprecations reads the deprecations of a package's bundles (by
// name) and of the package itself (under "").
func (c *Catalog) bundleDeprecations(ctx context.Context, pkg string) (map[string]client.Deprecation, error) {
	var depRows []struct {
		Schema  string `db:"schema"`
		Name    string `db:"name"`
		Message string `db:"message"`
	}
	if err := c.sel(ctx, &depRows, `SELECT schema, name, message FROM deprecations
		WHERE package = ? AND (schema = 'olm.bundle' OR (schema = 'olm.package' AND name = '')) ORDER BY rowid`, pkg); err != nil {
		return nil, fmt.Errorf("read deprecations of bundles of %q: %w", pkg, err)
	}
	deprecations := map[string]client.Deprecation{}
	for _, r := range depRows {
		name := r.Name
		if r.Schema == "olm.package" {
			name = ""
		}
		if _, ok := deprecations[name]; !ok {
			deprecations[name] = client.Deprecation{Message: r.Message}
		}
	}
	return deprecations, nil
}

// BundleDetail returns everything the index holds of bundle b of pkg.
// Property values are byte ranges of the bundle's blob: the blob is read
// once and sliced here, so the cost is linear in the blob's size (the
// property_values view copies the blob for every property).
func (c *Catalog) BundleDetail(ctx context.Context, pkg string, b Bundle) (client.Bundle, error) {
	out := client.Bundle{Name: b.Name, Package: pkg, Version: b.Version, Release: b.Release, Image: b.Image,
		Properties: []client.Property{}, RelatedImages: []client.RelatedImage{}, ProvidedGVKs: []client.GVK{},
		RequiredGVKs: []client.GVK{}, RequiredPackages: []client.PackageRequirement{}}

	var blob []byte
	if err := c.get(ctx, &blob, `SELECT CAST(data AS BLOB) FROM blobs WHERE id = ?`, b.BlobID); err != nil {
		return client.Bundle{}, fmt.Errorf("read blob of %q: %w", b.Name, err)
	}
	var props []struct {
		Type   string         `db:"type"`
		Value  sql.NullString `db:"value"`
		Start  sql.NullInt64  `db:"value_start"`
		Length sql.NullInt64  `db:"value_length"`
	}
	if err := c.sel(ctx, &props, `SELECT type, value, value_start, value_length FROM properties WHERE bundle_id = ? ORDER BY position`, b.ID); err != nil {
		return client.Bundle{}, fmt.Errorf("read properties of %q: %w", b.Name, err)
	}
	for _, p := range props {
		value := json.RawMessage(p.Value.String)
		if !p.Value.Valid {
			start, end := p.Start.Int64, p.Start.Int64+p.Length.Int64
			if !p.Start.Valid || start < 0 || end > int64(len(blob)) || start > end {
				return client.Bundle{}, fmt.Errorf("read property %s of %q: value range %d-%d outside its %d-byte blob", p.Type, b.Name, start, end, len(blob))
			}
			value = json.RawMessage(blob[start:end])
		}
		out.Properties = append(out.Properties, client.Property{Type: p.Type, Value: value})
	}
	queries := []struct {
		what  string
		dest  any
		query string
	}{
		{"related images", &out.RelatedImages, `SELECT name, image FROM related_images WHERE bundle_id = ? ORDER BY position`},
		{"provided GVKs", &out.ProvidedGVKs, `SELECT grp AS "group", version, kind FROM provided_gvks WHERE bundle_id = ? ORDER BY position`},
		{"required GVKs", &out.RequiredGVKs, `SELECT grp AS "group", version, kind FROM required_gvks WHERE bundle_id = ? ORDER BY position`},
		{"required packages", &out.RequiredPackages, `SELECT package_name AS packagename, version_range AS versionrange FROM required_packages WHERE bundle_id = ? ORDER BY position`},
	}
	for _, q := range queries {
		if err := c.sel(ctx, q.dest, q.query, b.ID); err != nil {
			return client.Bundle{}, fmt.Errorf("read %s of %q: %w", q.what, b.Name, err)
		}
	}
	var err error
	if out.Channels, err = c.bundleChannels(ctx, pkg, b.Name); err != nil {
		return client.Bundle{}, err
	}
	msg, err := c.BundleDeprecation(ctx, pkg, b.Name)
	if err != nil {
		return client.Bundle{}, err
	}
	out.Deprecation = client.Deprecation{Message: msg}
	return out, nil
}

// bundleChannels returns the entries that list a bundle, by channel name,
// marking the channels it heads, with their skips: two queries, whatever
// the number of entries.
func (c *Catalog) bundleChannels(ctx context.Context, pkg, bundle string) ([]client.BundleChannel, error) {
	var rows []struct {
		ID        int64          `db:"id"`
		Channel   string         `db:"channel"`
		Replaces  string         `db:"replaces"`
		SkipRange string         `db:"skip_range"`
		Head      sql.NullString `db:"head"`
	}
	if err := c.sel(ctx, &rows, `SELECT e.id, e.channel, e.replaces, e.skip_range, c.head
		FROM channel_entries e JOIN channels c ON c.package = e.package AND c.name = e.channel
		WHERE e.package = ? AND e.bundle = ? ORDER BY e.channel, e.id`, pkg, bundle); err != nil {
		return nil, fmt.Errorf("read channels of bundle %q: %w", bundle, err)
	}
	var skipRows []struct {
		EntryID int64  `db:"entry_id"`
		Skip    string `db:"skip"`
	}
	if err := c.sel(ctx, &skipRows, `SELECT s.entry_id, s.skip FROM channel_entries e
		JOIN channel_entry_skips s ON s.entry_id = e.id
		WHERE e.package = ? AND e.bundle = ? ORDER BY s.entry_id, s.rowid`, pkg, bundle); err != nil {
		return nil, fmt.Errorf("read skips of bundle %q: %w", bundle, err)
	}
	skips := map[int64][]string{}
	for _, r := range skipRows {
		skips[r.EntryID] = append(skips[r.EntryID], r.Skip)
	}
	out := make([]client.BundleChannel, 0, len(rows))
	for _, r := range rows {
		list := skips[r.ID]
		if list == nil {
			list = []string{}
		}
		out = append(out, client.BundleChannel{Channel: r.Channel, Replaces: r.Replaces, SkipRange: r.SkipRange,
			Skips: list, IsHead: r.Head.Valid && r.Head.String == bundle})
	}
	return out, nil
}
