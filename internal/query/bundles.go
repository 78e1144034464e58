package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Bundle is a bundle as lists show it: its name, version, release and
// image, and where it ranks in its package's version order (0 = lowest;
// versions that do not parse rank below all others).
type Bundle struct {
	Name, Version, Release, Image string
	Rank                          int
	// channels are the names of the channels that list the bundle, as the
	// JSON array the build stored: decoded only for the bundles of a page
	// (see BundleSummaries), not for every bundle a filter reads.
	channels string
}

// bundleRow is a row of the bundles table.
type bundleRow struct {
	ID       int64  `db:"id"`
	Name     string `db:"name"`
	Version  string `db:"version"`
	Release  string `db:"release"`
	Image    string `db:"image"`
	Rank     int    `db:"version_rank"`
	BlobID   int64  `db:"blob_id"`
	Channels string `db:"channels"`
}

func (r bundleRow) bundle() Bundle {
	return Bundle{Name: r.Name, Version: r.Version, Release: r.Release, Image: r.Image, Rank: r.Rank, channels: r.Channels}
}

func bundlesOf(rows []bundleRow) []Bundle {
	out := make([]Bundle, len(rows))
	for i, r := range rows {
		out[i] = r.bundle()
	}
	return out
}

const bundleColumns = `id, name, version, release, image, version_rank, blob_id, channels`

// bundleRow reads a bundle's row, or returns an error wrapping ErrNotFound.
func (c *Catalog) bundleRow(ctx context.Context, pkg, name string) (bundleRow, error) {
	var b bundleRow
	err := c.get(ctx, &b, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND name = ?`, pkg, name)
	if errors.Is(err, sql.ErrNoRows) {
		return bundleRow{}, fmt.Errorf("bundle %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return bundleRow{}, fmt.Errorf("read bundle %q: %w", name, err)
	}
	return b, nil
}

// BundleByName returns a bundle of pkg, or an error wrapping ErrNotFound.
func (c *Catalog) BundleByName(ctx context.Context, pkg, name string) (Bundle, error) {
	row, err := c.bundleRow(ctx, pkg, name)
	return row.bundle(), err
}

// BundlesByVersion returns the bundles of pkg whose version is written
// exactly as version, by name. The sort is on +name, which no index
// serves: on name, SQLite would read the whole package through the (package,
// name) index to spare sorting the few bundles of one version.
func (c *Catalog) BundlesByVersion(ctx context.Context, pkg, version string) ([]Bundle, error) {
	var rows []bundleRow
	if err := c.sel(ctx, &rows, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND version = ? ORDER BY +name`, pkg, version); err != nil {
		return nil, fmt.Errorf("find bundles of version %q: %w", version, err)
	}
	return bundlesOf(rows), nil
}

