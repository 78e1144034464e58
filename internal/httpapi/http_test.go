package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

func catalogsPending(name string) catalogs.Catalog {
	return catalogs.Catalog{Name: name, Source: "example.com/" + name + ":latest"}
}

func catalogsUnavailable(name string) catalogs.Catalog {
	return catalogs.Catalog{Name: name, Source: "example.com/" + name + ":latest", Unavailable: true}
}

func decodeProblem(t *testing.T, resp *http.Response) client.Problem {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, want application/problem+json", ct)
	}
	var p client.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestCompatEndpoints(t *testing.T) {
	for _, tc := range catalogCases() {
		t.Run(tc.name, func(t *testing.T) {
			h, want := tc.serve(t)
			all := want.JSONLines()

			resp := h.get("/catalogs/cat/api/v1/all", "Accept-Encoding", "identity")
			if got := readAll(t, resp); !bytes.Equal(got, all) || resp.Header.Get("Content-Type") != jsonlType {
				t.Errorf("/all: %d bytes (%s), want %d bytes", len(got), resp.Header.Get("Content-Type"), len(all))
			}
			ranges := []struct {
				header   string
				from, to int
			}{
				{"bytes=0-99", 0, 100},
				{fmt.Sprintf("bytes=%d-%d", len(all)/2, len(all)/2+70000), len(all) / 2, min(len(all), len(all)/2+70001)},
				{"bytes=-50", len(all) - 50, len(all)},
			}
			for _, rg := range ranges {
				resp := h.get("/catalogs/cat/api/v1/all", "Range", rg.header, "Accept-Encoding", "gzip")
				got := readAll(t, resp)
				if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(got, all[rg.from:rg.to]) {
					t.Errorf("Range %s: status %d, %d bytes, want %d", rg.header, resp.StatusCode, len(got), rg.to-rg.from)
				}
			}
			resp = h.get("/catalogs/cat/api/v1/all", "Accept-Encoding", "gzip")
			if resp.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("gzip not used: %v", resp.Header)
			}
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := io.ReadAll(zr); !bytes.Equal(got, all) {
				t.Errorf("gzip /all: %d bytes, want %d", len(got), len(all))
			}

			// Every combination of the three filters, each on a value of
			// the same bundle blob, so that each combination matches.
			var bundle fbcfacts.Blob
			for _, b := range want.Blobs {
				if b.Schema == "olm.bundle" {
					bundle = b
				}
			}
			for mask := range 8 {
				var f struct{ schema, pkg, name string }
				q := url.Values{}
				if mask&1 != 0 {
					f.schema = bundle.Schema
					q.Set("schema", f.schema)
				}
				if mask&2 != 0 {
					f.pkg = bundle.Package
					q.Set("package", f.pkg)
				}
				if mask&4 != 0 {
					f.name = bundle.Name
					q.Set("name", f.name)
				}
				var exp fbcfacts.Catalog
				for _, b := range want.Blobs {
					if (f.schema == "" || b.Schema == f.schema) && (f.pkg == "" || b.Package == f.pkg) && (f.name == "" || b.Name == f.name) {
						exp.Blobs = append(exp.Blobs, b)
					}
				}
				wantBody := exp.JSONLines()
				resp := h.get("/catalogs/cat/api/v1/metas?"+q.Encode(), "Accept-Encoding", "identity")
				if got := readAll(t, resp); !bytes.Equal(got, wantBody) || resp.ContentLength != int64(len(wantBody)) {
					t.Errorf("metas?%s: %d bytes (Content-Length %d), want %d (%d blobs)", q.Encode(), len(got), resp.ContentLength, len(wantBody), len(exp.Blobs))
				}
				resp = h.get("/catalogs/cat/api/v1/metas?"+q.Encode(), "Accept-Encoding", "gzip")
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					t.Fatalf("metas?%s gzip: %v", q.Encode(), err)
				}
				if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, wantBody) {
					t.Errorf("metas?%s gzip: %d bytes (%v), want %d", q.Encode(), len(got), err, len(wantBody))
				}
			}
			resp = h.get("/catalogs/cat/api/v1/metas?schema=no.such.schema", "Accept-Encoding", "identity")
			if got := readAll(t, resp); resp.StatusCode != http.StatusOK || len(got) != 0 || resp.ContentLength != 0 {
				t.Errorf("metas of no blob: status %d, %d bytes, Content-Length %d; want 200 and nothing", resp.StatusCode, len(got), resp.ContentLength)
			}
		})
	}
}

