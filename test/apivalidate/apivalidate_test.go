package apivalidate

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	catalogd "github.com/catalogd/catalogd"
	"github.com/catalogd/catalogd/client"
)

// recorder stands in for a testing.TB to observe the failures a check
// reports instead of failing the real test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", contentType)
	if status == http.StatusOK {
		w.Header().Set("ETag", `"v1"`)
	}
	w.WriteHeader(status)
	w.Write(b)
}

var indexedAt = time.Date(2025, 1, 14, 9, 12, 44, 0, time.UTC)

func catalogList() client.CatalogList {
	return client.CatalogList{Items: []client.CatalogSummary{
		{
			Name: "operatorhubio", Priority: 10, Source: "quay.io/operatorhubio/catalog:latest",
			ResolvedDigest: "sha256:9e3c1f5a2b7d4e8f6a0c1b3d5e7f9a2c4e6b8d0f1a3c5e7b9d2f4a6c8e0b1d3f",
			IndexedAt:      &indexedAt, State: client.CatalogStateServing,
			Counts: client.CatalogCounts{Packages: 1, Channels: 2, Bundles: 3},
		},
		{Name: "pending", Source: "/var/catalogs/pending", State: client.CatalogStatePending},
	}}
}

func bundle() client.Bundle {
	return client.Bundle{
		Name: "etcdoperator.v0.9.4", Package: "etcd", Version: "0.9.4",
		Image:    "quay.io/operatorhubio/etcd@sha256:66a37fd61a06a43969854ee6d3e21087a98b93838e284a6086b13917f96b0d9b",
		Channels: []client.BundleChannel{{Channel: "stable", Replaces: "etcdoperator.v0.9.2", IsHead: true}},
		Properties: []client.Property{
			{Type: "olm.package", Value: json.RawMessage(`{"packageName":"etcd","version":"0.9.4"}`)},
			{Type: "olm.maxOpenShiftVersion", Value: json.RawMessage(`"4.9"`)},
			{Type: "example.number", Value: json.RawMessage(`3`)},
		},
		RelatedImages:    []client.RelatedImage{{Image: "quay.io/coreos/etcd-operator:v0.9.4"}},
		ProvidedGVKs:     []client.GVK{{Group: "etcd.database.coreos.com", Version: "v1beta2", Kind: "EtcdCluster"}},
		RequiredGVKs:     []client.GVK{},
		RequiredPackages: []client.PackageRequirement{},
		Deprecation:      client.Deprecation{Message: "use 1.0"},
	}
}

