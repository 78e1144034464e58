package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/apivalidate"
)

const resolveDir = "../query/testdata/resolve"

// resolveHarness serves the resolution test catalogs: a (priority 0,
// labelled tier=prod) and b (priority 1, tier=dev).
func resolveHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.add("a", resolveDir+"/a", 0)
	h.add("b", resolveDir+"/b", 1)
	h.reg.Update("a", func(c *catalogs.Catalog) { c.Labels = map[string]string{"tier": "prod"} })
	h.reg.Update("b", func(c *catalogs.Catalog) { c.Labels = map[string]string{"tier": "dev"} })
	return h
}

// TestResolveHTTP checks the resolve endpoints over HTTP: answers, the
// failures that carry a resolution, catalogs left out, and bad parameters,
// each checked against openapi.yaml by the harness's transport.
func TestResolveHTTP(t *testing.T) {
	h := resolveHarness(t)
	h.reg.Put(catalogs.Catalog{Name: "off", Unavailable: true})
	h.reg.Put(catalogs.Catalog{Name: "pending"})
	tests := []struct {
		name       string
		path       string
		wantStatus int
		// wantBundle is catalog/bundle of a 200; wantDetail is in a problem's detail.
		wantBundle, wantDetail, wantParam string
		// wantOutcomes are catalog outcomes by catalog name.
		wantOutcomes map[string]client.ResolveCatalogOutcome
		// wantRelease is the bundleReleaseSupport the answer says applied.
		wantRelease bool
		// wantRefused is catalog/bundle/dependency of a bundle refused
		// for its dependency, and wantType the problem type.
		wantRefused, wantType string
	}{
		{name: "priority wins", path: "/resolve?package=ferry&channels=stable", wantStatus: 200, wantBundle: "b/ferry.v1.4.0",
			wantOutcomes: map[string]client.ResolveCatalogOutcome{"a": client.ResolveCatalogOutcomeLowerPriority, "b": client.ResolveCatalogOutcomeChosen,
				"off": client.ResolveCatalogOutcomeUnavailable, "pending": client.ResolveCatalogOutcomeNotIndexed}},
		{name: "selector", path: "/resolve?package=ferry&channels=stable&catalogSelector=" + url.QueryEscape("tier in (prod)"), wantStatus: 200, wantBundle: "a/ferry.v1.2.0",
			wantOutcomes: map[string]client.ResolveCatalogOutcome{"a": client.ResolveCatalogOutcomeChosen, "b": client.ResolveCatalogOutcomeNotSelected, "off": client.ResolveCatalogOutcomeNotSelected}},
		{name: "channels repeated and comma-separated", path: "/resolve?package=ferry&channels=stable,fast&channels=stable&catalogSelector=tier%3Dprod", wantStatus: 200, wantBundle: "a/ferry.v2.0.0"},
		{name: "installed and range", path: "/resolve?package=ferry&installed=1.1.0&version=" + url.QueryEscape("<1.2.0") + "&catalogSelector=tier%3Dprod", wantStatus: 200, wantBundle: "a/ferry.v1.1.0"},
		{name: "self-certified", path: "/resolve?package=ferry&installed=1.2.0&upgradeConstraintPolicy=SelfCertified&catalogSelector=tier%3Dprod", wantStatus: 200, wantBundle: "a/ferry.v2.1.0-rc.1"},
		{name: "no bundle", path: "/resolve?package=ferry&version=" + url.QueryEscape(">=5.0.0"), wantStatus: 404,
			wantDetail:   `no bundles found for package "ferry" matching version ">=5.0.0"`,
			wantOutcomes: map[string]client.ResolveCatalogOutcome{"a": client.ResolveCatalogOutcomeNoCandidate, "b": client.ResolveCatalogOutcomeNoCandidate}},
		{name: "unknown package", path: "/resolve?package=nope", wantStatus: 404, wantDetail: `no bundles found for package "nope"`,
			wantOutcomes: map[string]client.ResolveCatalogOutcome{"a": client.ResolveCatalogOutcomePackageNotFound}},
		{name: "one catalog", path: "/catalogs/a/resolve?package=skiff", wantStatus: 200, wantBundle: "a/skiff.v0.1.0"},
		{name: "one catalog without a bundle", path: "/catalogs/b/resolve?package=ferry&installed=1.4.0&channels=nosuch", wantStatus: 404,
			wantDetail: `error upgrading from currently installed version "1.4.0": no bundles found for package "ferry" in channels [nosuch]`},
		{name: "unknown catalog", path: "/catalogs/nope/resolve?package=ferry", wantStatus: 404, wantParam: "catalog"},
		{name: "catalog not indexed", path: "/catalogs/pending/resolve?package=ferry", wantStatus: 503, wantParam: "catalog"},
		{name: "no package", path: "/resolve?channels=stable", wantStatus: 400, wantParam: "package"},
		{name: "bad range", path: "/resolve?package=ferry&version=%3E%3E1", wantStatus: 400, wantParam: "version"},
		{name: "bad installed", path: "/resolve?package=ferry&installed=1.2", wantStatus: 400, wantParam: "installed"},
		{name: "bad policy", path: "/resolve?package=ferry&upgradeConstraintPolicy=Whatever", wantStatus: 400, wantParam: "upgradeConstraintPolicy"},
		{name: "bad selector", path: "/resolve?package=ferry&catalogSelector=" + url.QueryEscape("tier in prod"), wantStatus: 400, wantParam: "catalogSelector"},
		{name: "empty channel", path: "/resolve?package=ferry&channels=stable,", wantStatus: 400, wantParam: "channels"},
		{name: "selector on one catalog", path: "/catalogs/a/resolve?package=ferry&catalogSelector=tier%3Dprod", wantStatus: 400, wantParam: "catalogSelector"},
		{name: "the chosen bundle declares a dependency", path: "/catalogs/a/resolve?package=kayak&channels=stable", wantStatus: 422,
			wantDetail:  `validating bundle "kayak.v1.2.0": bundle "kayak.v1.2.0" has a dependency declared via property "olm.constraint" which is currently not supported`,
			wantRefused: "a/kayak.v1.2.0/olm.constraint", wantType: "/problems/unsupported-dependency",
			wantOutcomes: map[string]client.ResolveCatalogOutcome{"a": client.ResolveCatalogOutcomeChosen}},
		{name: "no fallback to the next catalog", path: "/resolve?package=kayak&channels=stable&catalogSelector=tier%3Dprod", wantStatus: 422,
			wantDetail:  `validating bundle "kayak.v1.2.0": bundle "kayak.v1.2.0" has a dependency declared via property "olm.constraint" which is currently not supported`,
			wantRefused: "a/kayak.v1.2.0/olm.constraint", wantType: "/problems/unsupported-dependency"},
		{name: "olm.gvk.required", path: "/catalogs/a/resolve?package=kayak&version=" + url.QueryEscape("<1.2.0"), wantStatus: 422,
			wantDetail:  `bundle "kayak.v1.1.0" has a dependency declared via property "olm.gvk.required" which is currently not supported`,
			wantRefused: "a/kayak.v1.1.0/olm.gvk.required", wantType: "/problems/unsupported-dependency"},
		{name: "a bundle without dependencies", path: "/catalogs/a/resolve?package=kayak", wantStatus: 200, wantBundle: "a/kayak.v1.3.0"},
		{name: "releases from build metadata by default", path: "/catalogs/a/resolve?package=oar", wantStatus: 200, wantBundle: "a/oar.both"},
		{name: "bundleReleaseSupport=true reads explicit releases", path: "/catalogs/a/resolve?package=oar&bundleReleaseSupport=true", wantStatus: 200,
			wantBundle: "a/oar.build", wantRelease: true},
		{name: "bundleReleaseSupport=false", path: "/catalogs/a/resolve?package=oar&bundleReleaseSupport=false", wantStatus: 200, wantBundle: "a/oar.both"},
		{name: "bad bundleReleaseSupport", path: "/resolve?package=oar&bundleReleaseSupport=maybe", wantStatus: 400, wantParam: "bundleReleaseSupport"},
		{name: "installed by name", path: "/catalogs/a/resolve?package=oar&installed=2.0.0&installedBundle=oar.neither", wantStatus: 200, wantBundle: "a/oar.build"},
		{name: "installed by version alone", path: "/catalogs/a/resolve?package=oar&installed=2.0.0", wantStatus: 200, wantBundle: "a/oar.both"},
		{name: "installed release recorded apart", path: "/catalogs/a/resolve?package=oar&installed=2.0.0&installedRelease=3&bundleReleaseSupport=true",
			wantStatus: 200, wantBundle: "a/oar.both", wantRelease: true},
		{name: "installed release present and empty", path: "/catalogs/a/resolve?package=oar&installed=2.0.0%2B7&installedRelease=&bundleReleaseSupport=true",
			wantStatus: 200, wantBundle: "a/oar.build", wantRelease: true},
		{name: "bad installed release", path: "/resolve?package=oar&installed=2.0.0&installedRelease=01", wantStatus: 400, wantParam: "installedRelease"},
		{name: "installedBundle without installed", path: "/resolve?package=oar&installedBundle=oar.neither", wantStatus: 400, wantParam: "installedBundle"},
		{name: "canoe follows replaces", path: "/catalogs/a/resolve?package=canoe&installed=0.0.1", wantStatus: 200, wantBundle: "a/canoe.v0.0.2"},
		{name: "upgradeEdges was removed", path: "/resolve?package=ferry&upgradeEdges=semver", wantStatus: 400, wantParam: "upgradeEdges",
			wantDetail: "upgradeEdges was removed: operator-controller removed its ForceSemverUpgradeConstraints gate"},
		{name: "upgradeEdges=legacy too", path: "/catalogs/a/resolve?package=canoe&upgradeEdges=legacy", wantStatus: 400, wantParam: "upgradeEdges"},
		{name: "empty upgradeEdges, as old generated clients send, is absent", path: "/catalogs/a/resolve?package=canoe&installed=0.0.1&upgradeEdges=",
			wantStatus: 200, wantBundle: "a/canoe.v0.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.get(tt.path)
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			// A resolution and a failed one, read together.
			var doc struct {
				client.Resolution
				client.Problem
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			if tt.wantBundle != "" {
				if got := doc.Bundle.Catalog + "/" + doc.Bundle.Name; got != tt.wantBundle {
					t.Errorf("bundle %s, want %s", got, tt.wantBundle)
				}
			}
			if resp.StatusCode != 200 {
				if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("content type %q", ct)
				}
				if !strings.Contains(doc.Detail, tt.wantDetail) || doc.Parameter != tt.wantParam {
					t.Errorf("detail %q parameter %q; want %q and %q", doc.Detail, doc.Parameter, tt.wantDetail, tt.wantParam)
				}
				if tt.wantDetail != "" && tt.wantParam == "" && doc.Message != doc.Detail {
					t.Errorf("message %q differs from detail %q", doc.Message, doc.Detail)
				}
			}
			var refused string
			if r := doc.Refused; r.Name != "" {
				refused = r.Catalog + "/" + r.Name + "/" + string(r.Dependency)
			}
			if refused != tt.wantRefused || (tt.wantType != "" && doc.Type != tt.wantType) {
				t.Errorf("refused %q, type %q; want %q, %q", refused, doc.Type, tt.wantRefused, tt.wantType)
			}
			if tt.wantRefused != "" && doc.Bundle.Name != "" {
				t.Errorf("a refused bundle answered with bundle %s", doc.Bundle.Name)
			}
			if tt.wantParam == "" && doc.BundleReleaseSupport != tt.wantRelease {
				t.Errorf("bundleReleaseSupport %v, want %v", doc.BundleReleaseSupport, tt.wantRelease)
			}
			got := map[string]client.ResolveCatalogOutcome{}
			for _, c := range doc.Catalogs {
				got[c.Name] = c.Outcome
			}
			for name, want := range tt.wantOutcomes {
				if got[name] != want {
					t.Errorf("catalog %s: %q, want %q (all: %v)", name, got[name], want, got)
				}
			}
		})
	}
}

