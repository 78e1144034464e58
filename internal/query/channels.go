package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/store"
)

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

func (c channelRow) summary(defaultChannel string) client.ChannelSummary {
	out := client.ChannelSummary{Name: c.Name, EntryCount: c.EntryCount, IsDefault: c.Name == defaultChannel,
		HeadProblem: c.HeadProblem.String}
	if c.Head.Valid {
		out.Head = client.BundleRef{Name: c.Head.String, Version: c.HeadVersion.String}
	}
	if c.Deprecation.Valid {
		out.Deprecation = client.Deprecation{Message: c.Deprecation.String}
	}
	return out
}

func channelSummaries(ctx context.Context, db *store.Snapshot, pkg packageRow) ([]client.ChannelSummary, error) {
	var rows []channelRow
	if err := db.Select(ctx, &rows, `SELECT `+channelColumns+` WHERE c.package = ? ORDER BY c.name`, pkg.Name); err != nil {
		return nil, fmt.Errorf("list channels of %q: %w", pkg.Name, err)
	}
	out := make([]client.ChannelSummary, 0, len(rows))
	for _, row := range rows {
		out = append(out, row.summary(pkg.DefaultChannel))
	}
	return out, nil
}

func (s *Server) listChannels(r *http.Request, snap *store.Snapshot) (any, error) {
	pkg, err := lookupPackage(r.Context(), snap, chi.URLParam(r, "package"))
	if err != nil {
		return nil, err
	}
	items, err := channelSummaries(r.Context(), snap, pkg)
	if err != nil {
		return nil, err
	}
	return client.ChannelList{Items: items}, nil
}

type entryRow struct {
	ID        int64          `db:"id"`
	Bundle    string         `db:"bundle"`
	Replaces  string         `db:"replaces"`
	SkipRange string         `db:"skip_range"`
	Version   sql.NullString `db:"version"`
}

func (s *Server) getChannel(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	pkg, err := lookupPackage(ctx, snap, chi.URLParam(r, "package"))
	if err != nil {
		return nil, err
	}
	name := chi.URLParam(r, "channel")
	var row channelRow
	err = snap.Get(ctx, &row, `SELECT `+channelColumns+` WHERE c.package = ? AND c.name = ?`, pkg.Name, name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("channel", "package %q has no channel %q", pkg.Name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("read channel %q: %w", name, err)
	}
	sum := row.summary(pkg.DefaultChannel)
	out := client.Channel{Name: row.Name, Package: pkg.Name, Head: sum.Head, HeadProblem: sum.HeadProblem,
		IsDefault: sum.IsDefault, Deprecation: sum.Deprecation, Entries: []client.ChannelEntry{}}

	var entries []entryRow
	if err := snap.Select(ctx, &entries, `SELECT e.id, e.bundle, e.replaces, e.skip_range, b.version
		FROM channel_entries e LEFT JOIN bundles b ON b.package = e.package AND b.name = e.bundle
		WHERE e.package = ? AND e.channel = ? ORDER BY e.position`, pkg.Name, name); err != nil {
		return nil, fmt.Errorf("read entries of channel %q: %w", name, err)
	}
	skips, err := channelSkips(ctx, snap, pkg.Name, name)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		out.Entries = append(out.Entries, client.ChannelEntry{Name: e.Bundle, Version: e.Version.String,
			Replaces: e.Replaces, SkipRange: e.SkipRange, Skips: skips[e.ID]})
	}
	return out, nil
}

// channelSkips returns the skips of every entry of a channel by entry id.
func channelSkips(ctx context.Context, db *store.Snapshot, pkg, channel string) (map[int64][]string, error) {
	var rows []struct {
		EntryID int64  `db:"entry_id"`
		Skip    string `db:"skip"`
	}
	if err := db.Select(ctx, &rows, `SELECT s.entry_id, s.skip FROM channel_entries e
		JOIN channel_entry_skips s ON s.entry_id = e.id
		WHERE e.package = ? AND e.channel = ? ORDER BY e.position, s.rowid`, pkg, channel); err != nil {
		return nil, fmt.Errorf("read skips of channel %q: %w", channel, err)
	}
	out := map[int64][]string{}
	for _, r := range rows {
		out[r.EntryID] = append(out[r.EntryID], r.Skip)
	}
	return out, nil
}
