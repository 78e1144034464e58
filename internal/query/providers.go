package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// GVK is an API group, version and kind; the core group is "".
type GVK struct{ Group, Version, Kind string }

// Provider is a bundle that provides a GVK, with the channels that list it.
type Provider struct {
	Package, Bundle, Version string
	Channels                 []ProviderChannel
}

// ProviderChannel is a channel that lists a providing bundle.
type ProviderChannel struct {
	Name string
	// IsHead says the bundle heads the channel; IsDefault, that the channel
	// is its package's default.
	IsHead, IsDefault bool
}

// Providers lists the bundles that provide a GVK, by package and newest
// version first, each with its channels, in one query; with latest, only
// those that head a channel. Whether a channel is its package's default
// and which bundle heads it come from channelHeads, kept in memory:
// joining channels and packages for each row cost most of the answer's
// time.
func (c *Catalog) Providers(ctx context.Context, g GVK, latest bool) ([]Provider, error) {
	heads, err := c.channelHeads(ctx)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Package  string `db:"package"`
		Name     string `db:"name"`
		Version  string `db:"version"`
		Channels string `db:"channels"`
	}
	if err := c.sel(ctx, &rows, `SELECT b.package, b.name, b.version, b.channels
		FROM provided_gvks g JOIN bundles b ON b.id = g.bundle_id
		WHERE g.kind = ? AND g.grp = ? AND g.version = ?
		ORDER BY b.package, b.version_rank DESC, b.name`, g.Kind, g.Group, g.Version); err != nil {
		return nil, fmt.Errorf("find providers of %s/%s %s: %w", g.Group, g.Version, g.Kind, err)
	}
	var out []Provider
	for i, row := range rows {
		// A bundle listing the same GVK twice yields repeated rows.
		if i > 0 && rows[i-1].Package == row.Package && rows[i-1].Name == row.Name {
			continue
		}
		var names []string
		if err := json.Unmarshal([]byte(row.Channels), &names); err != nil {
			return nil, fmt.Errorf("read channels of bundle %q: %w", row.Name, err)
		}
		p := Provider{Package: row.Package, Bundle: row.Name, Version: row.Version,
			Channels: make([]ProviderChannel, 0, len(names))}
		pkg := heads[row.Package]
		head := false
		for _, name := range names {
			ch, ok := pkg.channels[name]
			isHead := ok && ch.Valid && ch.String == row.Name
			p.Channels = append(p.Channels, ProviderChannel{Name: name, IsHead: isHead,
				IsDefault: pkg.declared && pkg.defaultChannel == name})
			head = head || isHead
		}
		if !latest || head {
			out = append(out, p)
		}
	}
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