func TestConditionalAndGzip(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	for _, path := range []string{"/catalogs/demo/packages", "/catalogs/demo/packages/aurora-cache/channels", "/catalogs", "/catalogs/demo/api/v1/all", "/catalogs/demo/packages/aurora-cache/icon"} {
		t.Run(path, func(t *testing.T) {
			first := h.get(path, "Accept-Encoding", "identity")
			etag := first.Header.Get("ETag")
			if first.StatusCode != 200 || !strings.HasPrefix(etag, `"`) {
				t.Fatalf("status %d, ETag %q", first.StatusCode, etag)
			}
			again := h.get(path, "Accept-Encoding", "identity", "If-None-Match", etag)
			if again.StatusCode != http.StatusNotModified || again.Header.Get("ETag") != etag {
				t.Errorf("If-None-Match: status %d etag %q", again.StatusCode, again.Header.Get("ETag"))
			}
			if other := h.get(path, "Accept-Encoding", "identity", "If-None-Match", `"stale"`); other.StatusCode != 200 {
				t.Errorf("stale If-None-Match: status %d", other.StatusCode)
			}
			gz := h.get(path, "Accept-Encoding", "gzip")
			if gz.Header.Get("ETag") == etag {
				t.Error("gzip representation has the same strong ETag as the plain one")
			}
			lm := first.Header.Get("Last-Modified")
			if strings.Contains(path, "/packages/") {
				// One package's answer: its ETag outlives the catalog
				// version, which a Last-Modified would contradict.
				if lm != "" {
					t.Errorf("Last-Modified %q on an answer of one package", lm)
				}
				ims := h.get(path, "Accept-Encoding", "identity", "If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
				if ims.StatusCode != http.StatusOK {
					t.Errorf("If-Modified-Since on an answer of one package: status %d, want 200", ims.StatusCode)
				}
				return
			}
			if path != "/catalogs" {
				if _, err := http.ParseTime(lm); err != nil {
					t.Errorf("Last-Modified %q: %v", lm, err)
				} else if ims := h.get(path, "Accept-Encoding", "identity", "If-Modified-Since", lm); ims.StatusCode != http.StatusNotModified {
					t.Errorf("If-Modified-Since: status %d", ims.StatusCode)
				}
			}
		})
	}
}

// TestETagFollowsContent: same content, same ETag and Last-Modified; new
// content, new ones.
func TestETagFollowsContent(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	before := h.get("/catalogs/demo/packages")
	beforeTag, beforeLM := before.Header.Get("ETag"), before.Header.Get("Last-Modified")
	if _, _, rebuilt, err := h.store.Update(context.Background(), "demo", index.Content{FS: nil, Digest: "sha256:demodemo"}); err != nil || rebuilt {
		t.Fatalf("same digest: rebuilt=%v err=%v", rebuilt, err)
	}
	same := h.get("/catalogs/demo/packages")
	if same.Header.Get("ETag") != beforeTag || same.Header.Get("Last-Modified") != beforeLM {
		t.Error("validators changed without a content change")
	}
	time.Sleep(1100 * time.Millisecond) // Last-Modified has one-second resolution
	if _, _, _, err := h.store.Update(context.Background(), "demo", index.Content{FS: tinyFS(), Digest: "sha256:new"}); err != nil {
		t.Fatal(err)
	}
	after := h.get("/catalogs/demo/packages")
	if after.Header.Get("ETag") == beforeTag || after.Header.Get("Last-Modified") == beforeLM {
		t.Error("validators did not change with the content")
	}
}

// TestReadsDuringRebuilds: answers stay whole while the index is swapped
// underneath; no request fails or mixes two indexes.
func TestReadsDuringRebuilds(t *testing.T) {
	demo := fbcfacts.Load(t, demoDir)
	wantPackages, wantBundles := len(demo.Packages), demo.CountBundles()
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := h.client.GetCatalogWithResponse(context.Background(), "demo", nil)
				if err != nil || resp.JSON200 == nil {
					errs <- fmt.Errorf("read during rebuild: %v %s", err, resp.Body)
					return
				}
				c := resp.JSON200.Counts
				// Either the whole demo catalog or the whole one-bundle tinyFS.
				if !(c.Packages == wantPackages && c.Bundles == wantBundles) && !(c.Packages == 1 && c.Bundles == 1) {
					errs <- fmt.Errorf("mixed counts %+v", c)
					return
				}
			}
		}()
	}
	for i := 0; i < 6; i++ {
		src := index.Content{FS: tinyFS(), Digest: fmt.Sprintf("sha256:tiny%d", i)}
		if i%2 == 1 {
			src = index.Content{FS: demoFS(), Digest: fmt.Sprintf("sha256:demo%d", i)}
		}
		if _, _, _, err := h.store.Update(context.Background(), "demo", src); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func demoFS() fs.FS { return os.DirFS(demoDir) }

// tinyFS is a one-package, one-bundle catalog.
func tinyFS() fs.FS {
	return fstest.MapFS{"c.json": {Data: []byte(`{"schema":"olm.package","name":"tiny","defaultChannel":"c"}
{"schema":"olm.channel","name":"c","package":"tiny","entries":[{"name":"tiny.v1.0.0"}]}
{"schema":"olm.bundle","name":"tiny.v1.0.0","package":"tiny","image":"i","properties":[{"type":"olm.package","value":{"packageName":"tiny","version":"1.0.0"}}]}
`)}}
}

// TestHead: HEAD answers like GET, without a body, as catalogd's does.
func TestHead(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	for _, path := range []string{"/catalogs/demo/api/v1/all", "/catalogs/demo/api/v1/metas?schema=olm.bundle", "/catalogs/demo/packages"} {
		get := h.get(path, "Accept-Encoding", "identity")
		getBody := readAll(t, get)
		req, err := http.NewRequest(http.MethodHead, h.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("ETag") != get.Header.Get("ETag") {
			t.Errorf("HEAD %s: status %d, %d body bytes, ETag %q (GET: %q)", path, resp.StatusCode, len(body), resp.Header.Get("ETag"), get.Header.Get("ETag"))
		}
		if cl := resp.Header.Get("Content-Length"); strings.Contains(path, "/api/v1/") && cl != fmt.Sprint(len(getBody)) {
			t.Errorf("HEAD %s: Content-Length %q, GET body %d bytes", path, cl, len(getBody))
		}
	}
}

// TestUnknownCatalogBeforeTheListIsLoaded checks the answer for a catalog
// name the server does not know: 503 with Retry-After while it has not read
// its catalog list yet (a restart), 404 once it has.
func TestUnknownCatalogBeforeTheListIsLoaded(t *testing.T) {
	indexes, err := store.New(t.TempDir(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { indexes.Close() })
	table := catalogs.NewTable()
	api := New(table, indexes, Options{Log: logr.Discard()})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		loaded     bool
		wantStatus int
	}{{false, http.StatusServiceUnavailable}, {true, http.StatusNotFound}} {
		if tc.loaded {
			table.MarkLoaded()
		}
		for _, path := range []string{"/catalogs/later", "/catalogs/later/packages"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("loaded=%v GET %s: %d, want %d", tc.loaded, path, resp.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				t.Errorf("loaded=%v GET %s: 503 without Retry-After", tc.loaded, path)
			}
		}
	}
}
