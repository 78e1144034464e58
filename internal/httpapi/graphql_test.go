package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// gqlAnswer is the GraphQL envelope, as catalogd encodes it.
type gqlAnswer struct {
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

func (h *harness) graphql(catalog, q string) gqlAnswer {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"query": q})
	resp := h.post("/catalogs/"+catalog+"/api/v1/graphql", body)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("%s: status %d: %s", q, resp.StatusCode, readAll(h.t, resp))
	}
	var out gqlAnswer
	if err := json.Unmarshal(readAll(h.t, resp), &out); err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *harness) post(path string, body []byte) *http.Response {
	h.t.Helper()
	resp, err := h.http.Post(h.srv.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// fbcObjects reads the blobs of a JSON catalog directory as catalogd walks
// it (files in lexical order, objects in file order), decoded as
// encoding/json decodes them.
func fbcObjects(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err == io.EOF {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out = append(out, obj)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// allObjects reads the blobs of a catalog from its /api/v1/all stream (for
// YAML catalogs; the stream is compared with catalogd's elsewhere).
func allObjects(t *testing.T, h *harness, catalog string) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(readAll(t, h.get("/catalogs/"+catalog+"/api/v1/all"))))
	var out []map[string]any
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, obj)
	}
}

// sel is a selection of a test query: a key selected as a leaf (nil) or a
// nested list with its own leaves.
type sel map[string][]string

// leaf is a value as catalogd answers a scalar field: objects and arrays
// as their JSON text (encoding/json's, as catalogd marshals them).
func leaf(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return v
}

// expectList is catalogd's answer to a list field of schema with the
// given paging, computed from the objects.
func expectList(objs []map[string]any, schema string, offset, limit int, s sel, filter func(map[string]any) bool) []any {
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	offset = max(offset, 0)
	var of []map[string]any
	for _, o := range objs {
		if o["schema"] == schema && (filter == nil || filter(o)) {
			of = append(of, o)
		}
	}
	out := []any{}
	for i := offset; i < len(of) && i < offset+limit; i++ {
		row := map[string]any{}
		for k, sub := range s {
			if sub == nil {
				row[k] = leaf(of[i][k])
				continue
			}
			arr, _ := of[i][k].([]any)
			if arr == nil {
				row[k] = nil
				continue
			}
			items := []any{}
			for _, e := range arr {
				em, _ := e.(map[string]any)
				item := map[string]any{}
				for _, sk := range sub {
					item[sk] = leaf(em[sk])
				}
				items = append(items, item)
			}
			row[k] = items
		}
		out = append(out, row)
	}
	return out
}