// Bundles returns up to limit bundles of pkg (all with a negative limit)
// ranked below below, newest first; only those in channel unless it is "".
// The channel is checked per bundle read, so a page costs the bundles read
// until it is full: about its length, unless the channel holds few of the
// package's bundles. Listing the channel's bundles first (name IN ...)
// would build that list whole for every page: 20 ms for a channel of
// 50,000.
func (c *Catalog) Bundles(ctx context.Context, pkg, channel string, below int64, limit int) ([]Bundle, error) {
	var rows []bundleRow
	if limit > 0 {
		rows = make([]bundleRow, 0, min(limit, 1000))
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
	return bundlesOf(rows), nil
}

// BundleSummary is a bundle's entry in a list of bundles.
type BundleSummary struct {
	Name, Version, Release, Image string
	// Channels are the names of the channels that list the bundle.
	Channels []string
	// Deprecation is the bundle's deprecation message, or its package's; ""
	// if neither is deprecated.
	Deprecation string
}

// BundleSummaries lists page, bundles of pkg as Bundles returned them, each
// with its channels and deprecation: one query, whatever the page's length.
func (c *Catalog) BundleSummaries(ctx context.Context, pkg string, page []Bundle) ([]BundleSummary, error) {
	out := make([]BundleSummary, 0, len(page))
	if len(page) == 0 {
		return out, nil
	}
	deprecations, err := c.bundleDeprecations(ctx, pkg)
	if err != nil {
		return nil, err
	}
	for _, b := range page {
		var names []string
		if err := json.Unmarshal([]byte(b.channels), &names); err != nil {
			return nil, fmt.Errorf("read channels of bundle %q: %w", b.Name, err)
		}
		dep := deprecations[b.Name]
		if dep == "" {
			dep = deprecations[""] // a deprecated package deprecates each of its bundles
		}
		out = append(out, BundleSummary{Name: b.Name, Version: b.Version, Release: b.Release,
			Image: b.Image, Channels: names, Deprecation: dep})
	}
	return out, nil
}

// bundleDeprecations reads the deprecations of a package's bundles (by
// name) and of the package itself (under "").
func (c *Catalog) bundleDeprecations(ctx context.Context, pkg string) (map[string]string, error) {
	var depRows []struct {
		Schema  string `db:"schema"`
		Name    string `db:"name"`
		Message string `db:"message"`
	}
	if err := c.sel(ctx, &depRows, `SELECT schema, name, message FROM deprecations
		WHERE package = ? AND (schema = 'olm.bundle' OR (schema = 'olm.package' AND name = '')) ORDER BY rowid`, pkg); err != nil {
		return nil, fmt.Errorf("read deprecations of bundles of %q: %w", pkg, err)
	}
	deprecations := map[string]string{}
	for _, r := range depRows {
		name := r.Name
		if r.Schema == "olm.package" {
			name = ""
		}
		if _, ok := deprecations[name]; !ok {
			deprecations[name] = r.Message
		}
	}
	return deprecations, nil
}

// BundleDetail is everything the index holds of a bundle.
type BundleDetail struct {
	Name, Package, Version, Release, Image string
	// Properties are the bundle's properties in the catalog's order, each
	// value the JSON the catalog gave.
	Properties       []Property
	RelatedImages    []RelatedImage
	ProvidedGVKs     []GVK
	RequiredGVKs     []GVK
	RequiredPackages []PackageRequirement
	// Channels are the channel entries that list the bundle, by channel.
	Channels []BundleChannel
	// Deprecation is the bundle's deprecation message, or its package's; ""
	// if neither is deprecated.
	Deprecation string
}

// Property is a bundle property: its type and its value, as JSON.
type Property struct {
	Type  string
	Value json.RawMessage
}

// RelatedImage is an image a bundle names besides its own.
type RelatedImage struct{ Name, Image string }

// PackageRequirement is a package a bundle requires, in a version range.
type PackageRequirement struct{ PackageName, VersionRange string }

// BundleChannel is a channel entry listing a bundle.
type BundleChannel struct {
	Channel, Replaces, SkipRange string
	Skips                        []string
	// IsHead says the bundle heads the channel.
	IsHead bool
}

// BundleDetail returns everything the index holds of the named bundle of
// pkg, or an error wrapping ErrNotFound. Property values are byte ranges
// of the bundle's blob: the blob is read once from the content file and
// sliced here, so the cost is linear in the blob's size.
func (c *Catalog) BundleDetail(ctx context.Context, pkg, name string) (BundleDetail, error) {
	b, err := c.bundleRow(ctx, pkg, name)
	if err != nil {
		return BundleDetail{}, err
	}
	out := BundleDetail{Name: b.Name, Package: pkg, Version: b.Version, Release: b.Release, Image: b.Image}

	var where Range
	if err := c.get(ctx, &where, `SELECT offset, length FROM blobs WHERE id = ?`, b.BlobID); err != nil {
		return BundleDetail{}, fmt.Errorf("read blob of %q: %w", b.Name, err)
	}
	if out.Properties, err = c.properties(ctx, b.ID, b.Name, where, false); err != nil {
		return BundleDetail{}, err
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
			return BundleDetail{}, fmt.Errorf("read %s of %q: %w", q.what, b.Name, err)
		}
	}
	if out.Channels, err = c.bundleChannels(ctx, pkg, b.Name); err != nil {
		return BundleDetail{}, err
	}
	if out.Deprecation, err = c.BundleDeprecation(ctx, pkg, b.Name); err != nil {
		return BundleDetail{}, err
	}
	return out, nil
}

// bundleChannels returns the entries that list a bundle, by channel name,
// marking the channels it heads, with their skips: two queries, whatever
// the number of entries.
func (c *Catalog) bundleChannels(ctx context.Context, pkg, bundle string) ([]BundleChannel, error) {
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
	out := make([]BundleChannel, 0, len(rows))
	for _, r := range rows {
		out = append(out, BundleChannel{Channel: r.Channel, Replaces: r.Replaces, SkipRange: r.SkipRange,
			Skips: skips[r.ID], IsHead: r.Head.Valid && r.Head.String == bundle})
	}
	return out, nil
}
