package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	catalogd "github.com/catalogd/catalogd"
)

// TestQueryParametersMatchSpec checks that every endpoint accepts exactly
// the query parameters openapi.yaml declares for it: the router's lists are
// typed by hand, and a parameter added to one but not the other would be
// either refused or undocumented. Each endpoint is sent a parameter nobody
// declares; the problem it answers lists the parameters it accepts.
func TestQueryParametersMatchSpec(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(catalogd.OpenAPISpec)
	if err != nil {
		t.Fatal(err)
	}
	// Path parameters take any valid value: parameters are checked first.
	pathValues := strings.NewReplacer("{catalog}", "demo", "{package}", "p", "{channel}", "c", "{bundle}", "b")
	// Left to internal/server, or answering without checking parameters:
	// the spec is a static file.
	notHere := []string{"/healthz", "/readyz", "/openapi.yaml"}
	h := newHarness(t)
	checked := 0
	for path, item := range doc.Paths.Map() {
		if item.Get == nil || slices.Contains(notHere, path) {
			continue
		}
		var want []string
		for _, p := range slices.Concat(item.Parameters, item.Get.Parameters) {
			if p.Value.In == openapi3.ParameterInQuery {
				want = append(want, p.Value.Name)
			}
		}
		sort.Strings(want)
		resp := h.get(pathValues.Replace(path) + "?undeclared-parameter=1")
		var problem struct{ Type, Detail, Parameter string }
		if err := json.NewDecoder(resp.Body).Decode(&problem); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if resp.StatusCode != http.StatusBadRequest || problem.Type != "/problems/unknown-parameter" || problem.Parameter != "undeclared-parameter" {
			t.Errorf("%s: status %d, problem %+v; want the undeclared parameter refused", path, resp.StatusCode, problem)
			continue
		}
		_, accepted, _ := strings.Cut(problem.Detail, "this endpoint accepts: ")
		var got []string
		if accepted != "none" {
			got = strings.Split(accepted, ", ")
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s accepts %v; openapi.yaml declares %v", path, got, want)
		}
		checked++
	}
	if checked < 14 {
		t.Errorf("only %d endpoints checked", checked)
	}
}
