package stress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// demoDir is the demo catalog, from this package's directory.
var demoDir = filepath.Join("..", "testdata", "demo")

// rawResponse is an answer read off the wire.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// rawRequest writes req (a whole HTTP/1.1 request, as is: no client
// normalises its path or headers) to addr and reads one answer.
func rawRequest(t testing.TB, addr, req string) (*rawResponse, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, fmt.Errorf("write request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return &rawResponse{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// get builds a GET request for target with extra header lines.
func get(target string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: catalogd\r\nConnection: close\r\nAccept-Encoding: identity\r\n", target)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// problemError says what is wrong with an error answer that should be an RFC
// 9457 problem document whose status matches the response's; "" if nothing.
func problemError(r *rawResponse) string {
	mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	if mt != "application/problem+json" {
		return fmt.Sprintf("Content-Type %q, want application/problem+json", r.header.Get("Content-Type"))
	}
	var doc struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		return fmt.Sprintf("body is not JSON: %v", err)
	}
	if doc.Status != r.status || doc.Title == "" || doc.Detail == "" {
		return fmt.Sprintf("problem document %+v does not match status %d or lacks title or detail", doc, r.status)
	}
	return ""
}

func repeat(item, sep string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = item
	}
	return strings.Join(parts, sep)
}

// byteRanges makes a Range header of n one-byte ranges.
func byteRanges(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%d-%d", 2*i, 2*i)
	}
	return "Range: bytes=" + strings.Join(parts, ",")
}

