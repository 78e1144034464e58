package stress

import (
	"fmt"
	"mime"
	"strings"
	"testing"
)

// fuzzHeaders are the request headers FuzzRawRequest sets, by index: the
// ones the API reads, one it does not, and the ones http.ServeContent reads
// (appended, so that the indexes of the seeds keep their headers).
var fuzzHeaders = []string{"Range", "If-None-Match", "If-Modified-Since", "Accept-Encoding", "Accept", "X-Fuzz", "If-Range", "If-Match", "If-Unmodified-Since"}

// FuzzRawRequest sends arbitrary request targets (path and query, sent raw,
// as no client would normalise them) with one arbitrary header value to a
// running catalogd. No answer may be a 5xx; an error the API answers is a
// problem document; net/http's own rejections of malformed requests (plain
// "400 Bad Request" and the like, an empty 400 for "*") are accepted; and the server must still be
// running afterwards. Go's fuzzer runs the seeds in `go test`; `make fuzz`
// explores further.
func FuzzRawRequest(f *testing.F) {
	srv := start(f, "--data-dir", f.TempDir(), "--catalog", "demo="+demoDir)
	srv.waitSynced(f)
	addr := strings.TrimPrefix(srv.base, "http://")
	for _, seed := range []struct {
		target string
		header uint8
		value  string
	}{
		{"/catalogs/demo/packages?limit=2&continue=x", 0, "bytes=0-10"},
		{"/catalogs/demo/api/v1/all", 0, "bytes=0-0,5-5,-3"},
		{"/catalogs/demo/api/v1/all", 1, `"abc", W/"def", *`},
		{"/catalogs/demo/api/v1/metas?schema=olm.bundle&package=aurora-cache", 3, "gzip;q=0, br"},
		{"/catalogs/%2e%2e/packages/..%2f..%2fx", 2, "Mon, 02 Jan 2006 15:04:05 GMT"},
		{"/catalogs/demo/packages/aurora-cache/upgrades?from=%ff&channel=%00", 4, "*/*"},
		{"/catalogs/demo/providers?group=a'--&version=v1&kind=K&latest=maybe", 5, "\xff\xfe"},
		{"/catalogs/demo/packages/aurora-cache/bundles?version=%3E%3D1.0.0%20%3C2&limit=0", 0, "bytes=99999999999999999999-"},
		{"//catalogs//demo/./packages", 1, ""},
		{"*", 5, "x"},
		{"/catalogs/demo/api/v1/all", 7, `"stale"`},
		{"/openapi.yaml", 8, "Mon, 02 Jan 2006 15:04:05 GMT"},
	} {
		f.Add(seed.target, seed.header, seed.value)
	}
	f.Fuzz(func(t *testing.T, target string, header uint8, value string) {
		// A CR or LF would end the request early or smuggle another one
		// in, and the fuzzer would spend its time on HTTP framing.
		if target == "" || strings.ContainsAny(target+value, "\r\n") {
			return
		}
		name := fuzzHeaders[int(header)%len(fuzzHeaders)]
		req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: catalogd\r\nConnection: close\r\n%s: %s\r\n\r\n", target, name, value)
		resp, err := rawRequest(t, addr, req)
		select {
		case <-srv.Exited:
			t.Fatalf("catalogd exited (%v) on %q", srv.ExitErr, req)
		default:
		}
		if err != nil {
			t.Fatalf("no answer to %q: %v", req, err)
		}
		if resp.status >= 500 {
			t.Fatalf("status %d to %q: %.300s", resp.status, req, resp.body)
		}
		if resp.status < 400 {
			return
		}
		mt, _, _ := mime.ParseMediaType(resp.header.Get("Content-Type"))
		switch {
		case mt == "text/plain" && strings.HasPrefix(string(resp.body), fmt.Sprint(resp.status)+" "):
			// net/http rejected the request before any handler.
		case resp.status == 400 && len(resp.body) == 0 && !strings.HasPrefix(target, "/"):
			// ServeMux's empty 400 for a target that is no path ("*").
		default:
			if msg := problemError(resp); msg != "" {
				t.Fatalf("status %d to %q: %s: %.300s", resp.status, req, msg, resp.body)
			}
		}
	})
}
