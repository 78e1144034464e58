package query

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-chi/chi/v5"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
)

const (
	defaultLimit = 100
	maxLimit     = 1000
)

// page is a request's pagination: how many items, and where to resume.
type page struct {
	limit int
	// after is the key of the last item of the previous page ("" at the start).
	after string
}

// pageToken is what a continue token holds. Binding it to the content digest
// means a token never resumes a list in a different index, where the keys
// may mean something else.
type pageToken struct {
	Digest string `json:"d"`
	After  string `json:"a"`
}

func parsePage(r *http.Request, digest string) (page, error) {
	p := page{limit: defaultLimit}
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" || q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return p, badParam("limit", "limit must be a whole number from 1 to %d, got %q", maxLimit, v)
		}
		p.limit = n
	}
	if v := q.Get("continue"); v != "" {
		raw, err := base64.RawURLEncoding.DecodeString(v)
		var tok pageToken
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil || tok.After == "" {
			return p, badParam("continue", "continue token %q is not one this server gave out; pass the token from the previous page unchanged", v)
		}
		if tok.Digest != shortDigest(digest) {
			return p, badParam("continue", "continue token belongs to an older index of this catalog; start the list again without continue")
		}
		p.after = tok.After
	}
	return p, nil
}

func continueToken(digest, after string) string {
	raw, _ := json.Marshal(pageToken{Digest: shortDigest(digest), After: after})
	return base64.RawURLEncoding.EncodeToString(raw)
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 16 {
		return d[:16]
	}
	return d
}

// display decodes what the index stored for listing a package.
type display index.Display

func decodeDisplay(raw sql.NullString) display {
	var d display
	if raw.Valid {
		_ = json.Unmarshal([]byte(raw.String), &d) // written by the index build; empty when absent
	}
	return d
}

func (d display) links() []client.Link {
	var out []client.Link
	for _, l := range d.Links {
		out = append(out, client.Link{Name: l.Name, Url: l.URL})
	}
	return out
}

func (d display) maintainers() []client.Maintainer {
	var out []client.Maintainer
	for _, mt := range d.Maintainers {
		out = append(out, client.Maintainer{Name: mt.Name, Email: mt.Email})
	}
	return out
}

type packageRow struct {
	Name           string         `db:"name"`
	DefaultChannel string         `db:"default_channel"`
	Description    string         `db:"description"`
	HasIcon        bool           `db:"has_icon"`
	Display        sql.NullString `db:"display"`
}

// deprecation returns the deprecation message of a package (schema
// olm.package, empty name), a channel or a bundle, if the catalog has one.
func deprecation(ctx context.Context, db *store.Snapshot, pkg, schema, name string) (client.Deprecation, error) {
	var msg string
	err := db.Get(ctx, &msg, `SELECT message FROM deprecations WHERE package = ? AND schema = ? AND name = ? LIMIT 1`, pkg, schema, name)
	if errors.Is(err, sql.ErrNoRows) {
		return client.Deprecation{}, nil
	}
	if err != nil {
		return client.Deprecation{}, fmt.Errorf("read deprecation of %s %q: %w", schema, name, err)
	}
	return client.Deprecation{Message: msg}, nil
}

// ftsQuery turns free text into an FTS5 query that cannot be a syntax
// error: every word becomes a quoted prefix term, and all must match.
func ftsQuery(q string) string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	terms := make([]string, 0, len(words))
	for _, w := range words {
		terms = append(terms, `"`+w+`"*`)
	}
	return strings.Join(terms, " ")
}

func (s *Server) listPackages(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	pg, err := parsePage(r, snap.Info.Digest)
	if err != nil {
		return nil, err
	}
	all, err := packageSummaries(ctx, snap)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	nameFilter := q.Get("name")
	out := client.PackageList{Items: []client.PackageSummary{}}
	if text := q.Get("q"); q.Has("q") {
		match := ftsQuery(text)
		if match == "" {
			return nil, badParam("q", "q must contain at least one word to search for, got %q", text)
		}
		// Ranked results page by position: the order is stable for one index.
		offset := 0
		if pg.after != "" {
			if offset, err = strconv.Atoi(pg.after); err != nil || offset < 0 {
				return nil, badParam("continue", "continue token does not belong to a search; start again without continue")
			}
		}
		var names []string
		err = snap.Select(ctx, &names, `SELECT s.name FROM package_search s JOIN packages p ON p.name = s.name
			WHERE package_search MATCH ? AND instr(p.name, ?) > 0 ORDER BY s.rank, p.name LIMIT ? OFFSET ?`,
			match, nameFilter, pg.limit+1, offset)
		if err != nil {
			return nil, fmt.Errorf("search packages: %w", err)
		}
		if len(names) > pg.limit {
			names = names[:pg.limit]
			out.Continue = continueToken(snap.Info.Digest, strconv.Itoa(offset+pg.limit))
		}
		for _, name := range names {
			if i, ok := all.byName[name]; ok {
				out.Items = append(out.Items, all.items[i])
			}
		}
		return out, nil
	}
	start, _ := slices.BinarySearchFunc(all.items, pg.after, func(p client.PackageSummary, after string) int {
		return strings.Compare(p.Name, after)
	})
	for _, p := range all.items[start:] {
		if p.Name <= pg.after || !strings.Contains(p.Name, nameFilter) {
			continue
		}
		if len(out.Items) == pg.limit {
			out.Continue = continueToken(snap.Info.Digest, out.Items[len(out.Items)-1].Name)
			break
		}
		out.Items = append(out.Items, p)
	}
	return out, nil
}