// TestResolveDefaultRelease checks that the server's BundleReleaseSupport
// applies to a request that does not say, that a request saying overrides
// it, and that the answer says which applied, through the generated client.
func TestResolveDefaultRelease(t *testing.T) {
	indexes, err := store.New(t.TempDir(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { indexes.Close() })
	reg := catalogs.NewTable()
	reg.MarkLoaded()
	if _, _, _, err := indexes.Update(context.Background(), "a", index.Content{FS: os.DirFS(resolveDir + "/a"), Digest: "sha256:a"}); err != nil {
		t.Fatal(err)
	}
	reg.Put(catalogs.Catalog{Name: "a"})
	on, off := true, false
	for _, tt := range []struct {
		server      bool
		request     *bool
		wantRelease bool
		wantBundle  string
	}{
		{server: false, request: nil, wantRelease: false, wantBundle: "oar.both"},
		{server: true, request: nil, wantRelease: true, wantBundle: "oar.build"},
		{server: true, request: &off, wantRelease: false, wantBundle: "oar.both"},
		{server: false, request: &on, wantRelease: true, wantBundle: "oar.build"},
	} {
		srv := httptest.NewServer(New(reg, indexes, Options{Log: logr.Discard(), BundleReleaseSupport: tt.server}))
		c, err := client.NewClientWithResponses(srv.URL, client.WithHTTPClient(&http.Client{Transport: apivalidate.New(t).Transport(t, http.DefaultTransport)}))
		if err != nil {
			t.Fatal(err)
		}
		rsp, err := c.ResolveWithResponse(context.Background(), &client.ResolveParams{Package: "oar", BundleReleaseSupport: tt.request})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rsp.JSON200 == nil {
			t.Fatalf("server %v, request %v: status %d: %s", tt.server, tt.request, rsp.StatusCode(), rsp.Body)
		}
		if got := rsp.JSON200; got.BundleReleaseSupport != tt.wantRelease || got.Bundle.Name != tt.wantBundle {
			t.Errorf("server %v, request %v: %s with bundleReleaseSupport %v, want %s with %v", tt.server, tt.request,
				got.Bundle.Name, got.BundleReleaseSupport, tt.wantBundle, tt.wantRelease)
		}
	}
}

// TestResolveAmbiguous checks that a tie between catalogs is a 409 naming
// both, through the generated client.
func TestResolveAmbiguous(t *testing.T) {
	h := resolveHarness(t)
	h.reg.Update("b", func(c *catalogs.Catalog) { c.Priority = 0 })
	rsp, err := h.client.ResolveWithResponse(context.Background(), &client.ResolveParams{Package: "ferry", Channels: []string{"stable"}})
	if err != nil {
		t.Fatal(err)
	}
	if rsp.StatusCode() != http.StatusConflict || rsp.ApplicationproblemJSON409 == nil {
		t.Fatalf("status %d: %s", rsp.StatusCode(), rsp.Body)
	}
	want := `found bundles for package "ferry" in channels [stable] in multiple catalogs with the same priority [a b]`
	if got := rsp.ApplicationproblemJSON409; got.Detail != want || got.Type != "/problems/ambiguous-resolution" || len(got.Catalogs) != 2 {
		t.Errorf("got %+v, want detail %q", got, want)
	}
}

// FuzzResolveParams sends arbitrary query strings to both resolve
// endpoints: never a 500, never a panic, and every failure a problem
// document.
func FuzzResolveParams(f *testing.F) {
	indexes, err := store.New(f.TempDir(), logr.Discard())
	if err != nil {
		f.Fatal(err)
	}
	defer indexes.Close()
	reg := catalogs.NewTable()
	reg.MarkLoaded()
	for _, name := range []string{"a", "b"} {
		if _, _, _, err := indexes.Update(context.Background(), name, index.Content{FS: os.DirFS(resolveDir + "/" + name), Digest: "sha256:" + name}); err != nil {
			f.Fatal(err)
		}
		reg.Put(catalogs.Catalog{Name: name, Labels: map[string]string{"tier": name}})
	}
	srv := New(reg, indexes, Options{Log: logr.Discard()})
	for _, seed := range []string{
		"package=ferry", "package=ferry&channels=stable&version=%3E%3D1.0.0&installed=1.0.0",
		"package=ferry&installed=1.2.0&upgradeConstraintPolicy=SelfCertified&catalogSelector=tier%3Da",
		"package=raft&installed=1.0.0%2B1", "package=&channels=,", "package=ferry&version=%3E%3D%3E&installed=x",
		"package=ferry&catalogSelector=tier+in+(", "package=%00&channels=%FF", "package=ferry&version=1.x+%7C%7C+%5E2.0.0-0",
		"package=canoe&installed=0.1.2-rc.1&upgradeEdges=semver", "package=raft&installed=1.0.0%2B1&upgradeEdges=semver&channels=beta",
		"package=ferry&upgradeEdges=&installed=1.0.0", "package=ferry&upgradeEdges=SEMVER",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		for _, path := range []string{"/resolve", "/catalogs/a/resolve"} {
			req := httptest.NewRequest(http.MethodGet, "http://catalogd"+path, nil)
			req.URL.RawQuery = rawQuery
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s?%s: status %d: %s", path, rawQuery, rec.Code, rec.Body)
			}
			if rec.Code >= 400 {
				var doc struct {
					Status int    `json:"status"`
					Detail string `json:"detail"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.Status != rec.Code || doc.Detail == "" {
					t.Fatalf("%s?%s: status %d with body %q", path, rawQuery, rec.Code, rec.Body)
				}
			}
		}
	})
}
