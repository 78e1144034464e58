package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
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
	"github.com/catalogd/catalogd/test/fbcgen"
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

// TestHead: HEAD answers like GET, without a body, as catalogd's does: the
// same status and headers over loopback, in both encodings, on every bulk
// route and on a JSON one; and in process, with a recorder that sees what
// the handler writes, a HEAD of a bulk route writes no byte of the answer, so a HEAD of a
// whole catalog with gzip does not compress it (net/http would drop what
// was compressed). The generated catalog is large enough that its gzip
// answers span many writes.
func TestHead(t *testing.T) {
	big := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), big, streamCatalog); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	h.add("big", big, 0)
	for _, cat := range []string{"demo", "big"} {
		var pkgs client.PackageList
		if err := json.Unmarshal(readAll(t, h.get("/catalogs/"+cat+"/packages?limit=1")), &pkgs); err != nil || len(pkgs.Items) != 1 {
			t.Fatalf("first package of %s: %v, %+v", cat, err, pkgs)
		}
		pkg := url.QueryEscape(pkgs.Items[0].Name)
		base := "/catalogs/" + cat
		for _, path := range []string{
			base + "/api/v1/all",
			base + "/api/v1/metas",
			base + "/api/v1/metas?schema=olm.bundle",
			base + "/api/v1/metas?package=" + pkg,
			base + "/api/v1/metas?schema=olm.channel&package=" + pkg,
			base + "/packages",
		} {
			for _, encoding := range []string{"identity", "gzip"} {
				t.Run(path+" "+encoding, func(t *testing.T) {
					get := h.get(path, "Accept-Encoding", encoding)
					getBody := readAll(t, get)
					head := headRequest(t, h.srv.URL+path, encoding)
					if head.status != get.StatusCode || len(head.body) != 0 {
						t.Errorf("HEAD: status %d, %d body bytes; GET: status %d", head.status, len(head.body), get.StatusCode)
					}
					if encoding == "gzip" && len(getBody) >= gzipMin && get.Header.Get("Content-Encoding") != "gzip" {
						t.Errorf("GET: Content-Encoding %q for %d bytes, want gzip", get.Header.Get("Content-Encoding"), len(getBody))
					}
					if cl := get.Header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(getBody)) {
						t.Errorf("GET: Content-Length %s, body %d bytes", cl, len(getBody))
					}
					// The headers of both, but the date of each. A gzip
					// /metas is compressed as it is sent, so its length is
					// known only once it is: net/http gives a GET one when
					// the whole answer fit in its buffer, and a HEAD, which
					// compresses nothing, gives none (RFC 9110 §9.3.2 lets a
					// HEAD leave out what only generating the content tells).
					wantHeader, gotHeader := get.Header.Clone(), head.header.Clone()
					for _, hdr := range []http.Header{wantHeader, gotHeader} {
						hdr.Del("Date")
					}
					if strings.Contains(path, "/metas") && get.Header.Get("Content-Encoding") == "gzip" {
						wantHeader.Del("Content-Length")
					}
					if !reflect.DeepEqual(gotHeader, wantHeader) {
						t.Errorf("HEAD headers %v, GET headers %v", gotHeader, wantHeader)
					}

					if !strings.Contains(path, "/api/v1/") {
						return // a JSON answer is built whole for its Content-Length and ETag
					}
					// In process: what the handler writes for a HEAD.
					req := httptest.NewRequest(http.MethodHead, path, nil)
					req.Header.Set("Accept-Encoding", encoding)
					rec := httptest.NewRecorder()
					h.srv.Config.Handler.ServeHTTP(rec, req)
					if rec.Code != get.StatusCode || rec.Body.Len() != 0 {
						t.Errorf("HEAD in process: status %d, the handler wrote %d bytes of a %d-byte answer; want status %d and nothing written",
							rec.Code, rec.Body.Len(), len(getBody), get.StatusCode)
					}
				})
			}
		}
	}
}

// headAnswer is a HEAD request's answer as read from the connection.
type headAnswer struct {
	status int
	header http.Header
	body   []byte
}

// headRequest sends a HEAD asking for encoding on a connection of its
// own, and reads what follows the answer's header on that connection
// until the server closes it: a HEAD answer has no body, so there must be
// nothing.
func headRequest(t *testing.T, addr, encoding string) headAnswer {
	t.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "HEAD %s HTTP/1.1\r\nHost: catalogd\r\nAccept-Encoding: %s\r\nConnection: close\r\n\r\n", u.RequestURI(), encoding); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	req, err := http.NewRequest(http.MethodHead, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	return headAnswer{status: resp.StatusCode, header: resp.Header, body: rest}
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
