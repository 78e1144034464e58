package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Package is a package: its default channel, description, whether it has
// an icon, and what a console lists of it.
type Package struct {
	Name, DefaultChannel, Description string
	HasIcon                           bool
	Display                           Display
	// Digest identifies the package's content (see package index): equal
	// in two versions of a catalog exactly when the package did not change.
	Digest string
}

// Display is what a console lists for a package, taken from the
// olm.csv.metadata of its default channel's head when the index was built.
// The build stores it as JSON in packages.display; the tags name its keys.
type Display struct {
	DisplayName      string       `json:"displayName"`
	Provider         string       `json:"provider"`
	Keywords         []string     `json:"keywords"`
	Maturity         string       `json:"maturity"`
	ShortDescription string       `json:"shortDescription"`
	Links            []Link       `json:"links"`
	Maintainers      []Maintainer `json:"maintainers"`
}

// Link is a named link of a package's metadata.
type Link struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Maintainer is a maintainer of a package.
type Maintainer struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

type packageRow struct {
	Name           string         `db:"name"`
	DefaultChannel string         `db:"default_channel"`
	Description    string         `db:"description"`
	HasIcon        bool           `db:"has_icon"`
	Display        sql.NullString `db:"display"`
	Digest         string         `db:"digest"`
}

// decodeDisplay decodes what the build stored for listing a package; a
// value that does not decode shows nothing.
func decodeDisplay(raw sql.NullString) Display {
	var d Display
	if raw.Valid {
		_ = json.Unmarshal([]byte(raw.String), &d)
	}
	return d
}

