package packageapi

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDiscoveryAndOpenAPI checks what clients learn before they read:
// discovery lists packagemanifests (namespaced, get/list/watch) and its
// icon subresource, and the OpenAPI v2 and v3 documents describe
// PackageManifest with packageserver's status fields.
func TestDiscoveryAndOpenAPI(t *testing.T) {
	e := startEnv(t, map[string]testCatalog{"main": {dir: "testdata/main"}})
	get := func(t *testing.T, path string) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+e.reader)
		resp, err := insecureClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	t.Run("discovery", func(t *testing.T) {
		var rl metav1.APIResourceList
		if err := json.Unmarshal(get(t, "/apis/packages.operators.coreos.com/v1"), &rl); err != nil {
			t.Fatal(err)
		}
		found := map[string]metav1.APIResource{}
		for _, r := range rl.APIResources {
			found[r.Name] = r
		}
		pm, ok := found["packagemanifests"]
		if !ok || !pm.Namespaced || pm.Kind != "PackageManifest" || pm.SingularName != "packagemanifest" ||
			!slices.Equal(slices.Sorted(slices.Values(pm.Verbs)), []string{"get", "list", "watch"}) {
			t.Errorf("packagemanifests: %+v", pm)
		}
		if icon, ok := found["packagemanifests/icon"]; !ok || !slices.Contains(icon.Verbs, "get") {
			t.Errorf("packagemanifests/icon: %+v (found %v)", icon, ok)
		}
	})
	for _, tc := range []struct{ name, path, defs string }{
		{"OpenAPI v2", "/openapi/v2", "definitions"},
		{"OpenAPI v3", "/openapi/v3/apis/packages.operators.coreos.com/v1", "components"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(get(t, tc.path), &doc); err != nil {
				t.Fatal(err)
			}
			var defs map[string]json.RawMessage
			raw := doc[tc.defs]
			if tc.defs == "components" {
				var comps struct {
					Schemas map[string]json.RawMessage `json:"schemas"`
				}
				if err := json.Unmarshal(raw, &comps); err != nil {
					t.Fatal(err)
				}
				defs = comps.Schemas
			} else if err := json.Unmarshal(raw, &defs); err != nil {
				t.Fatal(err)
			}
			var names []string
			for name := range defs {
				if strings.Contains(name, "PackageManifestStatus") {
					names = append(names, name)
				}
			}
			if len(names) != 1 {
				t.Fatalf("definitions of PackageManifestStatus: %v", names)
			}
			for _, field := range []string{"catalogSource", "catalogSourceDisplayName", "packageName", "channels", "defaultChannel", "deprecation"} {
				if !strings.Contains(string(defs[names[0]]), `"`+field+`"`) {
					t.Errorf("%s lacks %s", names[0], field)
				}
			}
		})
	}
}
