package apivalidate

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	catalogd "github.com/catalogd/catalogd"
)

const specFile = "../../openapi.yaml"

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(specFile)
	if err != nil {
		t.Fatalf("load %s: %v", specFile, err)
	}
	// Validate checks examples against their schemas too.
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", specFile, err)
	}
	return doc
}

func TestSpecIsValid(t *testing.T) {
	doc := loadSpec(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi: %s, want 3.0.3 (what oapi-codegen supports best)", doc.OpenAPI)
	}
	file, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, catalogd.OpenAPISpec) {
		t.Error("catalogd.OpenAPISpec differs from openapi.yaml; rebuild")
	}
}

// TestSpecConventions keeps the description consistent as it grows: the
// rules every operation and schema follow, which a valid document may break.
func TestSpecConventions(t *testing.T) {
	doc := loadSpec(t)
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" || op.Summary == "" || len(op.Tags) == 0 {
				t.Errorf("%s: needs an operationId, a summary and a tag", where)
			}
			params := map[string]bool{}
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				params[p.Value.In+":"+p.Value.Name] = true
			}
			for code, r := range op.Responses.Map() {
				if len(code) == 3 && code >= "400" && op.OperationID != "getReadyz" && r.Value.Content.Get("application/problem+json") == nil {
					t.Errorf("%s: %s answer is not application/problem+json", where, code)
				}
			}
			if (strings.HasPrefix(path, "/catalogs") || strings.HasPrefix(path, "/providers")) && op.Responses.Status(400) == nil {
				t.Errorf("%s: no 400 answer for an unknown query parameter", where)
			}
			ok := op.Responses.Status(200)
			if ok == nil || ok.Value.Content.Get("application/json") == nil {
				continue
			}
			if op.Responses.Status(500) == nil {
				t.Errorf("%s: no 500 answer", where)
			}
			if strings.HasPrefix(path, "/catalogs/{catalog}") {
				if op.Responses.Status(404) == nil {
					t.Errorf("%s: no 404 answer for an unknown catalog", where)
				}
				if path != "/catalogs/{catalog}" && op.Responses.Status(503) == nil {
					t.Errorf("%s: no 503 answer for a catalog not indexed yet", where)
				}
			}
			if method != http.MethodGet {
				// A POST's answer depends on its body, which no validator
				// names: it is neither cached nor asked for conditionally.
				continue
			}
			// Every JSON GET supports conditional requests and compression.
			for _, h := range []string{"header:If-None-Match", "header:If-Modified-Since", "header:Accept-Encoding"} {
				if !params[h] {
					t.Errorf("%s: no %s parameter", where, h)
				}
			}
			if ok.Value.Headers["ETag"] == nil || ok.Value.Headers["Last-Modified"] == nil {
				t.Errorf("%s: 200 answer does not document ETag and Last-Modified", where)
			}
			if op.Responses.Status(304) == nil {
				t.Errorf("%s: no 304 answer", where)
			}
		}
	}

	for name, s := range doc.Components.Schemas {
		for prop := range s.Value.Properties {
			if !camel.MatchString(prop) {
				t.Errorf("schema %s: property %q is not camelCase", name, prop)
			}
		}
		for _, req := range s.Value.Required {
			if s.Value.Properties[req] == nil {
				t.Errorf("schema %s: required %q is not a property", name, req)
			}
		}
	}
}
