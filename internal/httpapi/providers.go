package httpapi

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

// gvkQuery is a parsed providers request.
type gvkQuery struct {
	query.GVK
	latest bool
}

var kindPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func parseGVK(r *http.Request) (gvkQuery, error) {
	q := r.URL.Query()
	g := gvkQuery{GVK: query.GVK{Group: q.Get("group"), Version: q.Get("version"), Kind: q.Get("kind")}}
	if g.Group != "" {
		if errs := validation.IsDNS1123Subdomain(g.Group); len(errs) > 0 {
			return g, badParam("group", "group %q is not an API group (a DNS subdomain, or empty for the core group): %s", g.Group, strings.Join(errs, "; "))
		}
	}
	if g.Version == "" {
		return g, badParam("version", "version is required, for example v1 or v1beta1")
	}
	if errs := validation.IsDNS1123Label(g.Version); len(errs) > 0 {
		return g, badParam("version", "version %q is not an API version (for example v1 or v1beta1): %s", g.Version, strings.Join(errs, "; "))
	}
	if g.Kind == "" {
		return g, badParam("kind", "kind is required, for example Deployment")
	}
	if !kindPattern.MatchString(g.Kind) {
		return g, badParam("kind", "kind %q is not a Kind (letters and digits, starting with a letter)", g.Kind)
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

func (s *Server) listProviders(r *http.Request, snap *store.Snapshot) (any, error) {
	g, err := parseGVK(r)
	if err != nil {
		return nil, err
	}
	providers, err := snap.Catalog.Providers(r.Context(), g.GVK, g.latest)
	if err != nil {
		return nil, err
	}
	return catalogapi.ProviderList{Items: apiProviders(pathParam(r, "catalog"), providers)}, nil
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
	out := catalogapi.ProviderList{Items: []catalogapi.Provider{}}
	for _, c := range s.cats.List() {
		if c.Unavailable {
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
		providers, err := snap.Catalog.Providers(r.Context(), g.GVK, g.latest)
		snap.Release()
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		out.Items = append(out.Items, apiProviders(c.Name, providers)...)
	}
	s.writeComputed(w, r, out)
}
