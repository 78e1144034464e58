package graphqlapi_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/graphqlapi"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
)

// serve indexes the catalog in dir and returns a Service and the index
// to query.
func serve(t testing.TB, st *store.Store, name, dir string, limits graphqlapi.Limits) (*graphqlapi.Service, graphqlapi.Index) {
	t.Helper()
	if _, _, _, err := st.Update(context.Background(), name, index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:" + name}); err != nil {
		t.Fatal(err)
	}
	snap, err := st.Acquire(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(snap.Release)
	return graphqlapi.New(logr.Discard(), limits), graphqlapi.Index{Catalog: name, Path: snap.Info.Path, Reader: snap.Catalog}
}

// oddCatalog holds what a plain query must answer as graphql-go does:
// keys repeated, keys that name one field, escapes and HTML in strings,
// floats, arrays of scalars, elements that are no objects, and objects
// that lack fields.
var oddCatalog = strings.Join([]string{
	`{"schema":"olm.package","name":"p","defaultChannel":"stable","description":"<b>\"quoted\"</b> & \u2028 line\nnext","icon":{"mediatype":"image/svg+xml","base64data":"PHN2Zz4="}}`,
	`{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1"},{"name":"p.v2","replaces":"p.v1","skip-range":"<2.0.0"},{"name":"p.v3","replaces":"p.v2","skipRange":">=2.0.0","skips":["p.v1","p.v2"]}]}`,
	`{"schema":"olm.channel","package":"p","name":"fast","entries":[]}`,
	`{"schema":"olm.bundle","package":"p","name":"p.v1","image":"quay.io/p@sha256:1","properties":[{"type":"olm.package","value":{"version":"1.0.0","packageName":"p"}},{"type":"x.num","value":{"f":1.5e-7,"big":12345678901234567890,"i":-0,"e":1E+2}},{"type":"x.arr","value":[1,"<&>",{"z":1,"a":2}]},{"type":"x.str","value":"\ud83d\ude00 \u00e9"}]}`,
	`{"schema":"olm.bundle","package":"p","name":"p.v2","image":"quay.io/p@sha256:2","properties":[{"type":"x.null","value":null},{"type":"x.bool","value":true}],"relatedImages":[{"name":"op","image":"quay.io/op"}]}`,
	`{"schema":"acme.io/widget","package":"p","name":"w","tags":["a"],"ratio":2,"parts":[{"part-no":7,"label":"bolt","partNo":8},{"label":"nut","weight":1.5,"part_no":1,"part-no":2},null,"oops",[1],{"label":"dup","label":"last","weight":2}]}`,
	`{"schema":"acme.io/widget","package":"p","name":"v","ratio":0.5,"parts":"not an array","meta":{"b":[1,2],"a":"<"}}`,
	`{"schema":"acme.io/widget","package":"p","name":"u","parts":null,"ratio":null}`,
}, "\n")

// TestPlainQueriesAnswerAsGraphQLGo checks fast.go against graphql-go:
// each query is answered through both, and must be the same; the plain
// ones must be answered by fast.go, the others left to graphql-go.
func TestPlainQueriesAnswerAsGraphQLGo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(oddCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.New(t.TempDir(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	catalogs := map[string]string{"odd": dir, "demo": "../../test/testdata/demo"}
	for _, c := range []struct {
		query string
		plain bool
	}{
		{`{ olmbundles { name package image properties { type value } relatedImages { name image } } }`, true},
		{`{ olmbundles(limit: 1, offset: 1) { name } b: olmbundles(offset: -3, limit: 0) { image } }`, true},
		{`query Q { olmbundles(package: "p", name: "p.v1") { name properties { value v: type } } }`, true},
		{`{ olmchannels { name entries { name replaces skipRange } e: entries { n: name } } }`, true},
		{`{ olmpackages { name defaultChannel description icon } }`, true},
		{`{ summary { totalSchemas schemas { name totalObjects totalFields } } s: summary { t: totalSchemas } }`, true},
		{`{ acmeiowidgets(name: "u") { name ratio meta parts { partNo label } } }`, true},
		{`{ acmeiowidgets(name: "w") { name ratio meta parts { partNo label } } }`, true},
		{`{ acmeiowidgets { name parts { weight } } }`, false},
		{`{ acmeiowidgets { name ratio parts { partNo label } } }`, false},
		{`{ olmbundles(offset: 100000) { name } }`, true},
		// graphql-go's: lists of scalars it refuses, fragments, variables,
		// directives, introspection, typed questions, errors.
		{`{ olmchannels { entries { skips } } }`, false},
		{`{ acmeiowidgets { tags } }`, false},
		{`{ olmbundles { ...B } } fragment B on OlmBundle { name }`, false},
		{`{ olmbundles { ... on OlmBundle { name } } }`, false},
		{`query($n: Int) { olmbundles(limit: $n) { name } }`, false},
		{`{ olmbundles { name @include(if: true) } }`, false},
		{`{ olmbundles { __typename name } }`, false},
		{`{ __schema { queryType { name } } }`, false},
		{`{ catalog { package(name: "p") { name } } }`, false},
		{`{ olmbundles { name name } }`, false},
		{`{ olmbundles { nosuch } }`, false},
		{`{ olmbundles(limit: "x") { name } }`, false},
		{`{ olmbundles(limit: 1, limit: 2) { name } }`, false},
		{`{ olmbundles { properties } }`, false},
		{`{ olmbundles { name { x } } }`, false},
		{`{ summary(x: 1) { totalSchemas } }`, false},
		{`{ nosuch }`, false},
		{`mutation { olmbundles { name } }`, false},
	} {
		for name, dir := range catalogs {
			if name == "demo" && strings.Contains(c.query, "acme") {
				continue
			}
			svc, idx := serve(t, st, name, dir, graphqlapi.DefaultLimits)
			req := graphqlapi.Request{Query: c.query}
			got, err := json.Marshal(svc.Execute(context.Background(), idx, req))
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(svc.ExecuteGraphQLGo(context.Background(), idx, req))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s: %s:\n got %s\nwant %s", name, c.query, got, want)
			}
			if plain := svc.AnsweredPlain(context.Background(), idx, req); plain != c.plain {
				t.Errorf("%s: %s: answered plain %v, want %v", name, c.query, plain, c.plain)
			}
		}
	}
}

// TestPlainQueriesBounded checks that a plain query reaching a bound is
// answered as graphql-go answers it: the bound's error.
func TestPlainQueriesBounded(t *testing.T) {
	st, err := store.New(t.TempDir(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		limits graphqlapi.Limits
		want   string
	}{
		{graphqlapi.Limits{Depth: 10, Aliases: 50, Fields: 500, Objects: 3, Bytes: 64 << 20, Time: graphqlapi.DefaultLimits.Time}, "query exceeds the bound of 3 catalog objects read"},
		{graphqlapi.Limits{Depth: 10, Aliases: 50, Fields: 500, Objects: 1000, Bytes: 1 << 10, Time: graphqlapi.DefaultLimits.Time}, "query exceeds the bound of 0 MiB of result data"},
	} {
		svc, idx := serve(t, st, "demo", "../../test/testdata/demo", c.limits)
		res := svc.Execute(context.Background(), idx, graphqlapi.Request{Query: `{ olmbundles { name properties { type value } } }`})
		if len(res.Errors) != 1 || res.Errors[0].Message != c.want {
			t.Errorf("limits %+v: errors %v, want %q", c.limits, res.Errors, c.want)
		}
	}
}
