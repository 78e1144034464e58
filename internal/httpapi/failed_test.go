package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogs"
)

// TestFailedCatalogAnswers: every answer about a catalog with no index
// says whether waiting helps. A Pending one (not indexed yet, or a failure
// a retry may get past) answers its data endpoints 503 with Retry-After; a
// Failed one (its content cannot index) 503 without Retry-After, as a
// problem of its own type whose detail gives the reason; one whose newer
// content failed but whose index is live keeps answering. Every answer
// goes through the harness's check against openapi.yaml.
func TestFailedCatalogAnswers(t *testing.T) {
	const reason = `parse architecture.md:3:1: invalid catalog (no olm.package, olm.channel or olm.bundle blob was found before it)`
	h := newHarness(t)
	h.add("stale", demoDir, 0)
	h.reg.Update("stale", func(c *catalogs.Catalog) { c.LastError, c.ContentFailed = reason, true })
	h.reg.Put(catalogs.Catalog{Name: "broken", Source: "docs", LastError: reason, ContentFailed: true})
	h.reg.Put(catalogs.Catalog{Name: "waiting", Source: "example.com/waiting:latest", LastError: "dial tcp 127.0.0.1:5000: connection refused"})

	for _, tc := range []struct {
		catalog    string
		wantState  client.CatalogState
		wantStatus int
		wantType   string
		// wantRetry is whether a 503 carries Retry-After.
		wantRetry bool
		// wantDetail is what the 503's detail must say.
		wantDetail string
	}{
		{"broken", client.CatalogStateFailed, http.StatusServiceUnavailable, "/problems/catalog-failed", false, reason},
		{"waiting", client.CatalogStatePending, http.StatusServiceUnavailable, "/problems/catalog-not-ready", true, "connection refused"},
		{"stale", client.CatalogStateServing, http.StatusOK, "", false, ""},
	} {
		t.Run(tc.catalog, func(t *testing.T) {
			var detail client.CatalogDetail
			decodeJSON(t, h.get("/catalogs/"+tc.catalog), &detail)
			if detail.State != tc.wantState || detail.LastError == "" {
				t.Errorf("GET /catalogs/%s: state %s, lastError %q; want %s with the error", tc.catalog, detail.State, detail.LastError, tc.wantState)
			}
			var list client.CatalogList
			decodeJSON(t, h.get("/catalogs"), &list)
			for _, item := range list.Items {
				if item.Name == tc.catalog && item.State != tc.wantState {
					t.Errorf("GET /catalogs: %s is %s, want %s", tc.catalog, item.State, tc.wantState)
				}
			}

			for _, path := range []string{"/packages", "/api/v1/all", "/packages/aurora-cache/channels"} {
				resp := h.get("/catalogs/" + tc.catalog + path)
				if resp.StatusCode != tc.wantStatus {
					t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, tc.wantStatus)
				}
				if tc.wantType == "" {
					continue
				}
				p := decodeProblem(t, resp)
				if p.Type != tc.wantType || p.Parameter != "catalog" || !strings.Contains(p.Detail, tc.wantDetail) || !strings.Contains(p.Detail, tc.catalog) {
					t.Errorf("GET %s: %+v; want type %s naming the catalog and saying %q", path, p, tc.wantType, tc.wantDetail)
				}
				if got := resp.Header.Get("Retry-After") != ""; got != tc.wantRetry {
					t.Errorf("GET %s: Retry-After %q, want one: %v", path, resp.Header.Get("Retry-After"), tc.wantRetry)
				}
			}
		})
	}

	// /resolve leaves out a Failed catalog as it does a Pending one: there
	// is no index to read.
	var res client.Resolution
	decodeJSON(t, h.get("/resolve?package=aurora-cache&channels=stable"), &res)
	outcomes := map[string]client.ResolveCatalogOutcome{}
	for _, c := range res.Catalogs {
		outcomes[c.Name] = c.Outcome
	}
	if outcomes["broken"] != client.ResolveCatalogOutcomeNotIndexed || outcomes["waiting"] != client.ResolveCatalogOutcomeNotIndexed || outcomes["stale"] != client.ResolveCatalogOutcomeChosen {
		t.Errorf("resolve outcomes %v; want broken and waiting NotIndexed, stale Chosen", outcomes)
	}
}

func decodeJSON(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", resp.Request.URL.Path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", resp.Request.URL.Path, err)
	}
}
