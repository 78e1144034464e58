package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

// knownSchemas are the schemas the index interprets; others are kept as blobs.
var knownSchemas = map[string]bool{
	declcfg.SchemaPackage: true, declcfg.SchemaChannel: true, declcfg.SchemaBundle: true, declcfg.SchemaDeprecation: true,
}

// summary describes one catalog; snap is nil when it has no index.
func summary(ctx context.Context, c catalogs.Catalog, snap *store.Snapshot) (catalogapi.CatalogSummary, error) {
	if snap == nil {
		return apiCatalogSummary(c, nil, query.Counts{}), nil
	}
	counts, err := snap.Catalog.Counts(ctx)
	if err != nil {
		return catalogapi.CatalogSummary{}, fmt.Errorf("count catalog %q: %w", c.Name, err)
	}
	return apiCatalogSummary(c, &snap.Info, counts), nil
}

// acquireIfIndexed returns the catalog's snapshot, or nil when it has none
// (Unavailable catalogs are reported without reading their index).
func (s *Server) acquireIfIndexed(c catalogs.Catalog) (*store.Snapshot, error) {
	if c.Unavailable {
		return nil, nil
	}
	snap, err := s.idx.Acquire(c.Name)
	if errors.Is(err, store.ErrNotIndexed) {
		return nil, nil
	}
	return snap, err
}

func (s *Server) listCatalogs(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query(), nil); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	list := catalogapi.CatalogList{Items: []catalogapi.CatalogSummary{}}
	for _, c := range s.cats.List() {
		snap, err := s.acquireIfIndexed(c)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		sum, err := summary(r.Context(), c, snap)
		if snap != nil {
			snap.Release()
		}
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		list.Items = append(list.Items, sum)
	}
	s.writeComputed(w, r, list)
}

// writeComputed answers v with an ETag derived from the answer itself,
// encoded once for both.
func (s *Server) writeComputed(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		err = fmt.Errorf("encode answer: %w", err)
	} else if etag := bodyETag(body); !notModified(w, r, etag, time.Time{}) {
		err = s.writeBody(w, r, body, etag, time.Time{})
	}
	if err != nil {
		s.writeProblem(w, r, err)
	}
}

func (s *Server) getCatalog(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query(), nil); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	name := pathParam(r, "catalog")
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		s.writeProblem(w, r, badParam("catalog", "catalog name %q is not a DNS-1123 subdomain: %s", name, strings.Join(errs, "; ")))
		return
	}
	c, err := s.lookupCatalog(name)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	snap, err := s.acquireIfIndexed(c)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if snap != nil {
		defer snap.Release()
	}
	detail, err := catalogDetail(r.Context(), c, snap)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.writeComputed(w, r, detail)
}

// catalogDetail describes one catalog with the schemas and problems of its
// index; snap is nil when it has none.
func catalogDetail(ctx context.Context, c catalogs.Catalog, snap *store.Snapshot) (catalogapi.CatalogDetail, error) {
	sum, err := summary(ctx, c, snap)
	if err != nil {
		return catalogapi.CatalogDetail{}, err
	}
	if snap == nil {
		return apiCatalogDetail(sum, c.NotPrebuilt, nil, nil, nil), nil
	}
	schemas, err := snap.Catalog.SchemaCounts(ctx)
	if err != nil {
		return catalogapi.CatalogDetail{}, fmt.Errorf("count schemas of %q: %w", c.Name, err)
	}
	problems, err := snap.Catalog.Problems(ctx, "")
	if err != nil {
		return catalogapi.CatalogDetail{}, fmt.Errorf("read problems of %q: %w", c.Name, err)
	}
	return apiCatalogDetail(sum, c.NotPrebuilt, &snap.Info, schemas, problems), nil
}
