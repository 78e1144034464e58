package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

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
	store, err := store.New(t.TempDir(), funcr.New(func(string, string) {}, funcr.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var mu sync.Mutex
	var logged bytes.Buffer
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged.WriteString(args + "\n")
	}, funcr.Options{Verbosity: 1})
	reg := prometheus.NewRegistry()
	h := newHarnessWith(t, store, store)
	api, err := New(h.reg, store, Options{Log: log, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
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
