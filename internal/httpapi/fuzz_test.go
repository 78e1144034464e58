package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
)

// FuzzRequestParams sends arbitrary parameter values to every endpoint that
// takes them: bad input must be a 4xx problem document, never a 500.
func FuzzRequestParams(f *testing.F) {
	indexes, err := store.New(f.TempDir(), logr.Discard())
	if err != nil {
		f.Fatal(err)
	}
	defer indexes.Close()
	if _, _, _, err := indexes.Update(context.Background(), "demo", index.Content{FS: os.DirFS(demoDir), Digest: "sha256:demo"}); err != nil {
		f.Fatal(err)
	}
	reg := catalogs.NewTable()
	reg.MarkLoaded()
	reg.Put(catalogs.Catalog{Name: "demo"})
	srv := New(reg, indexes, Options{Log: logr.Discard()})

	for _, seed := range [][2]string{
		{"aurora-cache.v1.1.0", ">=1.0.0 <2.0.0"}, {"1.0.1", "~1.2"}, {"2.0.0-rc.1", "^1 || >=2.0.0-0"},
		{"", ""}, {"eyJkIjoiIiwiYSI6IjEifQ", "*"}, {"\x00", ">=\xff"}, {"NOT", "1.2.3 - 1.4"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		paths := []string{
			"/catalogs/demo/packages/aurora-cache/upgrades?from=" + url.QueryEscape(a) + "&channel=" + url.QueryEscape(b),
			"/catalogs/demo/packages/aurora-cache/bundles?version=" + url.QueryEscape(b) + "&continue=" + url.QueryEscape(a),
			"/catalogs/demo/packages?q=" + url.QueryEscape(a) + "&name=" + url.QueryEscape(b) + "&limit=" + url.QueryEscape(a),
			"/catalogs/demo/packages?continue=" + url.QueryEscape(a),
			"/catalogs/demo/providers?group=" + url.QueryEscape(a) + "&version=" + url.QueryEscape(b) + "&kind=" + url.QueryEscape(a) + "&latest=" + url.QueryEscape(b),
			"/catalogs/demo/api/v1/metas?schema=" + url.QueryEscape(a) + "&package=" + url.QueryEscape(b),
			"/catalogs/" + url.PathEscape(a) + "/packages/" + url.PathEscape(b) + "/channels",
			"/catalogs/demo/changes?since=" + url.QueryEscape(a),
		}
		for _, p := range paths {
			req := httptest.NewRequest(http.MethodGet, "http://catalogd"+p, nil)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s: status %d: %s", p, rec.Code, rec.Body)
			}
			if rec.Code >= 400 {
				var doc struct {
					Status int    `json:"status"`
					Detail string `json:"detail"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.Status != rec.Code || doc.Detail == "" {
					t.Fatalf("%s: status %d with body %q", p, rec.Code, rec.Body)
				}
			}
		}
	})
}
