package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/query"
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
	all, err := snap.Catalog.PackageSummaries(ctx)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	nameFilter := q.Get("name")
	out := catalogapi.PackageList{Items: make([]catalogapi.PackageSummary, 0, min(pg.limit, len(all.Items)))}
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
		names, err := snap.Catalog.SearchPackages(ctx, match, nameFilter, pg.limit+1, offset)
		if err != nil {
			return nil, err
		}
		if len(names) > pg.limit {
			names = names[:pg.limit]
			out.Continue = continueToken(snap.Info.Digest, strconv.Itoa(offset+pg.limit))
		}
		for _, name := range names {
			if p, ok := all.Get(name); ok {
				out.Items = append(out.Items, apiPackageSummary(p))
			}
		}
		return out, nil
	}
	start, _ := slices.BinarySearchFunc(all.Items, pg.after, func(p query.PackageSummary, after string) int {
		return strings.Compare(p.Name, after)
	})
	for _, p := range all.Items[start:] {
		if p.Name <= pg.after || !strings.Contains(p.Name, nameFilter) {
			continue
		}
		if len(out.Items) == pg.limit {
			out.Continue = continueToken(snap.Info.Digest, out.Items[len(out.Items)-1].Name)
			break
		}
		out.Items = append(out.Items, apiPackageSummary(p))
	}
	return out, nil
}

// lookupPackage reads the {package} of a request, or answers 404.
func lookupPackage(ctx context.Context, snap *store.Snapshot, name string) (query.Package, error) {
	p, err := snap.Catalog.Package(ctx, name)
	if errors.Is(err, query.ErrNotFound) {
		return p, notFound("package", "no package named %q in this catalog", name)
	}
	return p, err
}

func (s *Server) getPackage(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	pkg, err := lookupPackage(ctx, snap, pathParam(r, "package"))
	if err != nil {
		return nil, err
	}
	channels, err := snap.Catalog.Channels(ctx, pkg)
	if err != nil {
		return nil, err
	}
	dep, err := snap.Catalog.Deprecation(ctx, pkg.Name, "olm.package", "")
	if err != nil {
		return nil, err
	}
	problems, err := snap.Catalog.Problems(ctx, pkg.Name)
	if err != nil {
		return nil, err
	}
	return apiPackage(pkg, channels, dep, problems), nil
}

func (s *Server) getIcon(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
	name := pathParam(r, "package")
	etag, modified, err := packageETag(r.Context(), snap, name, r)
	if err != nil {
		return err
	}
	data, mediaType, err := snap.Catalog.Icon(r.Context(), name)
	if errors.Is(err, query.ErrNotFound) {
		return notFound("package", "no package named %q in this catalog", name)
	}
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return notFound("package", "package %q has no icon", name)
	}
	if notModified(w, r, etag, modified) {
		return nil
	}
	if mediaType == "" {
		mediaType = http.DetectContentType(data)
	}
	// Icons are small and mostly compressed already, so they are sent as they are.
	setValidators(w, representationETag(etag, acceptsGzip(r)), modified)
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, err = w.Write(data)
	return err
}