func (s sel) String() string {
	var parts []string
	for k, sub := range s {
		if sub == nil {
			parts = append(parts, k)
		} else {
			parts = append(parts, k+" { "+strings.Join(sub, " ")+" }")
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// normalise makes a decoded answer comparable with an expectation built of
// Go values: numbers as float64, through JSON.
func normalise(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func firstOf(objs []map[string]any, schema, key string) string {
	for _, o := range objs {
		if o["schema"] == schema {
			if s, ok := o[key].(string); ok {
				return s
			}
		}
	}
	return ""
}

// checkCatalog asks catalog the list queries a catalogd client asks and
// compares every answer with catalogd's rules applied to objs.
func checkCatalog(t *testing.T, h *harness, catalog string, objs []map[string]any) int {
	pkg := firstOf(objs, "olm.bundle", "package")
	bundle := firstOf(objs, "olm.bundle", "name")
	cases := []struct {
		field, schema, args string
		offset, limit       int
		s                   sel
		filter              func(map[string]any) bool
	}{
		{"olmpackages", "olm.package", "", 0, 100, sel{"name": nil, "defaultChannel": nil, "description": nil, "icon": nil}, nil},
		{"olmpackages", "olm.package", "(limit: 2, offset: 1)", 1, 2, sel{"name": nil, "schema": nil}, nil},
		{"olmbundles", "olm.bundle", "(limit: 5)", 0, 5, sel{"name": nil, "package": nil, "image": nil}, nil},
		{"olmbundles", "olm.bundle", "(limit: 3, offset: 7)", 7, 3, sel{"name": nil, "properties": {"type", "value"}}, nil},
		{"olmbundles", "olm.bundle", "(limit: 2, offset: 1)", 1, 2, sel{"relatedImages": {"name", "image"}}, nil},
		{"olmbundles", "olm.bundle", "(offset: 99)", 99, 100, sel{"name": nil}, nil},
		{"olmchannels", "olm.channel", "", 0, 100, sel{"name": nil, "package": nil, "entries": {"name", "replaces", "skipRange"}}, nil},
		{"olmchannels", "olm.channel", "(offset: 10)", 10, 100, sel{"name": nil}, nil},
		{"olmchannels", "olm.channel", "(limit: 0)", 0, 0, sel{"name": nil}, nil},
		{"olmchannels", "olm.channel", "(limit: 1000)", 0, 1000, sel{"name": nil}, nil},
		{"olmchannels", "olm.channel", "(offset: -5, limit: -1)", -5, -1, sel{"name": nil}, nil},
		{"olmchannels", "olm.channel", "(offset: 2000000000)", 2000000000, 100, sel{"name": nil}, nil},
		{"olmbundles", "olm.bundle", fmt.Sprintf("(package: %q)", pkg), 0, 100, sel{"name": nil, "package": nil},
			func(o map[string]any) bool { return o["package"] == pkg }},
		{"olmbundles", "olm.bundle", fmt.Sprintf("(name: %q)", bundle), 0, 100, sel{"name": nil, "properties": {"type"}},
			func(o map[string]any) bool { return o["name"] == bundle }},
		{"olmchannels", "olm.channel", fmt.Sprintf("(package: %q, limit: 2, offset: 1)", pkg), 1, 2, sel{"name": nil},
			func(o map[string]any) bool { return o["package"] == pkg }},
	}
	if firstOf(objs, "olm.deprecations", "package") != "" {
		cases = append(cases, struct {
			field, schema, args string
			offset, limit       int
			s                   sel
			filter              func(map[string]any) bool
		}{"olmdeprecationss", "olm.deprecations", "", 0, 100, sel{"package": nil, "entries": {"message", "reference"}}, nil})
	}
	for _, c := range cases {
		q := fmt.Sprintf("{ %s%s { %s } }", c.field, c.args, c.s)
		got := h.graphql(catalog, q)
		if len(got.Errors) > 0 {
			t.Errorf("%s: errors %v", q, got.Errors)
			continue
		}
		want := normalise(t, map[string]any{c.field: expectList(objs, c.schema, c.offset, c.limit, c.s, c.filter)})
		if !reflect.DeepEqual(normalise(t, got.Data), want) {
			t.Errorf("%s:\n got %.600v\nwant %.600v", q, normalise(t, got.Data), want)
		}
	}

	// Aliases, fragments, __typename: the same objects, however asked.
	page := expectList(objs, "olm.bundle", 0, 2, sel{"name": nil}, nil)
	page2 := expectList(objs, "olm.bundle", 2, 2, sel{"name": nil}, nil)
	for q, want := range map[string]map[string]any{
		`{ a: olmbundles(limit: 2) { name } b: olmbundles(limit: 2, offset: 2) { name } }`: {"a": page, "b": page2},
		`query Q { olmbundles(limit: 2) { ...B } } fragment B on OlmBundle { name }`:       {"olmbundles": page},
		`{ olmbundles(limit: 2) { ... on OlmBundle { name } } }`:                           {"olmbundles": page},
	} {
		got := h.graphql(catalog, q)
		if len(got.Errors) > 0 || !reflect.DeepEqual(normalise(t, got.Data), normalise(t, want)) {
			t.Errorf("%s: got %v %v, want %v", q, got.Data, got.Errors, want)
		}
	}
	got := h.graphql(catalog, `{ olmpackages(limit: 1) { __typename } }`)
	if tn := normalise(t, got.Data); !reflect.DeepEqual(tn, normalise(t, map[string]any{"olmpackages": []any{map[string]any{"__typename": "OlmPackage"}}})) {
		t.Errorf("__typename: %v", tn)
	}

	// summary: each schema's objects and distinct keys (these catalogs'
	// keys are GraphQL names already, so each key is a field).
	type sum struct {
		objects int
		keys    map[string]bool
	}
	sums := map[string]*sum{}
	for _, o := range objs {
		s, _ := o["schema"].(string)
		if sums[s] == nil {
			sums[s] = &sum{keys: map[string]bool{}}
		}
		sums[s].objects++
		for k := range o {
			sums[s].keys[fieldNameOf(k)] = true
		}
	}
	var wantSchemas []any
	for name, s := range sums {
		wantSchemas = append(wantSchemas, map[string]any{"name": name, "totalObjects": s.objects, "totalFields": len(s.keys)})
	}
	sort.Slice(wantSchemas, func(i, j int) bool {
		return wantSchemas[i].(map[string]any)["name"].(string) < wantSchemas[j].(map[string]any)["name"].(string)
	})
	got = h.graphql(catalog, `{ summary { totalSchemas schemas { name totalObjects totalFields } } }`)
	want := normalise(t, map[string]any{"summary": map[string]any{"totalSchemas": len(sums), "schemas": wantSchemas}})
	gotSum := normalise(t, got.Data)
	// catalogd lists the schemas in no order; we list them by name.
	if !reflect.DeepEqual(gotSum, want) {
		t.Errorf("summary:\n got %v\nwant %v", gotSum, want)
	}
	return len(cases) + 5
}

// fieldNameOf is catalogd's field name of the keys the test catalogs use:
// identifiers stay, "-" and "." separate camelCase words.
func fieldNameOf(k string) string {
	parts := strings.FieldsFunc(k, func(r rune) bool { return r == '-' || r == '.' || r == '_' })
	if len(parts) <= 1 {
		return k
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
	}
	return out
}

func TestGraphQLAnswersAsCatalogd(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	// The demo catalog has YAML files: its blobs come from /api/v1/all.
	n := checkCatalog(t, h, "demo", allObjects(t, h, "demo"))

	gen := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), gen, fbcgen.Options{Packages: 4, BundlesPerPackage: 30, Icons: true, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	h.add("gen", gen, 0)
	n += checkCatalog(t, h, "gen", fbcObjects(t, gen))

	const community = "../../../shared/catalogs/community-v4.20"
	if _, err := os.Stat(community); err != nil {
		t.Logf("community-v4.20 is absent (%v): its part is skipped", err)
	} else {
		h.add("community", community, 0)
		n += checkCatalog(t, h, "community", allObjects(t, h, "community"))
	}
	if n < 20 {
		t.Errorf("only %d queries checked", n)
	}
}