// server answers a few routes the way the spec says, and a few the way it
// must not.
func server(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /catalogs", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "":
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.Header().Set("ETag", `"v1"`)
				w.WriteHeader(http.StatusNotModified)
				return
			}
			writeJSON(w, 200, "application/json", catalogList())
		case "gzip":
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			json.NewEncoder(zw).Encode(catalogList())
			zw.Close()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("ETag", `"v1-gzip"`)
			w.Write(buf.Bytes())
		case "missing-field":
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"items":[{"name":"x","priority":0,"source":"/c","indexedAt":null,"state":"Pending"}]}`))
		case "snake-case":
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"items":[{"name":"x","priority":0,"source":"/c","indexedAt":null,"state":"Pending",` +
				`"counts":{"packages":0,"channels":0,"bundles":0},"last_error":"boom"}]}`))
		case "bad-enum":
			l := catalogList()
			l.Items[0].State = "Ready"
			writeJSON(w, 200, "application/json", l)
		case "nil-slice":
			writeJSON(w, 200, "application/json", client.CatalogList{})
		case "no-etag":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(catalogList())
		case "weak-etag":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("ETag", `W/"v1"`)
			json.NewEncoder(w).Encode(catalogList())
		case "bad-last-modified":
			w.Header().Set("Last-Modified", indexedAt.Format(time.RFC3339))
			writeJSON(w, 200, "application/json", catalogList())
		case "teapot":
			writeJSON(w, http.StatusTeapot, "application/problem+json", client.Problem{
				Type: "/problems/teapot", Title: "Teapot", Status: 418, Detail: "short and stout"})
		case "wrong-content-type":
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<p>hi</p>"))
		}
	})
	mux.HandleFunc("GET /catalogs/{catalog}/packages/{package}/bundles/{bundle}", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("catalog") {
		case "operatorhubio":
			w.Header().Set("Last-Modified", indexedAt.Format(http.TimeFormat))
			writeJSON(w, 200, "application/json", bundle())
		case "pending":
			w.Header().Set("Retry-After", "5")
			writeJSON(w, 503, "application/problem+json", client.Problem{
				Type: "/problems/catalog-not-ready", Title: "Catalog not ready", Status: 503,
				Detail: `catalog "pending" is still being indexed`, Instance: r.URL.RequestURI()})
		case "wrong-status-in-problem":
			writeJSON(w, 404, "application/problem+json", client.Problem{
				Type: "/problems/not-found", Title: "Not found", Status: 400, Detail: "no such bundle", Parameter: "bundle"})
		case "problem-without-detail":
			writeJSON(w, 404, "application/problem+json", map[string]any{
				"type": "/problems/not-found", "title": "Not found", "status": 404})
		default:
			writeJSON(w, 404, "application/problem+json", client.Problem{
				Type: "/problems/not-found", Title: "Not found", Status: 404,
				Detail: fmt.Sprintf("no catalog %q", r.PathValue("catalog")), Parameter: "catalog"})
		}
	})
	mux.HandleFunc("GET /catalogs/{catalog}/packages/{package}/upgrades", func(w http.ResponseWriter, r *http.Request) {
		l := client.UpgradeList{
			From:  client.BundleRef{Name: "etcdoperator.v0.9.2", Version: "0.9.2"},
			Heads: []client.ChannelHead{{Channel: "stable", Name: "etcdoperator.v0.9.4", Version: "0.9.4"}},
			Items: []client.UpgradeEdge{{Name: "etcdoperator.v0.9.4", Version: "0.9.4", Channel: "stable",
				Rules: []client.UpgradeRule{client.UpgradeRuleReplaces, client.UpgradeRuleSkipRange}}},
		}
		if r.URL.Query().Get("case") == "no-rules" {
			l.Items[0].Rules = []client.UpgradeRule{}
		}
		writeJSON(w, 200, "application/json", l)
	})
	mux.HandleFunc("GET /catalogs/{catalog}/packages/{package}/icon", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("ETag", `"icon"`)
		w.Write([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`))
	})
	mux.HandleFunc("GET /catalogs/{catalog}/api/v1/all", func(w http.ResponseWriter, r *http.Request) {
		content := `{"schema":"olm.package","name":"etcd"}` + "\n" + `{"schema":"olm.channel","package":"etcd","name":"stable","entries":[]}` + "\n"
		switch r.URL.Query().Get("case") {
		case "bad-line":
			content += "not json\n"
		case "range-problem":
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(content)))
			writeJSON(w, http.StatusRequestedRangeNotSatisfiable, "application/problem+json", client.Problem{
				Type: "/problems/range-not-satisfiable", Title: "Range not satisfiable", Status: 416,
				Detail: "Range starts past the end", Parameter: "Range"})
			return
		}
		w.Header().Set("Content-Type", "application/jsonl")
		w.Header().Set("ETag", `"all"`)
		http.ServeContent(w, r, "", indexedAt, strings.NewReader(content))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("ETag", `"spec"`)
		w.Write(catalogd.OpenAPISpec)
	})
	mux.HandleFunc("GET /undocumented", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hi"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestCheck(t *testing.T) {
	srv := server(t)
	v := New(t)
	tests := []struct {
		name   string
		path   string
		header http.Header
		want   string // "" when the answer conforms, else a part of the failure
	}{
		{name: "list", path: "/catalogs"},
		{name: "not modified", path: "/catalogs", header: http.Header{"If-None-Match": {`"v1"`}}},
		{name: "gzip", path: "/catalogs?case=gzip", header: http.Header{"Accept-Encoding": {"gzip"}}},
		{name: "bundle with any-JSON property values", path: "/catalogs/operatorhubio/packages/etcd/bundles/etcdoperator.v0.9.4"},
		{name: "not ready", path: "/catalogs/pending/packages/etcd/bundles/etcdoperator.v0.9.4"},
		{name: "not found", path: "/catalogs/nope/packages/etcd/bundles/etcdoperator.v0.9.4"},
		{name: "upgrades", path: "/catalogs/c/packages/etcd/upgrades?from=0.9.2"},
		{name: "icon", path: "/catalogs/c/packages/etcd/icon"},
		{name: "jsonl", path: "/catalogs/c/api/v1/all"},
		{name: "jsonl range", path: "/catalogs/c/api/v1/all", header: http.Header{"Range": {"bytes=5-20"}}},
		{name: "jsonl range not satisfiable", path: "/catalogs/c/api/v1/all?case=range-problem", header: http.Header{"Range": {"bytes=5000-"}}},
		{name: "healthz", path: "/healthz"},
		{name: "spec", path: "/openapi.yaml"},

		{name: "missing required field", path: "/catalogs?case=missing-field", want: `property "counts" is missing`},
		{name: "undocumented field", path: "/catalogs?case=snake-case", want: `"last_error"`},
		{name: "value not in enum", path: "/catalogs?case=bad-enum", want: "not one of the allowed values"},
		{name: "nil slice sent as null", path: "/catalogs?case=nil-slice", want: "Value is not nullable"},
		{name: "missing ETag", path: "/catalogs?case=no-etag", want: `response header "ETag" missing`},
		{name: "weak ETag", path: "/catalogs?case=weak-etag", want: `"ETag" doesn't match schema`},
		{name: "Last-Modified not an HTTP-date", path: "/catalogs?case=bad-last-modified", want: `"Last-Modified" doesn't match schema`},
		{name: "undocumented status", path: "/catalogs?case=teapot", want: "status 418 is not documented"},
		{name: "undocumented content type", path: "/catalogs?case=wrong-content-type", want: "text/html"},
		{name: "problem with another status", path: "/catalogs/wrong-status-in-problem/packages/etcd/bundles/b", want: "problem document says status 400"},
		{name: "problem without detail", path: "/catalogs/problem-without-detail/packages/etcd/bundles/b", want: `property "detail" is missing`},
		{name: "empty rules", path: "/catalogs/c/packages/etcd/upgrades?from=0.9.2&case=no-rules", want: "minimum number of items"},
		{name: "bad JSON Lines", path: "/catalogs/c/api/v1/all?case=bad-line", want: "line 3 is not a JSON object"},
		{name: "route not in spec", path: "/undocumented", want: "no operation in openapi.yaml matches"},
		{name: "range not satisfiable in text/plain", path: "/catalogs/c/api/v1/all", header: http.Header{"Range": {"bytes=5000-"}}, want: "text/plain"},
		{name: "undocumented 304", path: "/healthz", header: http.Header{"If-None-Match": {`"x"`}}, want: "status 304 is not documented"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			// DisableCompression: the body reaches the check as sent.
			tr := &http.Transport{DisableCompression: true}
			defer tr.CloseIdleConnections()
			res, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body bytes.Buffer
			if _, err := body.ReadFrom(res.Body); err != nil {
				t.Fatal(err)
			}

			rec := &recorder{TB: t}
			v.Check(rec, req, res.StatusCode, res.Header, body.Bytes())
			failures := rec.failures()
			switch {
			case tc.want == "" && len(failures) > 0:
				t.Errorf("conforming answer (status %d) reported: %s", res.StatusCode, strings.Join(failures, "\n"))
			case tc.want != "" && len(failures) == 0:
				t.Errorf("non-conforming answer (status %d) was not caught; want a failure with %q", res.StatusCode, tc.want)
			case tc.want != "" && !strings.Contains(failures[0], tc.want):
				t.Errorf("failure does not mention %q:\n%s", tc.want, failures[0])
			case tc.want != "":
				t.Logf("caught: %s", failures[0])
			}
		})
	}
}

