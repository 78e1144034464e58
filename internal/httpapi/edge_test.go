package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	catalogd "github.com/catalogd/catalogd"
	"github.com/catalogd/catalogd/internal/store"
)

// TestAcceptEncoding checks content negotiation by RFC 9110's weights: a
// zero weight refuses an encoding ("gzip;q=0" used to be taken as gzip).
func TestAcceptEncoding(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	tests := []struct {
		header string
		gzip   bool
	}{
		{"gzip", true},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"br, gzip;q=0.5", true},
		{"*", true},
		{"*;q=0", false},
		{"gzip;q=0, *", false},
		{"*;q=0, gzip;q=0.1", true},
		{"identity", false},
		{"gzip;q=nonsense", false},
	}
	for _, tc := range tests {
		t.Run(tc.header, func(t *testing.T) {
			resp := h.get("/catalogs/demo/packages", "Accept-Encoding", tc.header)
			readAll(t, resp)
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzip || resp.StatusCode != 200 {
				t.Errorf("status %d, Content-Encoding %q; want gzip=%v", resp.StatusCode, resp.Header.Get("Content-Encoding"), tc.gzip)
			}
		})
	}
}

// TestIfNoneMatchForms checks the weak comparison If-None-Match calls for
// (a W/ tag used never to match) and the cap on the list's length.
func TestIfNoneMatchForms(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	const path = "/catalogs/demo/packages/aurora-cache"
	etag := h.get(path, "Accept-Encoding", "identity").Header.Get("ETag")
	stale := make([]string, maxETags)
	for i := range stale {
		stale[i] = fmt.Sprintf(`"stale%d"`, i)
	}
	tests := []struct {
		name, header string
		status       int
	}{
		{"strong", etag, http.StatusNotModified},
		{"weak", "W/" + etag, http.StatusNotModified},
		{"weak in a list", `"other", W/` + etag, http.StatusNotModified},
		{"star", "*", http.StatusNotModified},
		{"other", `W/"other"`, http.StatusOK},
		{"a match past the cap", strings.Join(append(stale, etag), ", "), http.StatusOK},
		{"a match within the cap", strings.Join(append(stale[1:], etag), ", "), http.StatusNotModified},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.get(path, "Accept-Encoding", "identity", "If-None-Match", tc.header)
			readAll(t, resp)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// TestAccessLogAndMetrics checks the V(1) access log line and the
// per-route metrics, labelled by route pattern, not by path.
func TestAccessLogAndMetrics(t *testing.T) {
	indexes, err := store.New(t.TempDir(), funcr.New(func(string, string) {}, funcr.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer indexes.Close()
	var mu sync.Mutex
	var logged bytes.Buffer
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged.WriteString(args + "\n")
	}, funcr.Options{Verbosity: 1})
	reg := prometheus.NewRegistry()
	h := newHarnessWith(t, indexes, indexes)
	api := New(h.reg, indexes, Options{Log: log, Metrics: reg})
	h.srv.Config.Handler = api
	h.add("demo", demoDir, 0)

	for _, p := range []string{"/catalogs/demo/packages/aurora-cache", "/catalogs/demo/packages/quarry-db", "/catalogs/demo/packages/none"} {
		readAll(t, h.get(p, "Accept-Encoding", "identity"))
	}
	// Not through the validating client: openapi.yaml has no such path.
	resp, err := http.Get(h.srv.URL + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	const route = "/catalogs/{catalog}/packages/{package}"
	if got := requestCount(t, reg, route, "200"); got != 2 {
		t.Errorf("requests_total{route=%q,code=200} = %v, want 2", route, got)
	}
	if got := requestCount(t, reg, route, "404"); got != 1 {
		t.Errorf("requests_total{route=%q,code=404} = %v, want 1", route, got)
	}
	if got := requestCount(t, reg, unmatchedRoute, "404"); got != 1 {
		t.Errorf("requests_total{route=%q,code=404} = %v, want 1", unmatchedRoute, got)
	}
	if n := len(family(t, reg, "catalogd_http_request_duration_seconds").GetMetric()); n != 2 {
		t.Errorf("%d duration series, want 2 (one per route)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	lines := strings.Count(logged.String(), `"msg"="request"`)
	if lines != 4 || !strings.Contains(logged.String(), `"route"="`+route+`" "status"=404`) {
		t.Errorf("access log has %d request lines, want 4 with route and status:\n%s", lines, logged.String())
	}
}

// family is the gathered metric family called name, empty if none.
func family(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f
		}
	}
	return &dto.MetricFamily{}
}

// requestCount is the request counter of a route and status code.
func requestCount(t *testing.T, reg *prometheus.Registry, route, code string) float64 {
	t.Helper()
	for _, m := range family(t, reg, "catalogd_http_requests_total").GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["route"] == route && labels["code"] == code {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestRangeAnswers checks the byte-range answers of the endpoints served
// with http.ServeContent: valid ranges get exactly the bytes asked for, and
// every refusal is a problem document with 416 (or 412) and, for 416, the
// Content-Range that tells the client the length.
func TestRangeAnswers(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	all := readAll(t, h.get("/catalogs/demo/api/v1/all", "Accept-Encoding", "identity"))
	endpoints := []struct {
		path string
		full []byte
	}{
		{"/catalogs/demo/api/v1/all", all},
		{"/openapi.yaml", catalogd.OpenAPISpec},
	}
	disjoint := make([]string, maxRanges+1)
	for i := range disjoint {
		disjoint[i] = fmt.Sprintf("%d-%d", 10*i, 10*i+4)
	}
	type part struct{ from, to int } // [from, to)
	tests := []struct {
		name string
		// headers gets the size of the content and the ETag of its whole
		// identity answer.
		headers func(size int, etag string) []string
		status  int
		// parts are the bytes a 200 or 206 answers, in order.
		parts []part
		// typ and param are those of the problem a 4xx answers.
		typ, param string
	}{
		{
			name:    "range past the end",
			headers: func(size int, _ string) []string { return []string{"Range", fmt.Sprintf("bytes=%d-", size)} },
			status:  http.StatusRequestedRangeNotSatisfiable, typ: "range-not-satisfiable", param: "Range",
		},
		{
			name:    "malformed range",
			headers: func(int, string) []string { return []string{"Range", "bytes=-0-x"} },
			status:  http.StatusRequestedRangeNotSatisfiable, typ: "range-not-satisfiable", param: "Range",
		},
		{
			name:    "range ending before it starts",
			headers: func(int, string) []string { return []string{"Range", "bytes=20-10"} },
			status:  http.StatusRequestedRangeNotSatisfiable, typ: "range-not-satisfiable", param: "Range",
		},
		{
			name:    "suffix range of 0 bytes",
			headers: func(int, string) []string { return []string{"Range", "bytes=-0"} },
			status:  http.StatusRequestedRangeNotSatisfiable, typ: "range-not-satisfiable", param: "Range",
		},
		{
			name:    "range in a unit other than bytes",
			headers: func(int, string) []string { return []string{"Range", "items=0-4"} },
			status:  http.StatusOK, parts: []part{{0, 0}},
		},
		{
			name:    "too many ranges",
			headers: func(int, string) []string { return []string{"Range", "bytes=" + strings.Join(disjoint, ",")} },
			status:  http.StatusRequestedRangeNotSatisfiable, typ: "range-not-satisfiable", param: "Range",
		},
		{
			name:    "overlapping ranges",
			headers: func(int, string) []string { return []string{"Range", "bytes=0-99,50-149"} },
			status:  http.StatusRequestedRangeNotSatisfiable, typ: "range-not-satisfiable", param: "Range",
		},
		{
			name:    "a valid single range",
			headers: func(int, string) []string { return []string{"Range", "bytes=100-199"} },
			status:  http.StatusPartialContent, parts: []part{{100, 200}},
		},
		{
			name:    "a valid multi-range",
			headers: func(int, string) []string { return []string{"Range", "bytes=0-4,20-29,-7"} },
			status:  http.StatusPartialContent, parts: []part{{0, 5}, {20, 30}, {-7, 0}},
		},
		{
			name: "If-Range matching",
			headers: func(_ int, etag string) []string {
				return []string{"Range", "bytes=100-199", "If-Range", etag}
			},
			status: http.StatusPartialContent, parts: []part{{100, 200}},
		},
		{
			name: "If-Range mismatch",
			headers: func(int, string) []string {
				return []string{"Range", "bytes=100-199", "If-Range", `"stale"`}
			},
			status: http.StatusOK, parts: []part{{0, 0}},
		},
		{
			name:    "If-Match mismatch",
			headers: func(int, string) []string { return []string{"If-Match", `"stale"`} },
			status:  http.StatusPreconditionFailed, typ: "precondition-failed", param: "If-Match",
		},
	}
	for _, ep := range endpoints {
		whole := h.get(ep.path, "Accept-Encoding", "identity")
		readAll(t, whole)
		etag := whole.Header.Get("ETag")
		if whole.StatusCode != http.StatusOK || etag == "" {
			t.Fatalf("GET %s: status %d, ETag %q", ep.path, whole.StatusCode, etag)
		}
		size := len(ep.full)
		// slice resolves a part: a negative from counts from the end, and
		// to 0 means the end.
		slice := func(p part) []byte {
			from, to := p.from, p.to
			if from < 0 {
				from += size
			}
			if to <= 0 {
				to += size
			}
			return ep.full[from:to]
		}
		for _, tc := range tests {
			t.Run(ep.path+"/"+tc.name, func(t *testing.T) {
				resp := h.get(ep.path, append([]string{"Accept-Encoding", "identity"}, tc.headers(size, etag)...)...)
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.status, readAll(t, resp))
				}
				if tc.typ != "" {
					p := decodeProblem(t, resp)
					if p.Type != "/problems/"+tc.typ || p.Parameter != tc.param || int(p.Status) != tc.status || p.Title == "" || p.Detail == "" {
						t.Errorf("problem %+v, want type %s, parameter %s, status %d", p, tc.typ, tc.param, tc.status)
					}
					if cr := resp.Header.Get("Content-Range"); tc.status == http.StatusRequestedRangeNotSatisfiable && cr != fmt.Sprintf("bytes */%d", size) {
						t.Errorf("Content-Range %q, want bytes */%d", cr, size)
					}
					return
				}
				var got [][]byte
				if len(tc.parts) > 1 {
					got = readParts(t, resp)
				} else {
					got = [][]byte{readAll(t, resp)}
				}
				if len(got) != len(tc.parts) {
					t.Fatalf("%d parts, want %d", len(got), len(tc.parts))
				}
				for i, p := range tc.parts {
					if want := slice(p); !bytes.Equal(got[i], want) {
						t.Errorf("part %d: %d bytes %.40q, want %d bytes %.40q", i, len(got[i]), got[i], len(want), want)
					}
				}
			})
		}
	}
}

// readParts reads the parts of a multipart/byteranges answer.
func readParts(t *testing.T, resp *http.Response) [][]byte {
	t.Helper()
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/byteranges" {
		t.Fatalf("Content-Type %q, want multipart/byteranges", resp.Header.Get("Content-Type"))
	}
	var parts [][]byte
	mr := multipart.NewReader(resp.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, body)
	}
}