// TestHostileRequests sends malformed and abusive requests to a running
// server. None may get a 5xx; errors the API answers are problem documents;
// no answer may be larger than the whole catalog (amplification); and the
// server answers correctly afterwards.
func TestHostileRequests(t *testing.T) {
	v := newVersion(t, "demo", demoDir)
	srv := start(t, "--data-dir", t.TempDir(), "--catalog", "demo="+demoDir)
	srv.waitSynced(t)
	addr := strings.TrimPrefix(srv.base, "http://")
	book := newETagBook()
	status, etag, sum, err := getAll(context.Background(), http.DefaultClient, srv.base, "demo", false)
	if err != nil || status != http.StatusOK || sum != v.allSum {
		t.Fatalf("GET /api/v1/all before: %d %v; body matches fbcfacts: %v", status, err, sum == v.allSum)
	}
	if err := book.see(etag, v, false); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 30_000)
	// The catalog's real ETag, last in a long If-None-Match list.
	etags := repeat(`"0123456789abcdef01234567"`, ", ", 2000)

	// noItems checks a package list is empty: SQL wildcards match nothing.
	noItems := func(r *rawResponse) error {
		var list struct{ Items []json.RawMessage }
		if err := json.Unmarshal(r.body, &list); err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d packages match; want none (no name holds the character)", len(list.Items))
		}
		return nil
	}
	// want is the set of acceptable statuses; protocol says the answer
	// comes from net/http itself (a request it rejects before any handler),
	// whose error bodies are plain text, not problem documents.
	tests := []struct {
		name     string
		req      string
		want     []int
		protocol bool
		check    func(*rawResponse) error
	}{
		{name: "overlong q", req: get("/catalogs/demo/packages?q=" + long), want: []int{200, 400}},
		{name: "overlong package name", req: get("/catalogs/demo/packages/" + long), want: []int{400, 404}},
		{name: "overlong catalog name", req: get("/catalogs/" + long + "/packages"), want: []int{400, 404}},
		{name: "overlong continue token", req: get("/catalogs/demo/packages?continue=" + long), want: []int{400}},
		{name: "overlong version range", req: get("/catalogs/demo/packages/aurora-cache/bundles?version=" + repeat(">=1.0.0", "+", 3000)), want: []int{200, 400}},
		{name: "huge limit", req: get("/catalogs/demo/packages?limit=99999999999999999999999"), want: []int{400}},
		{name: "limit past the maximum", req: get("/catalogs/demo/packages?limit=1000000"), want: []int{400}},
		{name: "negative limit", req: get("/catalogs/demo/packages?limit=-1"), want: []int{400}},
		{name: "limit not a number", req: get("/catalogs/demo/packages?limit=1e3"), want: []int{400}},
		{name: "repeated limit", req: get("/catalogs/demo/packages?limit=1&limit=2"), want: []int{200, 400}},
		{name: "unknown parameter", req: get("/catalogs/demo/packages?sort=name"), want: []int{400}},
		{name: "invalid UTF-8 in a parameter", req: get("/catalogs/demo/packages?q=%ff%fe%fd"), want: []int{200, 400}},
		{name: "invalid UTF-8 in a path", req: get("/catalogs/demo/packages/%ff%fe"), want: []int{400, 404}},
		{name: "raw invalid UTF-8 in a path", req: get("/catalogs/demo/packages/\xff\xfe"), want: []int{400, 404}},
		{name: "NUL in a parameter", req: get("/catalogs/demo/packages?q=a%00b"), want: []int{200, 400}},
		{name: "NUL in a path", req: get("/catalogs/demo%00/packages"), want: []int{400, 404}},
		{name: "SQL in q", req: get("/catalogs/demo/packages?q=" + url.QueryEscape(`' OR 1=1 --`)), want: []int{200}},
		{name: "SQL in name", req: get("/catalogs/demo/packages?name=" + url.QueryEscape(`x"; DROP TABLE blobs; --`)), want: []int{200, 400}},
		{name: "SQL LIKE wildcard % in name", req: get("/catalogs/demo/packages?name=%25"), want: []int{200}, check: noItems},
		{name: "SQL LIKE wildcard _ in name", req: get("/catalogs/demo/packages?name=_"), want: []int{200}, check: noItems},
		{name: "SQL wildcards only in q", req: get("/catalogs/demo/packages?q=" + url.QueryEscape(`%_\`)), want: []int{200, 400}},
		{name: "SQL in a package name", req: get("/catalogs/demo/packages/" + url.PathEscape(`aurora-cache' OR '1'='1`)), want: []int{400, 404}},
		{name: "SQL in metas filters", req: get("/catalogs/demo/api/v1/metas?schema=" + url.QueryEscape(`olm.bundle' OR 1=1; --`)), want: []int{200}},
		{name: "SQL in a GVK", req: get("/catalogs/demo/providers?group=" + url.QueryEscape(`a' UNION SELECT data FROM blobs --`) + "&version=v1&kind=K"), want: []int{200, 400}},
		// Dot segments: net/http's ServeMux redirects to the cleaned path,
		// which names no catalog; escaped ones reach the API as a name.
		{name: "traversal ..", req: get("/catalogs/../../etc/passwd"), want: []int{301, 307, 404}, protocol: true},
		{name: "traversal %2e%2e", req: get("/catalogs/%2e%2e/packages"), want: []int{301, 307, 400, 404}, protocol: true},
		{name: "traversal %2e%2e%2f", req: get("/catalogs/%2e%2e%2f%2e%2e%2fetc/packages"), want: []int{400, 404}},
		{name: "encoded slash in a catalog name", req: get("/catalogs/demo%2f..%2f..%2findex/packages"), want: []int{400, 404}},
		{name: "encoded slash in a package name", req: get("/catalogs/demo/packages/..%2F..%2Fcurrent"), want: []int{400, 404}},
		{name: "backslash traversal", req: get(`/catalogs/..\..\index/packages`), want: []int{400, 404}},
		{name: "double-encoded traversal", req: get("/catalogs/%252e%252e/packages"), want: []int{400, 404}},
		{name: "catalog named like a data file", req: get("/catalogs/current/api/v1/all"), want: []int{404}},
		{name: "absolute URI with another host", req: get("http://169.254.169.254/catalogs/demo"), want: []int{200}},
		{name: "method not allowed", req: strings.Replace(get("/catalogs/demo"), "GET", "DELETE", 1), want: []int{405}},
		{name: "unknown endpoint", req: get("/catalogs/demo/nothing-here"), want: []int{404}},
		{name: "thousands of ranges", req: get("/catalogs/demo/api/v1/all", byteRanges(5000)), want: []int{200, 206, 416}},
		{name: "overlapping ranges", req: get("/catalogs/demo/api/v1/all", "Range: bytes="+repeat("0-", ",", 3000)), want: []int{200, 206, 416}},
		{name: "range past the end", req: get("/catalogs/demo/api/v1/all", "Range: bytes=99999999999-"), want: []int{416}},
		{name: "malformed range", req: get("/catalogs/demo/api/v1/all", "Range: bytes=-0-x"), want: []int{200, 416}},
		{name: "suffix range of 0 bytes", req: get("/catalogs/demo/api/v1/all", "Range: bytes=-0"), want: []int{416}},
		{name: "range of the API description past its end", req: get("/openapi.yaml", "Range: bytes=99999999999-"), want: []int{416}},
		{name: "If-Match of another version", req: get("/catalogs/demo/api/v1/all", `If-Match: "stale"`), want: []int{200, 412}},
		{name: "thousands of ETags", req: get("/catalogs/demo/api/v1/all", "If-None-Match: "+etags), want: []int{200, 400}},
		{name: "thousands of ETags, the last matching", req: get("/catalogs/demo/api/v1/all", "If-None-Match: "+etags+", "+etag), want: []int{304, 400}},
		{name: "header of 80 KiB", req: get("/catalogs/demo", "X-Big: "+strings.Repeat("b", 80<<10)), want: []int{431}, protocol: true},
		{name: "many headers, 100 KiB in all", req: get("/catalogs/demo", repeat("X-Many: "+strings.Repeat("m", 90), "\r\n", 1000)), want: []int{431}, protocol: true},
		{name: "request line of 100 KiB", req: get("/catalogs/demo/packages?q=" + strings.Repeat("q", 100<<10)), want: []int{414, 431}, protocol: true},
		{name: "malformed percent-encoding", req: get("/catalogs/%zz/packages"), want: []int{400}, protocol: true},
	}
	var sent int
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sent++
			resp, err := rawRequest(t, addr, tc.req)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			t.Logf("%d, %d bytes", resp.status, len(resp.body))
			var wrong []string
			if resp.status >= 500 {
				wrong = append(wrong, fmt.Sprintf("status %d (server error): %.300s", resp.status, resp.body))
			}
			ok := false
			for _, w := range tc.want {
				ok = ok || resp.status == w
			}
			if !ok {
				wrong = append(wrong, fmt.Sprintf("status %d, want one of %v: %.300s", resp.status, tc.want, resp.body))
			}
			if resp.status >= 400 && !tc.protocol {
				if msg := problemError(resp); msg != "" {
					wrong = append(wrong, fmt.Sprintf("status %d: %s: %.300s", resp.status, msg, resp.body))
				}
			}
			if len(resp.body) > len(v.all) {
				wrong = append(wrong, fmt.Sprintf("answered %d bytes to a %d-byte request, more than the whole catalog (%d bytes): amplification",
					len(resp.body), len(tc.req), len(v.all)))
			}
			if tc.check != nil && resp.status < 300 {
				if err := tc.check(resp); err != nil {
					wrong = append(wrong, err.Error())
				}
			}
			for _, w := range wrong {
				t.Error(w)
			}
		})
	}

	// Nothing above changed what the server answers.
	status, etag, sum, err = getAll(context.Background(), http.DefaultClient, srv.base, "demo", false)
	if err != nil || status != http.StatusOK || sum != v.allSum {
		t.Errorf("GET /api/v1/all after the hostile requests: %d %v; body matches fbcfacts: %v", status, err, sum == v.allSum)
	} else if err := book.see(etag, v, false); err != nil {
		t.Error(err)
	}
	// The metadata endpoint, filtered and not, still answers exactly the
	// blobs the catalog files hold (it streams in batches since the slow
	// client fix).
	for _, f := range []struct{ query, schema, pkg string }{
		{query: ""},
		{query: "?schema=olm.bundle", schema: "olm.bundle"},
		{query: "?package=aurora-cache", pkg: "aurora-cache"},
		{query: "?schema=olm.channel&package=quarry-db", schema: "olm.channel", pkg: "quarry-db"},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		for _, b := range v.facts.Blobs {
			if (f.schema == "" || b.Schema == f.schema) && (f.pkg == "" || b.Package == f.pkg) {
				_ = enc.Encode(b.Doc)
			}
		}
		resp, err := rawRequest(t, addr, get("/catalogs/demo/api/v1/metas"+f.query))
		if err != nil || resp.status != http.StatusOK || !bytes.Equal(resp.body, want.Bytes()) {
			t.Errorf("GET /api/v1/metas%s: %v; status %+v; want the %d bytes of the matching blobs", f.query, err, resp, want.Len())
		}
	}
	t.Logf("%d hostile requests", sent)
}

