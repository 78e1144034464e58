package query

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// PackageFacts are what a changes answer compares of a package between two
// versions of a catalog: its channels with their heads, its bundles' names
// and its deprecation entries. They are small (names, not blobs), so that
// the store can keep them for earlier versions whose index files are gone.
type PackageFacts struct {
	// Channels in name order; Head is "" when the channel has none.
	Channels []ChannelFact `json:"channels,omitempty"`
	// Bundles are the names of the package's bundles, in name order.
	Bundles []string `json:"bundles,omitempty"`
	// Deprecations in (schema, name, message) order.
	Deprecations []DeprecationFact `json:"deprecations,omitempty"`
}

// ChannelFact is a channel's name and head.
type ChannelFact struct {
	Name string `json:"name"`
	Head string `json:"head,omitempty"`
}

// DeprecationFact is one deprecation entry of a package: the package itself
// (schema olm.package, empty name), one of its channels or bundles.
type DeprecationFact struct {
	Schema  string `json:"schema"`
	Name    string `json:"name,omitempty"`
	Message string `json:"message"`
}

// The statements PackageFacts runs, each served by an index on package.
const (
	factsChannelsQuery     = `SELECT name, coalesce(head, '') AS head FROM channels WHERE package = ? ORDER BY name`
	factsBundlesQuery      = `SELECT name FROM bundles WHERE package = ? ORDER BY name`
	factsDeprecationsQuery = `SELECT schema, name, message FROM deprecations WHERE package = ? ORDER BY schema, name, message`
)

// PackageFacts reads the facts of a package; a package the catalog does not
// have has none.
func (c *Catalog) PackageFacts(ctx context.Context, pkg string) (PackageFacts, error) {
	var f PackageFacts
	if err := c.sel(ctx, &f.Channels, factsChannelsQuery, pkg); err != nil {
		return PackageFacts{}, fmt.Errorf("read channels of package %q: %w", pkg, err)
	}
	if err := c.sel(ctx, &f.Bundles, factsBundlesQuery, pkg); err != nil {
		return PackageFacts{}, fmt.Errorf("read bundles of package %q: %w", pkg, err)
	}
	if err := c.sel(ctx, &f.Deprecations, factsDeprecationsQuery, pkg); err != nil {
		return PackageFacts{}, fmt.Errorf("read deprecations of package %q: %w", pkg, err)
	}
	return f, nil
}

// PackageDigests returns the digest of every package (see Package.Digest),
// by name; the map is shared and must not be modified.
func (c *Catalog) PackageDigests(ctx context.Context) (map[string]string, error) {
	return memo(c, "packageDigests", func() (map[string]string, error) {
		idx, err := c.PackageSummaries(ctx)
		if err != nil {
			return nil, err
		}
		out := make(map[string]string, len(idx.Items))
		for _, p := range idx.Items {
			out[p.Name] = p.Digest
		}
		return out, nil
	})
}

// PackageVersion names what the answers about package pkg are made of:
// its digest, which covers its blobs, and its validation problems, whose
// file positions a new layout of the same content changes. ok is false
// when the catalog has no such package. Every package's version is
// computed once per index file, from what the file keeps already, so that
// answering a conditional request costs no query.
func (c *Catalog) PackageVersion(ctx context.Context, pkg string) (version string, ok bool, err error) {
	versions, err := memo(c, "packageVersions", func() (map[string]string, error) {
		digests, err := c.PackageDigests(ctx)
		if err != nil {
			return nil, err
		}
		problems, err := c.Problems(ctx, "")
		if err != nil {
			return nil, err
		}
		byPackage := map[string][]Problem{}
		for _, p := range problems {
			byPackage[p.Package] = append(byPackage[p.Package], p)
		}
		out := make(map[string]string, len(digests))
		for name, digest := range digests {
			h := sha256.New()
			h.Write([]byte("package\x00" + digest))
			for _, p := range byPackage[name] {
				h.Write([]byte("\x00" + p.Position + "\x00" + p.Message))
			}
			out[name] = hex.EncodeToString(h.Sum(nil))
		}
		return out, nil
	})
	if err != nil {
		return "", false, err
	}
	version, ok = versions[pkg]
	return version, ok, nil
}

// Changes are the differences between an earlier version of a catalog and
// a later one, each named by its content digest.
type Changes struct {
	From, To string
	// Added and Removed are package names, in name order.
	Added, Removed []string
	// Changed are the packages in both versions whose digests differ, in
	// name order.
	Changed []PackageChange
}

// PackageChange is what changed in one package.
type PackageChange struct {
	Package                   string
	DigestBefore, DigestAfter string
	// Detailed is false when the facts of the earlier version were not
	// kept; the package is then only known to have changed.
	Detailed                               bool
	ChannelsAdded, ChannelsRemoved         []string
	Heads                                  []HeadChange
	BundlesAdded, BundlesRemoved           []string
	DeprecationsAdded, DeprecationsRemoved []DeprecationFact
}

// HeadChange is a channel's head before and after ("" where the channel
// was absent or had no head), for every channel of either version.
type HeadChange struct{ Channel, Before, After string }

// DiffFacts fills in what changed in a package from its facts in two
// versions.
func DiffFacts(before, after PackageFacts) (c PackageChange) {
	c.Detailed = true
	heads := map[string]*HeadChange{}
	for _, ch := range before.Channels {
		heads[ch.Name] = &HeadChange{Channel: ch.Name, Before: ch.Head}
	}
	for _, ch := range after.Channels {
		if h, ok := heads[ch.Name]; ok {
			h.After = ch.Head
			continue
		}
		heads[ch.Name] = &HeadChange{Channel: ch.Name, After: ch.Head}
		c.ChannelsAdded = append(c.ChannelsAdded, ch.Name)
	}
	afterChannels := names(after.Channels, func(ch ChannelFact) string { return ch.Name })
	for _, ch := range before.Channels {
		if !afterChannels[ch.Name] {
			c.ChannelsRemoved = append(c.ChannelsRemoved, ch.Name)
		}
	}
	for _, h := range heads {
		c.Heads = append(c.Heads, *h)
	}
	slices.SortFunc(c.Heads, func(a, b HeadChange) int { return cmp.Compare(a.Channel, b.Channel) })
	slices.Sort(c.ChannelsAdded)
	slices.Sort(c.ChannelsRemoved)
	c.BundlesAdded, c.BundlesRemoved = setDiff(before.Bundles, after.Bundles, func(s string) string { return s })
	c.DeprecationsAdded, c.DeprecationsRemoved = setDiff(before.Deprecations, after.Deprecations,
		func(d DeprecationFact) DeprecationFact { return d })
	return c
}

// setDiff returns the elements of after not in before and those of before
// not in after, each in its list's order.
func setDiff[T any, K comparable](before, after []T, key func(T) K) (added, removed []T) {
	inBefore := names(before, key)
	inAfter := names(after, key)
	for _, v := range after {
		if !inBefore[key(v)] {
			added = append(added, v)
		}
	}
	for _, v := range before {
		if !inAfter[key(v)] {
			removed = append(removed, v)
		}
	}
	return added, removed
}

func names[T any, K comparable](list []T, key func(T) K) map[K]bool {
	out := make(map[K]bool, len(list))
	for _, v := range list {
		out[key(v)] = true
	}
	return out
}
