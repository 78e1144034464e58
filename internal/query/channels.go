package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// BundleRef names a bundle and gives its version.
type BundleRef struct{ Name, Version string }

// ChannelSummary is a channel with its head, as computed when the index was
// built.
type ChannelSummary struct {
	Name string
	// Head is the channel's head; zero when the channel has no single head,
	// and then HeadProblem says why.
	Head        BundleRef
	HeadProblem string
	// EntryCount is how many entries the channel lists.
	EntryCount int
	// IsDefault says the channel is its package's default channel.
	IsDefault bool
	// Deprecation is the channel's deprecation message, "" if it has none.
	Deprecation string
}

// Channel is a channel with its entries, in the catalog's order.
type Channel struct {
	ChannelSummary
	Package string
	Entries []ChannelEntry
}

// ChannelEntry is an entry of a channel. Version is the version of its
// bundle, "" when the catalog has no such bundle.
type ChannelEntry struct {
	Name, Version, Replaces, SkipRange string
	Skips                              []string
}

// channelRow is a channel with its head, as computed when the index was built.
type channelRow struct {
	Name        string         `db:"name"`
	Head        sql.NullString `db:"head"`
	HeadVersion sql.NullString `db:"head_version"`
	HeadProblem sql.NullString `db:"head_problem"`
	EntryCount  int            `db:"entry_count"`
	Deprecation sql.NullString `db:"deprecation"`
}

const channelColumns = `c.name, c.head, b.version AS head_version, c.head_problem,
	(SELECT count(*) FROM channel_entries e WHERE e.package = c.package AND e.channel = c.name) AS entry_count,
	(SELECT d.message FROM deprecations d WHERE d.package = c.package AND d.schema = 'olm.channel' AND d.name = c.name LIMIT 1) AS deprecation
	FROM channels c LEFT JOIN bundles b ON b.package = c.package AND b.name = c.head`

func (c channelRow) summary(defaultChannel string) ChannelSummary {
	out := ChannelSummary{Name: c.Name, EntryCount: c.EntryCount, IsDefault: c.Name == defaultChannel,
		HeadProblem: c.HeadProblem.String, Deprecation: c.Deprecation.String}
	if c.Head.Valid {
		out.Head = BundleRef{Name: c.Head.String, Version: c.HeadVersion.String}
	}
	return out
}

// Channels returns the channels of pkg, by name, each with its head.
func (c *Catalog) Channels(ctx context.Context, pkg Package) ([]ChannelSummary, error) {
	var rows []channelRow
	if err := c.sel(ctx, &rows, `SELECT `+channelColumns+` WHERE c.package = ? ORDER BY c.name`, pkg.Name); err != nil {
		return nil, fmt.Errorf("list channels of %q: %w", pkg.Name, err)
	}
	out := make([]ChannelSummary, 0, len(rows))
	for _, row := range rows {
		out = append(out, row.summary(pkg.DefaultChannel))
	}
	return out, nil
}

// HasChannel reports whether pkg has the named channel.
func (c *Catalog) HasChannel(ctx context.Context, pkg, channel string) (bool, error) {
	var exists bool
	if err := c.get(ctx, &exists, `SELECT count(*) > 0 FROM channels WHERE package = ? AND name = ?`, pkg, channel); err != nil {
		return false, fmt.Errorf("read channel %q: %w", channel, err)
	}
	return exists, nil
}

// Channel returns one channel of pkg with its entries in order, or an
// error wrapping ErrNotFound.
func (c *Catalog) Channel(ctx context.Context, pkg Package, name string) (Channel, error) {
	var row channelRow
	err := c.get(ctx, &row, `SELECT `+channelColumns+` WHERE c.package = ? AND c.name = ?`, pkg.Name, name)
	if errors.Is(err, sql.ErrNoRows) {
		return Channel{}, fmt.Errorf("channel %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Channel{}, fmt.Errorf("read channel %q: %w", name, err)
	}
	out := Channel{ChannelSummary: row.summary(pkg.DefaultChannel), Package: pkg.Name}

	var entries []struct {
		ID        int64          `db:"id"`
		Bundle    string         `db:"bundle"`
		Replaces  string         `db:"replaces"`
		SkipRange string         `db:"skip_range"`
		Version   sql.NullString `db:"version"`
	}
	if err := c.sel(ctx, &entries, `SELECT e.id, e.bundle, e.replaces, e.skip_range, b.version
		FROM channel_entries e LEFT JOIN bundles b ON b.package = e.package AND b.name = e.bundle
		WHERE e.package = ? AND e.channel = ? ORDER BY e.position`, pkg.Name, name); err != nil {
		return Channel{}, fmt.Errorf("read entries of channel %q: %w", name, err)
	}
	skips, err := c.channelSkips(ctx, pkg.Name, name)
	if err != nil {
		return Channel{}, err
	}
	out.Entries = make([]ChannelEntry, 0, len(entries))
	for _, e := range entries {
		out.Entries = append(out.Entries, ChannelEntry{Name: e.Bundle, Version: e.Version.String,
			Replaces: e.Replaces, SkipRange: e.SkipRange, Skips: skips[e.ID]})
	}
	return out, nil
}

// channelSkips reads the skips of every entry of a channel, by entry id,
// each entry's in the catalog's order.
func (c *Catalog) channelSkips(ctx context.Context, pkg, channel string) (map[int64][]string, error) {
	var rows []struct {
		EntryID int64  `db:"entry_id"`
		Skip    string `db:"skip"`
	}
	if err := c.sel(ctx, &rows, `SELECT s.entry_id, s.skip FROM channel_entries e
		JOIN channel_entry_skips s ON s.entry_id = e.id
		WHERE e.package = ? AND e.channel = ? ORDER BY e.position, s.rowid`, pkg, channel); err != nil {
		return nil, fmt.Errorf("read skips of channel %q of %q: %w", channel, pkg, err)
	}
	skips := map[int64][]string{}
	for _, r := range rows {
		skips[r.EntryID] = append(skips[r.EntryID], r.Skip)
	}
	return skips, nil
}
