package query

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/go-chi/chi/v5"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/index"
)

// listUpgrades answers which bundles a bundle may upgrade to directly, by
// OLM's rules: an entry whose replaces names it, whose skips list it, or
// whose skipRange contains its version. skipRange edges are evaluated when
// the index is built, with blang/semver's ParseRange as operator-registry
// does (its syntax differs from Masterminds' constraints used by the
// version filter).
func (s *Server) listUpgrades(r *http.Request, snap *index.Snapshot) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	from := q.Get("from")
	if from == "" {
		return nil, badParam("from", "from is required: the name or the version of the installed bundle")
	}
	pkg, err := lookupPackage(ctx, snap, chi.URLParam(r, "package"))
	if err != nil {
		return nil, err
	}
	var src bundleRow
	err = snap.Get(ctx, &src, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND name = ?`, pkg.Name, from)
	if errors.Is(err, sql.ErrNoRows) {
		var byVersion []bundleRow
		if err := snap.Select(ctx, &byVersion, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND version = ? ORDER BY name`, pkg.Name, from); err != nil {
			return nil, fmt.Errorf("find bundle %q: %w", from, err)
		}
		switch len(byVersion) {
		case 0:
			return nil, notFound("from", "package %q has no bundle named %q nor any bundle of that version", pkg.Name, from)
		case 1:
			src = byVersion[0]
		default:
			p := badParam("from", "several bundles of package %q have version %q; name one of them", pkg.Name, from)
			for _, b := range byVersion {
				p.candidates = append(p.candidates, b.Name)
			}
			return nil, p
		}
	} else if err != nil {
		return nil, fmt.Errorf("find bundle %q: %w", from, err)
	}

	channelFilter := "" // matches every channel when empty
	if q.Has("channel") {
		channelFilter = q.Get("channel")
		var exists bool
		if err := snap.Get(ctx, &exists, `SELECT count(*) > 0 FROM channels WHERE package = ? AND name = ?`, pkg.Name, channelFilter); err != nil {
			return nil, fmt.Errorf("read channel %q: %w", channelFilter, err)
		}
		if !exists {
			return nil, notFound("channel", "package %q has no channel %q", pkg.Name, channelFilter)
		}
	}

	type key struct{ bundle, channel string }
	rules := map[key][]client.UpgradeRule{}
	var order []key
	add := func(bundle, channel string, rule client.UpgradeRule) {
		k := key{bundle, channel}
		if bundle == src.Name {
			return
		}
		if _, ok := rules[k]; !ok {
			order = append(order, k)
		}
		rules[k] = append(rules[k], rule)
	}
	var edges []struct {
		Bundle    string `db:"bundle"`
		Channel   string `db:"channel"`
		SkipRange string `db:"skip_range"`
	}
	if err := snap.Select(ctx, &edges, `SELECT bundle, channel, '' AS skip_range FROM channel_entries
		WHERE package = ? AND replaces = ? AND (? = '' OR channel = ?)`, pkg.Name, src.Name, channelFilter, channelFilter); err != nil {
		return nil, fmt.Errorf("find entries replacing %q: %w", src.Name, err)
	}
	for _, e := range edges {
		add(e.Bundle, e.Channel, client.UpgradeRuleReplaces)
	}
	edges = edges[:0]
	if err := snap.Select(ctx, &edges, `SELECT e.bundle, e.channel, '' AS skip_range FROM channel_entry_skips s
		JOIN channel_entries e ON e.id = s.entry_id
		WHERE s.package = ? AND s.skip = ? AND (? = '' OR e.channel = ?)`, pkg.Name, src.Name, channelFilter, channelFilter); err != nil {
		return nil, fmt.Errorf("find entries skipping %q: %w", src.Name, err)
	}
	for _, e := range edges {
		add(e.Bundle, e.Channel, client.UpgradeRuleSkips)
	}
	edges = edges[:0]
	if err := snap.Select(ctx, &edges, `SELECT to_bundle AS bundle, channel, '' AS skip_range FROM skip_range_edges
		WHERE package = ? AND from_bundle = ? AND (? = '' OR channel = ?)`, pkg.Name, src.Name, channelFilter, channelFilter); err != nil {
		return nil, fmt.Errorf("find skipRanges containing %q: %w", src.Name, err)
	}
	for _, e := range edges {
		add(e.Bundle, e.Channel, client.UpgradeRuleSkipRange)
	}

	out := client.UpgradeList{From: client.BundleRef{Name: src.Name, Version: src.Version}, Items: []client.UpgradeEdge{}, Heads: []client.ChannelHead{}}
	ranks := map[string]int{}
	for _, k := range order {
		var b bundleRow
		err := snap.Get(ctx, &b, `SELECT `+bundleColumns+` FROM bundles WHERE package = ? AND name = ?`, pkg.Name, k.bundle)
		if errors.Is(err, sql.ErrNoRows) {
			continue // an entry without a bundle: a recorded validation problem, not an upgrade
		}
		if err != nil {
			return nil, fmt.Errorf("read bundle %q: %w", k.bundle, err)
		}
		ranks[b.Name] = b.Rank
		out.Items = append(out.Items, client.UpgradeEdge{Name: b.Name, Version: b.Version, Channel: k.channel, Rules: rules[k]})
	}
	sort.SliceStable(out.Items, func(i, j int) bool {
		a, b := out.Items[i], out.Items[j]
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
	if err := snap.Select(ctx, &heads, `SELECT c.name AS channel, c.head, b.version FROM channels c
		LEFT JOIN bundles b ON b.package = c.package AND b.name = c.head
		WHERE c.package = ? AND c.head IS NOT NULL AND (c.name = ? OR (? = '' AND c.name IN
			(SELECT channel FROM channel_entries WHERE package = ? AND bundle = ?)))
		ORDER BY c.name`, pkg.Name, channelFilter, channelFilter, pkg.Name, src.Name); err != nil {
		return nil, fmt.Errorf("read channel heads of %q: %w", pkg.Name, err)
	}
	for _, h := range heads {
		out.Heads = append(out.Heads, client.ChannelHead{Channel: h.Channel, Name: h.Head, Version: h.Version.String})
	}
	return out, nil
}