// packageIndex is every package's list entry, by name.
type packageIndex struct {
	items  []client.PackageSummary
	byName map[string]int
}

// packageSummaries returns every package's list entry, read in three
// queries once per index file (a file never changes) and kept: a page of
// packages is then a slice of it, where reading and decoding the rows of
// each page cost milliseconds. It holds what a console lists of each
// package, a few hundred bytes each.
func packageSummaries(ctx context.Context, snap *store.Snapshot) (*packageIndex, error) {
	v, err := snap.Memo("packageSummaries", func() (any, error) {
		var rows []packageRow
		if err := snap.Select(ctx, &rows, `SELECT name, default_channel, display FROM packages ORDER BY name`); err != nil {
			return nil, fmt.Errorf("list packages: %w", err)
		}
		var chRows []struct {
			Package string `db:"package"`
			Name    string `db:"name"`
		}
		if err := snap.Select(ctx, &chRows, `SELECT package, name FROM channels ORDER BY package, name`); err != nil {
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
		if err := snap.Select(ctx, &depRows, `SELECT package, message FROM deprecations WHERE schema = 'olm.package' AND name = '' ORDER BY rowid`); err != nil {
			return nil, fmt.Errorf("read deprecations: %w", err)
		}
		deprecations := map[string]client.Deprecation{}
		for _, r := range depRows {
			deprecations[r.Package] = client.Deprecation{Message: r.Message}
		}
		idx := &packageIndex{items: make([]client.PackageSummary, 0, len(rows)), byName: make(map[string]int, len(rows))}
		for _, row := range rows {
			m := decodeDisplay(row.Display)
			chs := channels[row.Name]
			if chs == nil {
				chs = []string{}
			}
			idx.byName[row.Name] = len(idx.items)
			idx.items = append(idx.items, client.PackageSummary{
				Name: row.Name, DefaultChannel: row.DefaultChannel, Channels: chs, Deprecation: deprecations[row.Name],
				DisplayName: m.DisplayName, Provider: m.Provider, Keywords: m.Keywords, Maturity: m.Maturity,
				ShortDescription: m.ShortDescription, Links: m.links(), Maintainers: m.maintainers(),
			})
		}
		return idx, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*packageIndex), nil
}

// lookupPackage reads the {package} of a request, or answers 404.
func lookupPackage(ctx context.Context, db *store.Snapshot, name string) (packageRow, error) {
	var row packageRow
	err := db.Get(ctx, &row, `SELECT name, default_channel, description, display,
		icon_data IS NOT NULL AND length(icon_data) > 0 AS has_icon FROM packages WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return row, notFound("package", "no package named %q in this catalog", name)
	}
	if err != nil {
		return row, fmt.Errorf("read package %q: %w", name, err)
	}
	return row, nil
}

func (s *Server) getPackage(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	row, err := lookupPackage(ctx, snap, chi.URLParam(r, "package"))
	if err != nil {
		return nil, err
	}
	channels, err := channelSummaries(ctx, snap, row)
	if err != nil {
		return nil, err
	}
	dep, err := deprecation(ctx, snap, row.Name, "olm.package", "")
	if err != nil {
		return nil, err
	}
	problems := []client.ValidationProblem{}
	if err := snap.Select(ctx, &problems, `SELECT package, message FROM problems WHERE package = ? ORDER BY id`, row.Name); err != nil {
		return nil, fmt.Errorf("read problems of %q: %w", row.Name, err)
	}
	m := decodeDisplay(row.Display)
	return client.Package{
		Name: row.Name, DefaultChannel: row.DefaultChannel, Description: row.Description, HasIcon: row.HasIcon,
		Channels: channels, Deprecation: dep, Problems: problems,
		DisplayName: m.DisplayName, Provider: m.Provider, Keywords: m.Keywords, Maturity: m.Maturity,
		ShortDescription: m.ShortDescription, Links: m.links(), Maintainers: m.maintainers(),
	}, nil
}

func (s *Server) getIcon(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
	name := chi.URLParam(r, "package")
	etag := requestETag(snap.Info.Digest, r)
	var icon struct {
		Data      []byte `db:"icon_data"`
		MediaType string `db:"icon_media_type"`
	}
	err := snap.Get(r.Context(), &icon, `SELECT icon_data, icon_media_type FROM packages WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("package", "no package named %q in this catalog", name)
	}
	if err != nil {
		return fmt.Errorf("read icon of %q: %w", name, err)
	}
	if len(icon.Data) == 0 {
		return notFound("package", "package %q has no icon", name)
	}
	if notModified(w, r, etag, snap.Info.BuiltAt) {
		return nil
	}
	mediaType := icon.MediaType
	if mediaType == "" {
		mediaType = http.DetectContentType(icon.Data)
	}
	// Icons are small and mostly compressed already, so they are sent as they are.
	setValidators(w, representationETag(etag, acceptsGzip(r)), snap.Info.BuiltAt)
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(icon.Data)))
	_, err = w.Write(icon.Data)
	return err
}
