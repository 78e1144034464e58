package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/graphqlapi"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
)

// writeGraphQLCatalog writes a one-file JSON catalog of blobs into a new directory.
func writeGraphQLCatalog(t *testing.T, blobs ...string) string {
	t.Helper()
	dir := t.TempDir()
	base := `{"schema":"olm.package","name":"p","defaultChannel":"c"}
{"schema":"olm.channel","package":"p","name":"c","entries":[{"name":"p.v1"}]}
{"schema":"olm.bundle","package":"p","name":"p.v1","image":"i","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
`
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(base+strings.Join(blobs, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGraphQLCustomSchemas checks catalogd's naming and typing rules on a
// custom schema, each expectation written from the rule it follows.
func TestGraphQLCustomSchemas(t *testing.T) {
	h := newHarness(t)
	h.add("custom", writeGraphQLCatalog(t,
		`{"schema":"acme.io/widget-v2","package":"p","name":"w1","skip-range":">=1.0.0","ABC_def":"x","3d":true,"size":3,"ratio":0.5,"meta":{"a":1},"tags":["a","b"],"parts":[{"part-no":7,"label":"bolt"},{"label":"nut","weight":1.5}]}`,
		`{"schema":"acme.io/widget-v2","package":"p","name":"w2","size":4,"ratio":2}`,
	), 0)
	got := h.graphql("custom", `{ acmeiowidgetv2s { name skipRange abcDef field_3d size ratio meta tags parts { partNo label weight } } }`)
	want := map[string]any{"acmeiowidgetv2s": []any{
		// Keys become camelCase names; an object answers its JSON text; a
		// number is Int when the first seen is integral, Float otherwise.
		map[string]any{"name": "w1", "skipRange": ">=1.0.0", "abcDef": "x", "field_3d": true, "size": 3.0, "ratio": 0.5,
			// An array of scalars is typed a list but answered as its JSON
			// text, which graphql-go refuses: null and an error, as catalogd.
			"meta": `{"a":1}`, "tags": nil,
			"parts": []any{map[string]any{"partNo": 7.0, "label": "bolt", "weight": nil}, map[string]any{"partNo": nil, "label": "nut", "weight": 1.5}}},
		map[string]any{"name": "w2", "skipRange": nil, "abcDef": nil, "field_3d": nil, "size": 4.0, "ratio": 2.0, "meta": nil, "tags": nil, "parts": nil},
	}}
	if len(got.Errors) != 1 || got.Errors[0].Message != "User Error: expected iterable, but did not find one for field AcmeIoWidgetV2.tags." ||
		!reflect.DeepEqual(normalise(t, got.Data), normalise(t, want)) {
		t.Errorf("custom schema:\n got %v %v\nwant %v", got.Data, got.Errors, want)
	}
	typ := h.graphql("custom", `{ __type(name: "AcmeIoWidgetV2") { name } }`)
	if !reflect.DeepEqual(normalise(t, typ.Data), normalise(t, map[string]any{"__type": map[string]any{"name": "AcmeIoWidgetV2"}})) {
		t.Errorf("type name: %v %v", typ.Data, typ.Errors)
	}

	// Schemas catalogd refuses: two with one type name, two with one list field.
	for _, c := range []struct{ a, b, msg string }{
		{"acme.widget", "acme-widget", `type name collision: schemas "acme-widget" and "acme.widget" both sanitize to GraphQL type "AcmeWidget"`},
		{"ab.c", "a.bc", `query field collision: schemas "a.bc" and "ab.c" both map to field "abcs"`},
	} {
		name := strings.NewReplacer(".", "", "-", "").Replace(c.a) + "x"
		h.add(name, writeGraphQLCatalog(t, fmt.Sprintf(`{"schema":%q,"name":"one"}`, c.a), fmt.Sprintf(`{"schema":%q,"name":"two"}`, c.b)), 0)
		got := h.graphql(name, `{ summary { totalSchemas } }`)
		if got.Data != nil || len(got.Errors) != 1 || !strings.Contains(got.Errors[0].Message, c.msg) {
			t.Errorf("%s and %s: got %v %v, want the error %q", c.a, c.b, got.Data, got.Errors, c.msg)
		}
	}
}

// TestGraphQLBounds sends hostile queries: each is answered 200 with a
// GraphQL error naming the bound it exceeded, or a 400 for a request over
// catalogd's size limits.
func TestGraphQLBounds(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	deep := "{ olmbundles { properties " + strings.Repeat("{ a ", 10) + strings.Repeat("} ", 10) + "} }"
	var aliases, fields strings.Builder
	for i := range 51 {
		fmt.Fprintf(&aliases, "a%d: olmbundles { name } ", i)
	}
	for range 501 {
		fields.WriteString("name ")
	}
	for q, want := range map[string]string{
		deep:                          "query exceeds maximum depth of 10",
		"{ " + aliases.String() + "}": "query exceeds maximum alias count of 50",
		"{ olmbundles { " + fields.String() + "} }": "query exceeds maximum field count of 500",
	} {
		got := h.graphql("demo", q)
		if len(got.Errors) != 1 || got.Errors[0].Message != want {
			t.Errorf("%.60s...: got %v, want %q", q, got.Errors, want)
		}
	}
	// A huge offset reads nothing; a huge limit is 100.
	if got := h.graphql("demo", `{ olmbundles(offset: 2147483647, limit: 2147483647) { name } }`); len(got.Errors) > 0 || len(got.Data["olmbundles"].([]any)) != 0 {
		t.Errorf("huge offset: %v", got)
	}
	// Text over catalogd's limits is a 400, as catalogd answers it.
	big, _ := json.Marshal(map[string]string{"query": "{ " + strings.Repeat("summary { totalSchemas } ", 5000) + "}"})
	if resp := h.post("/catalogs/demo/api/v1/graphql", big); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a giant query: status %d", resp.StatusCode)
	}
	huge := []byte(`{"query":"` + strings.Repeat(" ", 2<<20) + `"}`)
	if resp := h.post("/catalogs/demo/api/v1/graphql", huge); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a giant body: status %d", resp.StatusCode)
	}

	// The bounds of what a query reads and answers, made small so that
	// 10 aliases of a list field exceed them.
	for _, c := range []struct {
		limits graphqlapi.Limits
		want   string
	}{
		{graphqlapi.Limits{Depth: 10, Aliases: 50, Fields: 500, Objects: 50, Bytes: 1 << 30, Time: time.Minute}, "query exceeds the bound of 50 catalog objects read"},
		{graphqlapi.Limits{Depth: 10, Aliases: 50, Fields: 500, Objects: 1 << 20, Bytes: 1 << 20, Time: time.Minute}, "query exceeds the bound of 1 MiB of result data"},
		{graphqlapi.Limits{Depth: 10, Aliases: 50, Fields: 500, Objects: 1 << 20, Bytes: 1 << 30, Time: time.Nanosecond}, "query exceeds the time bound of 1ns"},
	} {
		srv := newHarness(t)
		srv.add("demo", demoDir, 0)
		srv.srv.Config.Handler = New(srv.reg, srv.store, Options{Log: testr.New(t), GraphQLLimits: c.limits})
		var q strings.Builder
		q.WriteString("{ ")
		for i := range 10 {
			fmt.Fprintf(&q, "a%d: olmbundles { name properties { type value } } ", i)
		}
		q.WriteString("}")
		got := srv.graphql("demo", q.String())
		if len(got.Errors) != 1 || got.Errors[0].Message != c.want {
			t.Errorf("bound %q: got errors %v", c.want, got.Errors)
		}
	}
}

// FuzzGraphQLRequest sends arbitrary bodies: every answer is a 200
// GraphQL envelope or a 4xx problem, never a 5xx.
func FuzzGraphQLRequest(f *testing.F) {
	for _, s := range []string{`{"query":"{ summary { totalSchemas } }"}`, `{"query":"{ olmbundles(limit: 1) { name } }","variables":{"a":1}}`,
		`{"query":"query($n: String) { olmbundles(name: $n) { name } }","variables":{"n":"x"},"operationName":"Q"}`,
		`{"query":""}`, `{`, `[]`, `{"query":"{ olmbundles(offset: -1) { properties { value } } }"}`, `{"query":"{ catalog { package(name: \"aurora-cache\") { channels { head { name } } } } }"}`} {
		f.Add([]byte(s))
	}
	indexes, err := store.New(f.TempDir(), logr.Discard())
	if err != nil {
		f.Fatal(err)
	}
	defer indexes.Close()
	reg := catalogs.NewTable()
	reg.MarkLoaded()
	reg.Put(catalogs.Catalog{Name: "demo", Source: demoDir})
	if _, _, _, err := indexes.Update(context.Background(), "demo", index.Content{FS: os.DirFS(demoDir), Ref: demoDir, Digest: "sha256:demo"}); err != nil {
		f.Fatal(err)
	}
	srv := httptest.NewServer(New(reg, indexes, Options{Log: logr.Discard()}))
	defer srv.Close()
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := http.Post(srv.URL+"/catalogs/demo/api/v1/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%q: status %d: %s", body, resp.StatusCode, data)
		}
		if resp.StatusCode == http.StatusOK {
			var env map[string]json.RawMessage
			if err := json.Unmarshal(data, &env); err != nil {
				t.Fatalf("%q: not a GraphQL envelope: %v", body, err)
			}
			if _, ok := env["data"]; !ok {
				t.Fatalf("%q: no data member", body)
			}
		}
	})
}
