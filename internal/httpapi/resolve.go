package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/query"
)

// resolveParams are the parameters of both resolve endpoints; /resolve
// also takes catalogSelector.
var resolveParams = []string{"package", "channels", "version", "installed", "installedBundle", "installedRelease", "bundleReleaseSupport", "upgradeConstraintPolicy"}

// checkResolveParams refuses unknown parameters, and upgradeEdges with
// why it went: a client that asked for semver edges must learn that no
// cluster follows them any more, not be told the parameter is unknown.
// Empty is absent, as for the other parameters (generated clients send
// unset parameters empty).
func checkResolveParams(q url.Values, known []string) error {
	if q.Get("upgradeEdges") != "" {
		return badParam("upgradeEdges", "upgradeEdges was removed: operator-controller removed its ForceSemverUpgradeConstraints "+
			"gate (operator-controller #1638, January 2025), so every cluster follows the channels' replaces, skips and skipRange, "+
			"which /resolve always does; drop the parameter")
	}
	q.Del("upgradeEdges")
	return checkParams(q, known)
}

// parseResolve reads a resolve request's parameters; bundleReleaseSupport
// defaults to the server's.
func (s *Server) parseResolve(r *http.Request) (query.ResolveRequest, error) {
	q := r.URL.Query()
	pkg := q.Get("package")
	if pkg == "" {
		return query.ResolveRequest{}, badParam("package", "package is required: the package a ClusterExtension would install")
	}
	var channels []string
	for _, v := range q["channels"] {
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c == "" {
				return query.ResolveRequest{}, badParam("channels", "channels %q holds an empty channel name", v)
			} else if !slices.Contains(channels, c) {
				channels = append(channels, c)
			}
		}
	}
	var selfCertified bool
	switch policy := q.Get("upgradeConstraintPolicy"); policy {
	case "", string(catalogapi.UpgradeConstraintPolicyCatalogProvided):
	case string(catalogapi.UpgradeConstraintPolicySelfCertified):
		selfCertified = true
	default:
		return query.ResolveRequest{}, badParam("upgradeConstraintPolicy", "upgradeConstraintPolicy %q is not CatalogProvided or SelfCertified", policy)
	}
	release := s.bundleRelease
	if v := q.Get("bundleReleaseSupport"); v != "" {
		var err error
		if release, err = strconv.ParseBool(v); err != nil {
			return query.ResolveRequest{}, badParam("bundleReleaseSupport", "bundleReleaseSupport %q is not true or false", v)
		}
	}
	// Present, even empty, as an explicit empty release is one.
	var installedRelease *string
	if q.Has("installedRelease") {
		v := q.Get("installedRelease")
		installedRelease = &v
	}
	req, err := query.NewResolveRequest(query.ResolveParams{InstalledRelease: installedRelease, Package: pkg, Channels: channels, Version: q.Get("version"),
		Installed: q.Get("installed"), InstalledBundle: q.Get("installedBundle"), SelfCertified: selfCertified, BundleRelease: release})
	var perr *query.ResolveParamError
	if errors.As(err, &perr) {
		return req, badParam(perr.Param, "%s", perr.Error())
	}
	return req, err
}

// resolveAll answers /resolve over every catalog the selector matches,
// higher priority first, then by name.
func (s *Server) resolveAll(w http.ResponseWriter, r *http.Request) {
	if err := checkResolveParams(r.URL.Query(), append(resolveParams, "catalogSelector")); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	req, err := s.parseResolve(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	selector, err := labels.Parse(r.URL.Query().Get("catalogSelector"))
	if err != nil {
		s.writeProblem(w, r, badParam("catalogSelector", "catalogSelector is not a label selector: %v", err))
		return
	}
	var offers []query.CatalogCandidates
	var skipped []catalogapi.ResolveCatalog
	for _, c := range s.cats.List() {
		if !selector.Matches(labels.Set(c.Labels)) {
			skipped = append(skipped, skippedCatalog(c, catalogapi.ResolveCatalogOutcomeNotSelected))
			continue
		}
		if c.Unavailable {
			skipped = append(skipped, skippedCatalog(c, catalogapi.ResolveCatalogOutcomeUnavailable))
			continue
		}
		offer, indexed, err := s.resolveIn(r, c, req)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if !indexed {
			skipped = append(skipped, skippedCatalog(c, catalogapi.ResolveCatalogOutcomeNotIndexed))
			continue
		}
		offers = append(offers, offer)
	}
	s.writeResolution(w, r, req, query.Choose(req, offers), skipped)
}

// resolveIn reads a catalog's candidates; indexed is false when the
// catalog has no index to read.
func (s *Server) resolveIn(r *http.Request, c catalogs.Catalog, req query.ResolveRequest) (query.CatalogCandidates, bool, error) {
	snap, err := s.acquireIfIndexed(c)
	if err != nil || snap == nil {
		return query.CatalogCandidates{}, false, err
	}
	defer snap.Release()
	pc, err := snap.Catalog.ResolvePackage(r.Context(), req)
	if err != nil {
		return query.CatalogCandidates{}, false, err
	}
	return query.CatalogCandidates{Catalog: c.Name, Priority: c.Priority, PackageCandidates: pc}, true, nil
}

// resolveOne answers /catalogs/{catalog}/resolve: resolution as if the
// catalog were the only one.
func (s *Server) resolveOne(w http.ResponseWriter, r *http.Request) {
	if err := checkResolveParams(r.URL.Query(), resolveParams); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	req, err := s.parseResolve(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	snap, err := s.openCatalog(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	c, _ := s.cats.Get(pathParam(r, "catalog"))
	pc, err := snap.Catalog.ResolvePackage(r.Context(), req)
	snap.Release()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	offer := query.CatalogCandidates{Catalog: c.Name, Priority: c.Priority, PackageCandidates: pc}
	s.writeResolution(w, r, req, query.Choose(req, []query.CatalogCandidates{offer}), nil)
}

// writeResolution answers a resolution: 200 with the bundle, or a problem
// document carrying the resolution, 404 when no bundle is found, 409 when
// catalogs tie and 422 when the chosen bundle declares a dependency. The
// catalogs not considered follow those that were.
func (s *Server) writeResolution(w http.ResponseWriter, r *http.Request, req query.ResolveRequest, res query.Resolution, skipped []catalogapi.ResolveCatalog) {
	out := apiResolution(req, res)
	out.Catalogs = append(out.Catalogs, skipped...)
	if _, catalog := res.Bundle(); catalog != "" {
		s.writeComputed(w, r, out)
		return
	}
	p := &problem{status: http.StatusNotFound, typ: "no-bundle", detail: res.Error, members: out}
	switch {
	case res.Ambiguous:
		p.status, p.typ = http.StatusConflict, "ambiguous-resolution"
	case res.Refused:
		p.status, p.typ = http.StatusUnprocessableEntity, "unsupported-dependency"
	}
	s.writeProblem(w, r, p)
}

// skippedCatalog lists a catalog resolution did not consider.
func skippedCatalog(c catalogs.Catalog, why catalogapi.ResolveCatalogOutcome) catalogapi.ResolveCatalog {
	return catalogapi.ResolveCatalog{Name: c.Name, Priority: c.Priority, Outcome: why, Candidates: []catalogapi.ResolveCandidate{}}
}