// Package returns the named package, or an error wrapping ErrNotFound.
func (c *Catalog) Package(ctx context.Context, name string) (Package, error) {
	var row packageRow
	err := c.get(ctx, &row, `SELECT name, default_channel, description, display, digest,
		icon_data IS NOT NULL AND length(icon_data) > 0 AS has_icon FROM packages WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return Package{}, fmt.Errorf("package %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Package{}, fmt.Errorf("read package %q: %w", name, err)
	}
	return Package{Name: row.Name, DefaultChannel: row.DefaultChannel, Description: row.Description,
		HasIcon: row.HasIcon, Display: decodeDisplay(row.Display), Digest: row.Digest}, nil
}

// Icon returns a package's icon and its media type (empty when the catalog
// gave none); a package without an icon has empty data.
func (c *Catalog) Icon(ctx context.Context, pkg string) ([]byte, string, error) {
	var icon struct {
		Data      []byte `db:"icon_data"`
		MediaType string `db:"icon_media_type"`
	}
	err := c.get(ctx, &icon, `SELECT icon_data, icon_media_type FROM packages WHERE name = ?`, pkg)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("package %q: %w", pkg, ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read icon of %q: %w", pkg, err)
	}
	return icon.Data, icon.MediaType, nil
}

// Deprecation returns the deprecation message of a package (schema
// olm.package, empty name), a channel or a bundle, "" if it has none.
func (c *Catalog) Deprecation(ctx context.Context, pkg, schema, name string) (string, error) {
	var msg string
	err := c.get(ctx, &msg, `SELECT message FROM deprecations WHERE package = ? AND schema = ? AND name = ? LIMIT 1`, pkg, schema, name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read deprecation of %s %q: %w", schema, name, err)
	}
	return msg, nil
}

// BundleDeprecation is the bundle's own deprecation, or its package's: a
// deprecated package deprecates every bundle in it.
func (c *Catalog) BundleDeprecation(ctx context.Context, pkg, bundle string) (string, error) {
	msg, err := c.Deprecation(ctx, pkg, "olm.bundle", bundle)
	if err != nil || msg != "" {
		return msg, err
	}
	return c.Deprecation(ctx, pkg, "olm.package", "")
}

// Problem is a validation problem the build recorded for a package: the
// package is indexed as far as it could be, and the problem says what is
// wrong with it, and where (the blob concerned, as path:line:column from
// the catalog's root).
type Problem struct{ Package, Position, Message string }

// Problems returns the validation problems of a package, or of every
// package when pkg is "". Every package's are read once per file and kept:
// the sync service asks for them on every sync, rebuilt or not, and the
// file never changes. The slice is shared; callers must not modify it.
func (c *Catalog) Problems(ctx context.Context, pkg string) ([]Problem, error) {
	if pkg == "" {
		return memo(c, "problems", func() ([]Problem, error) {
			var out []Problem
			if err := c.sel(ctx, &out, `SELECT package, position, message FROM problems ORDER BY package, id`); err != nil {
				return nil, fmt.Errorf("read problems: %w", err)
			}
			return out, nil
		})
	}
	var out []Problem
	if err := c.sel(ctx, &out, `SELECT package, position, message FROM problems WHERE package = ? ORDER BY id`, pkg); err != nil {
		return nil, fmt.Errorf("read problems: %w", err)
	}
	return out, nil
}

// PackageSummary is a package's entry in the list of packages.
type PackageSummary struct {
	Name, DefaultChannel string
	// Channels are the names of the package's channels, in name order.
	Channels []string
	// Deprecation is the package's deprecation message, "" if it has none.
	Deprecation string
	Display     Display
	// Digest identifies the package's content, as Package.Digest.
	Digest string
}

// PackageIndex is every package's list entry, in name order.
type PackageIndex struct {
	Items  []PackageSummary
	byName map[string]int
}

// Get returns the list entry of the named package.
func (p *PackageIndex) Get(name string) (PackageSummary, bool) {
	i, ok := p.byName[name]
	if !ok {
		return PackageSummary{}, false
	}
	return p.Items[i], true
}

// PackageSummaries returns every package's list entry, read in three
// queries once per file and kept: a page of packages is then a slice of
// it, where reading and decoding the rows of each page cost milliseconds.
// It holds what a console lists of each package, a few hundred bytes each.
func (c *Catalog) PackageSummaries(ctx context.Context) (*PackageIndex, error) {
	return memo(c, "packageSummaries", func() (*PackageIndex, error) {
		var rows []packageRow
		if err := c.sel(ctx, &rows, `SELECT name, default_channel, display, digest FROM packages ORDER BY name`); err != nil {
			return nil, fmt.Errorf("list packages: %w", err)
		}
		var chRows []struct {
			Package string `db:"package"`
			Name    string `db:"name"`
		}
		if err := c.sel(ctx, &chRows, `SELECT package, name FROM channels ORDER BY package, name`); err != nil {
			return nil, fmt.Errorf("list channels: %w", err)
		}
		channels := map[string][]string{}
		for _, r := range chRows {
			channels[r.Package] = append(channels[r.Package], r.Name)
		}
		var depRows []struct {
			Package string `db:"package"`
			Message string `db:"message"`
		}
		if err := c.sel(ctx, &depRows, `SELECT package, message FROM deprecations WHERE schema = 'olm.package' AND name = '' ORDER BY rowid`); err != nil {
			return nil, fmt.Errorf("read deprecations: %w", err)
		}
		deprecations := map[string]string{}
		for _, r := range depRows {
			deprecations[r.Package] = r.Message
		}
		idx := &PackageIndex{Items: make([]PackageSummary, 0, len(rows)), byName: make(map[string]int, len(rows))}
		for _, row := range rows {
			idx.byName[row.Name] = len(idx.Items)
			idx.Items = append(idx.Items, PackageSummary{Name: row.Name, DefaultChannel: row.DefaultChannel,
				Channels: channels[row.Name], Deprecation: deprecations[row.Name], Display: decodeDisplay(row.Display), Digest: row.Digest})
		}
		return idx, nil
	})
}

// SearchPackages returns the names of the packages whose console entry
// matches match (an FTS5 query), best first, whose name contains
// nameFilter: limit of them from offset.
func (c *Catalog) SearchPackages(ctx context.Context, match, nameFilter string, limit, offset int) ([]string, error) {
	var names []string
	if err := c.sel(ctx, &names, `SELECT name FROM package_search
		WHERE package_search MATCH ? AND instr(name, ?) > 0 ORDER BY rank, name LIMIT ? OFFSET ?`,
		match, nameFilter, limit, offset); err != nil {
		return nil, fmt.Errorf("search packages: %w", err)
	}
	return names, nil
}
