package catalogdb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/catalogd/catalogd/client"
)

// GVK is an API group, version and kind; the core group is "".
type GVK struct{ Group, Version, Kind string }

// Providers lists the bundles that provide a GVK (of the catalog named
// catalog, which the answer repeats), by package
// and newest version first, each with its channels, in one query. Whether a
// channel is its package's default and which bundle heads it come from
// channelHeads, kept in memory: joining channels and packages for each row
// cost most of the answer's time.
func (c *Catalog) Providers(ctx context.Context, catalog string, g GVK, latest bool) ([]client.Provider, error) {
	heads, err := c.channelHeads(ctx)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Package string         `db:"package"`
		Name    string         `db:"name"`
		Version string         `db:"version"`
		Channel sql.NullString `db:"channel"`
	}
	if err := c.sel(ctx, &rows, `SELECT b.package, b.name, b.version, e.channel
		FROM provided_gvks g JOIN bundles b ON b.id = g.bundle_id
		LEFT JOIN channel_entries e ON e.package = b.package AND e.bundle = b.name
		WHERE g.kind = ? AND g.grp = ? AND g.version = ?
		ORDER BY b.package, b.version_rank DESC, b.name, e.channel`, g.Kind, g.Group, g.Version); err != nil {
		return nil, fmt.Errorf("find providers of %s/%s %s: %w", g.Group, g.Version, g.Kind, err)
	}
	out := []client.Provider{}
	var cur *client.Provider
	head := false
	flush := func() {
		if cur != nil && (!latest || head) {
			out = append(out, *cur)
		}
	}
	for _, row := range rows {
		if cur == nil || cur.Package != row.Package || cur.Bundle != row.Name {
			flush()
			cur = &client.Provider{Catalog: catalog, Package: row.Package, Bundle: row.Name, Version: row.Version, Channels: []client.ProviderChannel{}}
			head = false
		}
		// A bundle listing the same GVK twice, or listed twice in a channel, yields repeated rows.
		if !row.Channel.Valid || (len(cur.Channels) > 0 && cur.Channels[len(cur.Channels)-1].Name == row.Channel.String) {
			continue
		}
		pkg := heads[row.Package]
		ch, ok := pkg.channels[row.Channel.String]
		isHead := ok && ch.Valid && ch.String == row.Name
		cur.Channels = append(cur.Channels, client.ProviderChannel{Name: row.Channel.String, IsHead: isHead,
			IsDefault: pkg.declared && pkg.defaultChannel == row.Channel.String})
		head = head || isHead
	}
	flush()
	return out, nil
}

// packageHeads are a package's default channel and the head of each of its
// channels (NULL when ambiguous).
type packageHeads struct {
	// declared says the package has an olm.package blob, and so a default channel.
	declared       bool
	defaultChannel string
	channels       map[string]sql.NullString
}

// channelHeads returns every package's default channel and channel heads,
// read once per index file and kept: a few hundred names for a real catalog.
func (c *Catalog) channelHeads(ctx context.Context) (map[string]packageHeads, error) {
	return memo(c, "channelHeads", func() (map[string]packageHeads, error) {
		var rows []struct {
			Package        string         `db:"package"`
			Name           string         `db:"name"`
			Head           sql.NullString `db:"head"`
			DefaultChannel sql.NullString `db:"default_channel"`
		}
		if err := c.sel(ctx, &rows, `SELECT c.package, c.name, c.head, p.default_channel
			FROM channels c LEFT JOIN packages p ON p.name = c.package`); err != nil {
			return nil, fmt.Errorf("read channel heads: %w", err)
		}
		out := map[string]packageHeads{}
		for _, r := range rows {
			p, ok := out[r.Package]
			if !ok {
				p = packageHeads{declared: r.DefaultChannel.Valid, defaultChannel: r.DefaultChannel.String, channels: map[string]sql.NullString{}}
				out[r.Package] = p
			}
			p.channels[r.Name] = r.Head
		}
		return out, nil
	})
}
