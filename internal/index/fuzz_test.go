package index

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// FuzzBuild feeds arbitrary bytes to the index as a catalog file: a build
// either succeeds with a checked file or fails with an error and leaves no
// file behind; it never panics.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		string(fbcgen.ReplacesChain("foo", 2, false)["foo/catalog.json"].Data),
		"schema: olm.package\nname: p\ndefaultChannel: c\n---\nschema: olm.channel\npackage: p\nname: c\nentries:\n- name: p.v1\n  skipRange: '>=1.0.0 <'\n",
		`{"schema":"olm.bundle","name":"b","package":"p","properties":[{"type":"olm.package","value":"not an object"}]}`,
		`{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle"}}]}`,
		`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"a","replaces":"a","skips":["a"]}]}`,
		`{"schema":"custom","Schema":"dup"}`,
		`{"name":"no schema"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "index.db")
		_, err := Build(context.Background(), path, Source{FS: fstest.MapFS{"c.yaml": {Data: data}}, Digest: "sha256:fuzz"}, time.Now())
		if _, statErr := os.Stat(path); err != nil && statErr == nil {
			t.Errorf("failed build left its file: %v", err)
		} else if err == nil && statErr != nil {
			t.Errorf("successful build has no file: %v", statErr)
		}
	})
}

// FuzzParse fuzzes the parsing stage alone (file walk, blob decoding and
// typed decoding, without SQLite, which makes FuzzBuild slow to fuzz): every
// input either parses or fails with an error, and what parses has a schema.
func FuzzParse(f *testing.F) {
	f.Add([]byte(fbcgen.ReplacesChain("foo", 2, false)["foo/catalog.json"].Data))
	f.Add([]byte("schema: olm.bundle\nname: b\nproperties:\n- type: olm.gvk\n  value: {group: g, kind: K, version: v1}\n"))
	f.Add([]byte(`{"schema":"olm.channel","entries":"not a list"}`))
	f.Add([]byte("---\n---\nschema: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = walk(context.Background(), fstest.MapFS{"a/c.json": {Data: data}, "b/c.yaml": {Data: data}}, buildLimits, func(_ context.Context, b blob) error {
			if b.meta.Schema == "" {
				t.Errorf("blob without schema passed the parser: %q", b.meta.Blob)
			}
			return nil
		})
	})
}

// FuzzCanonicalMeta: whatever canonicalMeta encodes, operator-registry's
// Meta.UnmarshalJSON encodes to the same bytes and fields.
func FuzzCanonicalMeta(f *testing.F) {
	for _, seed := range []string{
		`{"schema":"olm.bundle","name":"b","package":"p","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}`,
		` { "z" : [ 1 , 2.50 , -0 , 1e400 , 1E-7, 12345678901234567890 ] , "a" : { "y" : null , "b" : true } , "Schema" : "s\u00e9\n<&>" } `,
		`{"schema":"x","k":"\u2028\ud800 \"\\\/","k":1}`,
		`{"SCHEMA":"x","Name":7}`,
		"{\"schema\":\"\xff\xfe\",\"é\":\"\u2029\"}",
		`{"schema":"x","a":[[[[{"b":{}}]]]],"":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := canonicalMeta(data, nil)
		if !ok {
			return
		}
		var want declcfg.Meta
		if err := want.UnmarshalJSON(data); err != nil {
			t.Fatalf("canonicalMeta encoded what operator-registry rejects (%v):\n%q", err, data)
		}
		if !bytes.Equal(got.Blob, want.Blob) || got.Schema != want.Schema || got.Package != want.Package || got.Name != want.Name {
			t.Fatalf("canonicalMeta gives %q %q %q %q\noperator-registry %q %q %q %q", got.Schema, got.Package, got.Name, got.Blob, want.Schema, want.Package, want.Name, want.Blob)
		}
	})
}

// FuzzWalkMatchesDeclcfg: a file the walk reads gives the blobs
// operator-registry's parser gives, and a file that parser rejects the
// walk rejects too.
func FuzzWalkMatchesDeclcfg(f *testing.F) {
	for _, seed := range []string{
		string(fbcgen.ReplacesChain("foo", 2, false)["foo/catalog.json"].Data),
		`{"schema":"a"}{"schema":"b"}` + "\n" + `{"schema":"c"}`,
		`{schema: a, name: flow}` + "\n---\nschema: b\n",
		`{"schema":"a"}` + "\nschema: b\n",
		`{"schema":"a"}{"schema":"b"}` + "\nschema: c\n",
		`{"schema":"a"},{"schema":"b"}`,
		`{"schema":"a","v":[1,}`,
		"schema: y\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want []string
		wantErr := declcfg.WalkMetasReader(bytes.NewReader(data), func(m *declcfg.Meta, err error) error {
			if err != nil {
				return err
			}
			if m.Schema == "" {
				return errors.New("no schema")
			}
			want = append(want, string(m.Blob))
			return nil
		})
		var got []string
		gotErr := walk(context.Background(), fstest.MapFS{"c.json": {Data: data}}, buildLimits, func(_ context.Context, b blob) error {
			got = append(got, string(b.meta.Blob))
			return nil
		})
		switch {
		case wantErr != nil && gotErr == nil:
			t.Fatalf("operator-registry rejects what the walk reads (%v):\n%q", wantErr, data)
		case wantErr == nil && gotErr != nil && strings.Contains(gotErr.Error(), "JSON value"):
			t.Fatalf("the walk rejects what operator-registry reads (%v):\n%q", gotErr, data)
		case wantErr == nil && gotErr == nil && !slices.Equal(got, want):
			t.Fatalf("the walk gives\n%q\noperator-registry\n%q", got, want)
		}
	})
}