// TestTransport drives the generated client through a validating transport:
// conforming answers pass and decode, and a non-conforming one is reported.
func TestTransport(t *testing.T) {
	srv := server(t)
	v := New(t)
	rec := &recorder{TB: t}
	c, err := client.NewClientWithResponses(srv.URL, client.WithHTTPClient(&http.Client{Transport: v.Transport(rec, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	list, err := c.ListCatalogsWithResponse(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list.JSON200 == nil || len(list.JSON200.Items) != 2 || list.JSON200.Items[1].IndexedAt != nil {
		t.Errorf("ListCatalogs decoded %+v", list.JSON200)
	}
	etag := `"v1"`
	notModified, err := c.ListCatalogsWithResponse(ctx, &client.ListCatalogsParams{IfNoneMatch: &etag})
	if err != nil {
		t.Fatal(err)
	}
	if notModified.StatusCode() != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", notModified.StatusCode())
	}
	b, err := c.GetBundleWithResponse(ctx, "operatorhubio", "etcd", "etcdoperator.v0.9.4", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.JSON200 == nil || string(b.JSON200.Properties[1].Value) != `"4.9"` {
		t.Errorf("GetBundle decoded %+v", b.JSON200)
	}
	nf, err := c.GetBundleWithResponse(ctx, "nope", "etcd", "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if nf.ApplicationproblemJSON404 == nil || nf.ApplicationproblemJSON404.Parameter != "catalog" {
		t.Errorf("GetBundle of an unknown catalog decoded %+v", nf.ApplicationproblemJSON404)
	}
	if f := rec.failures(); len(f) > 0 {
		t.Fatalf("conforming answers reported: %s", strings.Join(f, "\n"))
	}

	if _, err := c.ListUpgradesWithResponse(ctx, "c", "etcd", &client.ListUpgradesParams{From: "0.9.2"},
		func(_ context.Context, req *http.Request) error {
			req.URL.RawQuery += "&case=no-rules"
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	if f := rec.failures(); len(f) != 1 || !strings.Contains(f[0], "listUpgrades") {
		t.Errorf("want one failure for listUpgrades, got %q", f)
	}
}

// TestGeneratedTypesOmitOptionalFields checks the generated types encode the
// way the spec says: optional fields left unset are absent, a nullable
// required field is null.
func TestGeneratedTypesOmitOptionalFields(t *testing.T) {
	b, err := json.Marshal(client.CatalogSummary{Name: "c", Source: "/c", State: client.CatalogStatePending})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"counts":{"bundles":0,"channels":0,"packages":0},"indexedAt":null,"name":"c","priority":0,"source":"/c","state":"Pending"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, err = json.Marshal(client.ChannelSummary{Name: "stable", EntryCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"entryCount":1,"isDefault":false,"name":"stable"}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