// slowClientCatalog is large enough (about 8 MB of JSON) that an answer of
// the whole catalog cannot fit in the socket buffers of a client that does
// not read.
var slowClientCatalog = fbcgen.Options{Packages: 30, Bundles: 800, BundleObjectBytes: 8000, Seed: 4}

// TestSlowClients opens many connections that trickle their headers, or ask
// for a large answer and never read it, and checks that an ordinary client
// is still served meanwhile. The numbers are bounded (loopback only), and a
// stuck server shows as the ordinary client's 60 s timeout running out, not
// as a measured latency.
func TestSlowClients(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "catalog")
	generate(t, dir, slowClientCatalog)
	v := newVersion(t, "c", dir)
	srv := start(t, "--data-dir", filepath.Join(root, "data"), "--catalog", "c="+dir)
	srv.waitSynced(t)
	addr := strings.TrimPrefix(srv.base, "http://")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var conns sync.WaitGroup
	var mu sync.Mutex
	var opened []net.Conn
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Errorf("dial: %v", err)
			return nil
		}
		// A tiny receive window: the server's writes block early.
		_ = conn.(*net.TCPConn).SetReadBuffer(4096)
		mu.Lock()
		opened = append(opened, conn)
		mu.Unlock()
		return conn
	}
	t.Cleanup(func() {
		cancel()
		mu.Lock()
		for _, c := range opened {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})

	const tricklers, nonReaders = 100, 32
	for range tricklers {
		conn := dial()
		if conn == nil {
			break
		}
		conns.Go(func() {
			_, _ = io.WriteString(conn, "GET /catalogs/c HTTP/1.1\r\nHost: catalogd\r\n")
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := fmt.Fprintf(conn, "X-Slow-%d: x\r\n", i); err != nil {
					return // the server hung up, as it should in the end
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		})
	}
	// Clients that ask for the whole catalog, in both streaming endpoints,
	// and never read a byte of it.
	paths := []string{"/catalogs/c/api/v1/all", "/catalogs/c/api/v1/metas", "/catalogs/c/api/v1/metas?schema=olm.bundle"}
	for i := range nonReaders {
		conn := dial()
		if conn == nil {
			break
		}
		if _, err := io.WriteString(conn, get(paths[i%len(paths)])); err != nil {
			t.Fatal(err)
		}
	}
	// Give the server time to start writing into the full windows.
	time.Sleep(2 * time.Second)

	httpc := &http.Client{Timeout: 20 * time.Second}
	pkg := ""
	for name := range v.facts.Packages {
		pkg = name
		break
	}
	checks := []struct {
		path string
		want func([]byte) error
	}{
		{"/catalogs/c", nil},
		{"/catalogs/c/packages/" + pkg, nil},
		{"/catalogs/c/api/v1/metas?schema=olm.package&name=" + pkg, func(b []byte) error {
			if !bytes.Contains(b, []byte(`"name":"`+pkg+`"`)) {
				return fmt.Errorf("package %s missing from %.200s", pkg, b)
			}
			return nil
		}},
		{"/catalogs/c/api/v1/all", func(b []byte) error {
			if sha(b) != v.allSum {
				return fmt.Errorf("body (%d bytes) differs from the catalog's (%d bytes)", len(b), len(v.all))
			}
			return nil
		}},
	}
	for _, c := range checks {
		req, _ := http.NewRequest(http.MethodGet, srv.base+c.path, nil)
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := httpc.Do(req)
		if err != nil {
			t.Errorf("GET %s with %d trickling and %d non-reading connections open: %v", c.path, tricklers, nonReaders, err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			t.Errorf("GET %s: %v", c.path, err)
		case resp.StatusCode != http.StatusOK:
			t.Errorf("GET %s: %s: %.300s", c.path, resp.Status, body)
		case c.want != nil:
			if err := c.want(body); err != nil {
				t.Errorf("GET %s: %v", c.path, err)
			}
		}
	}
	t.Logf("%d trickling and %d non-reading connections; %d ordinary requests", tricklers, nonReaders, len(checks))
}
