package query

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/blang/semver/v4"
)

// UpgradeRule is an OLM rule by which a bundle upgrades another.
type UpgradeRule string

// The rules, as FBC names the fields that state them.
const (
	RuleReplaces  UpgradeRule = "replaces"
	RuleSkips     UpgradeRule = "skips"
	RuleSkipRange UpgradeRule = "skipRange"
)

// Upgrades are where a bundle may upgrade to directly.
type Upgrades struct {
	From BundleRef
	// Edges are the bundles it may upgrade to, newest first.
	Edges []UpgradeEdge
	// Heads are the heads of the channels considered, by channel name.
	Heads []ChannelHead
}

// UpgradeEdge is a bundle another may upgrade to, in one channel, and the
// rules that allow it, in the order found.
type UpgradeEdge struct {
	Name, Version, Channel string
	Rules                  []UpgradeRule
}

// ChannelHead is the head of a channel.
type ChannelHead struct{ Channel, Name, Version string }

// UpgradesFrom answers which bundles src, a bundle of pkg, may upgrade to
// directly, in channel or in any channel when channel is "", by OLM's
// rules: an entry whose replaces names it, whose skips list it, or whose
// skipRange contains its version; and the heads of the channels
// considered. replaces and skips edges come from one indexed query;
// skipRanges are evaluated here, against the package's ranges parsed once
// per file (see skipRanges), with blang/semver's ParseRange as
// operator-registry does. Storing every (bundle, range) pair at build time
// instead grew with the square of a package's versions.
func (c *Catalog) UpgradesFrom(ctx context.Context, pkg string, src Bundle, channel string) (Upgrades, error) {
	type key struct{ bundle, channel string }
	type target struct {
		version string
		rank    int
		rules   []UpgradeRule
	}
	targets := map[key]*target{}
	add := func(bundle, channel, version string, rank int, rule UpgradeRule) {
		if bundle == src.Name {
			return
		}
		k := key{bundle, channel}
		t, ok := targets[k]
		if !ok {
			t = &target{version: version, rank: rank}
			targets[k] = t
		}
		t.rules = append(t.rules, rule)
	}
	// Entries without a bundle, or whose bundle has no version, are
	// recorded validation problems, not upgrades: the joins leave them out,
	// so that no target is named without the version a client compares. CROSS JOIN keeps the few entries
	// found first: given the choice, SQLite reads every bundle of the
	// package and looks each up among them, which costs 11 ms a request
	// for a package of 50,000 bundles (BenchmarkReplacesChainHTTP).
	var edges []struct {
		Bundle  string `db:"bundle"`
		Channel string `db:"channel"`
		Rule    string `db:"rule"`
		Version string `db:"version"`
		Rank    int    `db:"version_rank"`
	}
	if err := c.sel(ctx, &edges, `SELECT x.bundle, x.channel, x.rule, b.version, b.version_rank FROM (
			SELECT e.bundle, e.channel, 'replaces' AS rule, 0 AS part, e.id FROM channel_entries e
			WHERE e.package = ? AND e.replaces = ?
			UNION ALL
			SELECT e.bundle, e.channel, 'skips' AS rule, 1 AS part, e.id FROM channel_entry_skips s
			JOIN channel_entries e ON e.id = s.entry_id
			WHERE s.package = ? AND s.skip = ?) x
		CROSS JOIN bundles b ON b.package = ? AND b.name = x.bundle
		WHERE b.version != '' AND (? = '' OR x.channel = ?)
		ORDER BY x.part, x.id`, pkg, src.Name, pkg, src.Name, pkg, channel, channel); err != nil {
		return Upgrades{}, fmt.Errorf("find entries replacing or skipping %q: %w", src.Name, err)
	}
	for _, e := range edges {
		add(e.Bundle, e.Channel, e.Version, e.Rank, UpgradeRule(e.Rule))
	}
	if v, err := semver.Parse(src.Version); err == nil {
		ranges, err := c.skipRanges(ctx, pkg)
		if err != nil {
			return Upgrades{}, err
		}
		seen := map[key]bool{} // an entry a channel lists twice gives its edge once
		for _, r := range ranges {
			k := key{r.bundle, r.channel}
			if seen[k] || (channel != "" && r.channel != channel) || !r.contains(v) {
				continue
			}
			seen[k] = true
			add(r.bundle, r.channel, r.version, r.rank, RuleSkipRange)
		}
	}

	out := Upgrades{From: BundleRef{Name: src.Name, Version: src.Version}, Edges: make([]UpgradeEdge, 0, len(targets))}
	ranks := map[string]int{}
	for k, t := range targets {
		ranks[k.bundle] = t.rank
		out.Edges = append(out.Edges, UpgradeEdge{Name: k.bundle, Version: t.version, Channel: k.channel, Rules: t.rules})
	}
	sort.Slice(out.Edges, func(i, j int) bool {
		a, b := out.Edges[i], out.Edges[j]
		if ranks[a.Name] != ranks[b.Name] {
			return ranks[a.Name] > ranks[b.Name]
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Channel < b.Channel
	})

	var heads []struct {
		Channel string         `db:"channel"`
		Head    string         `db:"head"`
		Version sql.NullString `db:"version"`
	}
	if err := c.sel(ctx, &heads, `SELECT c.name AS channel, c.head, b.version FROM channels c
		LEFT JOIN bundles b ON b.package = c.package AND b.name = c.head
		WHERE c.package = ? AND c.head IS NOT NULL AND (c.name = ? OR (? = '' AND c.name IN
			(SELECT channel FROM channel_entries WHERE package = ? AND bundle = ?)))
		ORDER BY c.name`, pkg, channel, channel, pkg, src.Name); err != nil {
		return Upgrades{}, fmt.Errorf("read channel heads of %q: %w", pkg, err)
	}
	out.Heads = make([]ChannelHead, 0, len(heads))
	for _, h := range heads {
		out.Heads = append(out.Heads, ChannelHead{Channel: h.Channel, Name: h.Head, Version: h.Version.String})
	}
	return out, nil
}

// skipRange is a channel entry's skipRange, parsed.
type skipRange struct {
	bundle, channel string
	// version and rank are those of the entry's bundle.
	version  string
	rank     int
	contains semver.Range
}

// skipRanges returns the parsed skipRanges of a package's entries whose
// bundle is indexed and has a version, in entry order, read and parsed once per index file
// (a file never changes). A range that does not parse matches nothing;
// validation reports it.
func (c *Catalog) skipRanges(ctx context.Context, pkg string) ([]skipRange, error) {
	return memo(c, "skipRanges\x00"+pkg, func() ([]skipRange, error) {
		var rows []struct {
			Bundle    string `db:"bundle"`
			Channel   string `db:"channel"`
			SkipRange string `db:"skip_range"`
			Version   string `db:"version"`
			Rank      int    `db:"version_rank"`
		}
		if err := c.sel(ctx, &rows, `SELECT e.bundle, e.channel, e.skip_range, b.version, b.version_rank
			FROM channel_entries e JOIN bundles b ON b.package = e.package AND b.name = e.bundle
			WHERE e.package = ? AND e.skip_range != '' AND b.version != '' ORDER BY e.id`, pkg); err != nil {
			return nil, fmt.Errorf("read skipRanges of package %q: %w", pkg, err)
		}
		out := make([]skipRange, 0, len(rows))
		parsed := map[string]semver.Range{}
		for _, r := range rows {
			inRange, ok := parsed[r.SkipRange]
			if !ok {
				inRange, _ = semver.ParseRange(r.SkipRange)
				parsed[r.SkipRange] = inRange
			}
			if inRange != nil {
				out = append(out, skipRange{bundle: r.Bundle, channel: r.Channel, version: r.Version, rank: r.Rank, contains: inRange})
			}
		}
		return out, nil
	})
}
