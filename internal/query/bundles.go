package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/Masterminds/semver/v3"
	"github.com/go-chi/chi/v5"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/store"
)

type bundleRow struct {
	ID      int64  `db:"id"`
	Name    string `db:"name"`
	Version string `db:"version"`
	Release string `db:"release"`
	Image   string `db:"image"`
	Rank    int    `db:"version_rank"`
	BlobID  int64  `db:"blob_id"`
}

const bundleColumns = `id, name, version, release, image, version_rank, blob_id`

// bundleChannels returns the entries that list a bundle, by channel name,
// marking the channels it heads, with their skips: two queries, whatever
// the number of entries.
func bundleChannels(ctx context.Context, db *store.Snapshot, pkg, bundle string) ([]client.BundleChannel, error) {
	var rows []struct {
		ID        int64          `db:"id"`
		Channel   string         `db:"channel"`
		Replaces  string         `db:"replaces"`
		SkipRange string         `db:"skip_range"`
		Head      sql.NullString `db:"head"`
	}
	if err := db.Select(ctx, &rows, `SELECT e.id, e.channel, e.replaces, e.skip_range, c.head
		FROM channel_entries e JOIN channels c ON c.package = e.package AND c.name = e.channel
		WHERE e.package = ? AND e.bundle = ? ORDER BY e.channel, e.id`, pkg, bundle); err != nil {
		return nil, fmt.Errorf("read channels of bundle %q: %w", bundle, err)
	}
	var skipRows []struct {
		EntryID int64  `db:"entry_id"`
		Skip    string `db:"skip"`
	}
	if err := db.Select(ctx, &skipRows, `SELECT s.entry_id, s.skip FROM channel_entries e
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

// bundleDeprecation is the bundle's own deprecation, or its package's: a
// deprecated package deprecates every bundle in it.
func bundleDeprecation(ctx context.Context, db *store.Snapshot, pkg, bundle string) (client.Deprecation, error) {
	d, err := deprecation(ctx, db, pkg, "olm.bundle", bundle)
	if err != nil || d.Message != "" {
		return d, err
	}
	return deprecation(ctx, db, pkg, "olm.package", "")
}

func parseConstraint(v string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(v)
	if err != nil {
		return nil, badParam("version", "version %q is not a semver constraint (for example \">=1.2.0 <2.0.0\" or \"~1.4\"): %v", v, err)
	}
	return c, nil
}

func (s *Server) listBundles(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	pg, err := parsePage(r, snap.Info.Digest)
	if err != nil {
		return nil, err
	}
	var constraint *semver.Constraints
	if q.Has("version") {
		if constraint, err = parseConstraint(q.Get("version")); err != nil {
			return nil, err
		}
	}
	pkg, err := lookupPackage(ctx, snap, chi.URLParam(r, "package"))
	if err != nil {
		return nil, err
	}
	// Ranks run from 0 (oldest); newest first means descending, resuming
	// below the last rank of the previous page.
	below := int64(1) << 62
	if pg.after != "" {
		if below, err = strconv.ParseInt(pg.after, 10, 64); err != nil {
			return nil, badParam("continue", "continue token does not belong to a bundle list; start again without continue")
		}
	}
	// Without a version filter one row past the page tells whether there is
	// a next page; with one, rows are filtered here, so all are read (-1).
	rowLimit := pg.limit + 1
	if constraint != nil {
		rowLimit = -1
	}
	var rows []bundleRow
	if channel := q.Get("channel"); q.Has("channel") {
		var exists bool
		if err := snap.Get(ctx, &exists, `SELECT count(*) > 0 FROM channels WHERE package = ? AND name = ?`, pkg.Name, channel); err != nil {
			return nil, fmt.Errorf("read channel %q: %w", channel, err)
		}
		if !exists {
			return nil, notFound("channel", "package %q has no channel %q", pkg.Name, channel)
		}
		err = snap.Select(ctx, &rows, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND version_rank < ?
			AND name IN (SELECT bundle FROM channel_entries WHERE package = ? AND channel = ?)
			ORDER BY version_rank DESC LIMIT ?`, pkg.Name, below, pkg.Name, channel, rowLimit)
	} else {
		err = snap.Select(ctx, &rows, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND version_rank < ?
			ORDER BY version_rank DESC LIMIT ?`, pkg.Name, below, rowLimit)
	}
	if err != nil {
		return nil, fmt.Errorf("list bundles of %q: %w", pkg.Name, err)
	}

	out := client.BundleList{Items: []client.BundleSummary{}}
	var page []bundleRow
	for _, b := range rows {
		if constraint != nil {
			v, err := semver.NewVersion(b.Version)
			if err != nil || !constraint.Check(v) {
				continue
			}
		}
		if len(page) == pg.limit {
			out.Continue = continueToken(snap.Info.Digest, strconv.Itoa(page[len(page)-1].Rank))
			break
		}
		page = append(page, b)
	}
	if len(page) == 0 {
		return out, nil
	}
	channels, deprecations, err := bundleExtras(ctx, snap, pkg.Name, page[len(page)-1].Rank, page[0].Rank)
	if err != nil {
		return nil, err
	}
	for _, b := range page {
		names := channels[b.Name]
		if names == nil {
			names = []string{}
		}
		dep := deprecations[b.Name]
		if dep.Message == "" {
			dep = deprecations[""] // a deprecated package deprecates each of its bundles
		}
		out.Items = append(out.Items, client.BundleSummary{Name: b.Name, Version: b.Version, Release: b.Release,
			Image: b.Image, Channels: names, Deprecation: dep})
	}
	return out, nil
}

// bundleExtras reads, in two queries whatever the page's length, the
// channels of a package's bundles ranked from lowRank to highRank, and the
// deprecations of its bundles (by name) and of itself (under "").
func bundleExtras(ctx context.Context, snap *store.Snapshot, pkg string, lowRank, highRank int) (map[string][]string, map[string]client.Deprecation, error) {
	var chRows []struct {
		Bundle  string `db:"name"`
		Channel string `db:"channel"`
	}
	if err := snap.Select(ctx, &chRows, `SELECT DISTINCT b.name, e.channel FROM bundles b
		JOIN channel_entries e ON e.package = b.package AND e.bundle = b.name
		WHERE b.package = ? AND b.version_rank BETWEEN ? AND ? ORDER BY b.name, e.channel`, pkg, lowRank, highRank); err != nil {
		return nil, nil, fmt.Errorf("read channels of bundles of %q: %w", pkg, err)
	}
	channels := map[string][]string{}
	for _, r := range chRows {
		channels[r.Bundle] = append(channels[r.Bundle], r.Channel)
	}
	var depRows []struct {
		Schema  string `db:"schema"`
		Name    string `db:"name"`
		Message string `db:"message"`
	}
	if err := snap.Select(ctx, &depRows, `SELECT schema, name, message FROM deprecations
		WHERE package = ? AND (schema = 'olm.bundle' OR (schema = 'olm.package' AND name = '')) ORDER BY rowid`, pkg); err != nil {
		return nil, nil, fmt.Errorf("read deprecations of bundles of %q: %w", pkg, err)
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
	return channels, deprecations, nil
}

func (s *Server) getBundle(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	pkg, err := lookupPackage(ctx, snap, chi.URLParam(r, "package"))
	if err != nil {
		return nil, err
	}
	name := chi.URLParam(r, "bundle")
	var b bundleRow
	err = snap.Get(ctx, &b, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND name = ?`, pkg.Name, name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("bundle", "package %q has no bundle %q", pkg.Name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("read bundle %q: %w", name, err)
	}
	out := client.Bundle{Name: b.Name, Package: pkg.Name, Version: b.Version, Release: b.Release, Image: b.Image,
		Properties: []client.Property{}, RelatedImages: []client.RelatedImage{}, ProvidedGVKs: []client.GVK{},
		RequiredGVKs: []client.GVK{}, RequiredPackages: []client.PackageRequirement{}}

	// Property values are byte ranges of the bundle's blob: the blob is
	// read once and sliced here, so the cost is linear in the blob's size
	// (the property_values view copies the blob for every property).
	var blob []byte
	if err := snap.Get(ctx, &blob, `SELECT CAST(data AS BLOB) FROM blobs WHERE id = ?`, b.BlobID); err != nil {
		return nil, fmt.Errorf("read blob of %q: %w", name, err)
	}
	var props []struct {
		Type   string         `db:"type"`
		Value  sql.NullString `db:"value"`
		Start  sql.NullInt64  `db:"value_start"`
		Length sql.NullInt64  `db:"value_length"`
	}
	if err := snap.Select(ctx, &props, `SELECT type, value, value_start, value_length FROM properties WHERE bundle_id = ? ORDER BY position`, b.ID); err != nil {
		return nil, fmt.Errorf("read properties of %q: %w", name, err)
	}
	for _, p := range props {
		value := json.RawMessage(p.Value.String)
		if !p.Value.Valid {
			start, end := p.Start.Int64, p.Start.Int64+p.Length.Int64
			if !p.Start.Valid || start < 0 || end > int64(len(blob)) || start > end {
				return nil, fmt.Errorf("read property %s of %q: value range %d-%d outside its %d-byte blob", p.Type, name, start, end, len(blob))
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
		if err := snap.Select(ctx, q.dest, q.query, b.ID); err != nil {
			return nil, fmt.Errorf("read %s of %q: %w", q.what, name, err)
		}
	}
	if out.Channels, err = bundleChannels(ctx, snap, pkg.Name, name); err != nil {
		return nil, err
	}
	if out.Deprecation, err = bundleDeprecation(ctx, snap, pkg.Name, name); err != nil {
		return nil, err
	}
	return out, nil
}
