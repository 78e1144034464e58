package query

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/store"
)

// gvkQuery is a parsed providers request.
type gvkQuery struct {
	group, version, kind string
	latest               bool
}

var kindPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func parseGVK(r *http.Request) (gvkQuery, error) {
	q := r.URL.Query()
	g := gvkQuery{group: q.Get("group"), version: q.Get("version"), kind: q.Get("kind")}
	if g.group != "" {
		if errs := validation.IsDNS1123Subdomain(g.group); len(errs) > 0 {
			return g, badParam("group", "group %q is not an API group (a DNS subdomain, or empty for the core group): %s", g.group, strings.Join(errs, "; "))
		}
	}
	if g.version == "" {
		return g, badParam("version", "version is required, for example v1 or v1beta1")
	}
	if errs := validation.IsDNS1123Label(g.version); len(errs) > 0 {
		return g, badParam("version", "version %q is not an API version (for example v1 or v1beta1): %s", g.version, strings.Join(errs, "; "))
	}
	if g.kind == "" {
		return g, badParam("kind", "kind is required, for example Deployment")
	}
	if !kindPattern.MatchString(g.kind) {
		return g, badParam("kind", "kind %q is not a Kind (letters and digits, starting with a letter)", g.kind)
	}
	if v := q.Get("latest"); q.Has("latest") {
		latest, err := strconv.ParseBool(v)
		if err != nil {
			return g, badParam("latest", "latest must be true or false, got %q", v)
		}
		g.latest = latest
	}
	return g, nil
}

// providers lists the bundles of one catalog that provide a GVK, by package
// and newest version first, each with its channels, in one query. Whether a
// channel is its package's default and which bundle heads it come from
// channelHeads, kept in memory: joining channels and packages for each row
// cost most of the answer's time.
func providers(ctx context.Context, db *store.Snapshot, catalog string, g gvkQuery) ([]client.Provider, error) {
	heads, err := channelHeads(ctx, db)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Package string         `db:"package"`
		Name    string         `db:"name"`
		Version string         `db:"version"`
		Channel sql.NullString `db:"channel"`
	}
	if err := db.Select(ctx, &rows, `SELECT b.package, b.name, b.version, e.channel
		FROM provided_gvks g JOIN bundles b ON b.id = g.bundle_id
		LEFT JOIN channel_entries e ON e.package = b.package AND e.bundle = b.name
		WHERE g.kind = ? AND g.grp = ? AND g.version = ?
		ORDER BY b.package, b.version_rank DESC, b.name, e.channel`, g.kind, g.group, g.version); err != nil {
		return nil, fmt.Errorf("find providers of %s/%s %s: %w", g.group, g.version, g.kind, err)
	}
	out := []client.Provider{}
	var cur *client.Provider
	head := false
	flush := func() {
		if cur != nil && (!g.latest || head) {
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
func channelHeads(ctx context.Context, db *store.Snapshot) (map[string]packageHeads, error) {
	v, err := db.Memo("channelHeads", func() (any, error) {
		var rows []struct {
			Package        string         `db:"package"`
			Name           string         `db:"name"`
			Head           sql.NullString `db:"head"`
			DefaultChannel sql.NullString `db:"default_channel"`
		}
		if err := db.Select(ctx, &rows, `SELECT c.package, c.name, c.head, p.default_channel
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
	if err != nil {
		return nil, err
	}
	return v.(map[string]packageHeads), nil
}

func (s *Server) listProviders(r *http.Request, snap *store.Snapshot) (any, error) {
	g, err := parseGVK(r)
	if err != nil {
		return nil, err
	}
	items, err := providers(r.Context(), snap, chi.URLParam(r, "catalog"), g)
	if err != nil {
		return nil, err
	}
	return client.ProviderList{Items: items}, nil
}

// listAllProviders asks every serving catalog, higher priority first, then
// by catalog name. Catalogs without an index are left out.
func (s *Server) listAllProviders(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query(), []string{"group", "version", "kind", "latest"}); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	g, err := parseGVK(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := client.ProviderList{Items: []client.Provider{}}
	for _, c := range s.cats.List() {
		if c.State == catalogs.Unavailable {
			continue
		}
		snap, err := s.acquireIfIndexed(c)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if snap == nil {
			continue
		}
		items, err := providers(r.Context(), snap, c.Name, g)
		snap.Release()
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		out.Items = append(out.Items, items...)
	}
	s.writeComputed(w, r, out)
}
