package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/Masterminds/semver/v3"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

func parseConstraint(v string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(v)
	if err != nil {
		return nil, badParam("version", "version %q is not a semver constraint (for example \">=1.2.0 <2.0.0\" or \"~1.4\"): %v", v, err)
	}
	return c, nil
}

func (s *Server) listBundles(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	pkg, err := lookupPackage(ctx, snap, pathParam(r, "package"))
	if err != nil {
		return nil, err
	}
	// Tokens are bound to the package's digest, not the catalog's: the
	// answer depends on the package only (see packageJSON), and so does a
	// token's meaning.
	pg, err := parsePage(r, pkg.Digest)
	if err != nil {
		return nil, err
	}
	var constraint *semver.Constraints
	if q.Has("version") {
		if constraint, err = parseConstraint(q.Get("version")); err != nil {
			return nil, err
		}
	}
	// Ranks run from 0 (oldest); newest first means descending, resuming
	// below the last rank of the previous page.
	below := int64(1) << 62
	if pg.after != "" {
		if below, err = strconv.ParseInt(pg.after, 10, 64); err != nil {
			return nil, badParam("continue", "continue token does not belong to a bundle list; start again without continue")
		}
	}
	// Without a version filter one row past the page tells whether there is
	// a next page; with one, rows are filtered here, so all are read (-1).
	rowLimit := pg.limit + 1
	if constraint != nil {
		rowLimit = -1
	}
	channel := q.Get("channel")
	if q.Has("channel") {
		exists, err := snap.Catalog.HasChannel(ctx, pkg.Name, channel)
		if err != nil {
			return nil, err
		}
		if !exists {
			return nil, notFound("channel", "package %q has no channel %q", pkg.Name, channel)
		}
	}
	rows, err := snap.Catalog.Bundles(ctx, pkg.Name, channel, below, rowLimit)
	if err != nil {
		return nil, err
	}

	out := catalogapi.BundleList{}
	page := make([]query.Bundle, 0, min(pg.limit, len(rows)))
	for _, b := range rows {
		if constraint != nil {
			v, err := semver.NewVersion(b.Version)
			if err != nil || !constraint.Check(v) {
				continue
			}
		}
		if len(page) == pg.limit {
			out.Continue = continueToken(pkg.Digest, strconv.Itoa(page[len(page)-1].Rank))
			break
		}
		page = append(page, b)
	}
	summaries, err := snap.Catalog.BundleSummaries(ctx, pkg.Name, page)
	if err != nil {
		return nil, err
	}
	out.Items = convertAll(summaries, apiBundleSummary)
	return out, nil
}

func (s *Server) getBundle(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	pkg, err := lookupPackage(ctx, snap, pathParam(r, "package"))
	if err != nil {
		return nil, err
	}
	name := pathParam(r, "bundle")
	b, err := snap.Catalog.BundleDetail(ctx, pkg.Name, name)
	if errors.Is(err, query.ErrNotFound) {
		return nil, notFound("bundle", "package %q has no bundle %q", pkg.Name, name)
	}
	if err != nil {
		return nil, err
	}
	return apiBundle(b), nil
}
