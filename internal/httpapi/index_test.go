package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/catalogd/catalogd/client"
)

// TestIndexLinksWork follows every link of GET /, resolved as a browser
// would against the index's own URL, under the root and under a path
// prefix as the Kubernetes API server's service proxy adds one.
func TestIndexLinksWork(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	resp := h.get("/")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" {
		t.Fatalf("GET /: %d, ETag %q", resp.StatusCode, resp.Header.Get("ETag"))
	}
	var index client.APIIndex
	if err := json.NewDecoder(resp.Body).Decode(&index); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"http://server/", "http://apiserver/api/v1/namespaces/ns/services/https:catalogd-service:443/proxy/"} {
		for name, link := range map[string]string{"catalogs": index.Catalogs, "openapi": index.Openapi} {
			b, _ := url.Parse(base)
			ref, err := url.Parse(link)
			if err != nil {
				t.Fatalf("%s link %q: %v", name, link, err)
			}
			abs := b.ResolveReference(ref)
			if abs.Host != b.Host || len(abs.Path) <= len(b.Path) || abs.Path[:len(b.Path)] != b.Path {
				t.Errorf("%s link %q resolves to %s, outside %s", name, link, abs, base)
			}
			if resp := h.get("/" + abs.Path[len(b.Path):]); resp.StatusCode != http.StatusOK {
				t.Errorf("%s link %q: %d", name, link, resp.StatusCode)
			}
		}
	}
	if resp := h.get("/?x=1"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /?x=1: %d, want 400", resp.StatusCode)
	}
}
