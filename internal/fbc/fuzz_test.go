package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	catalogddecl "github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// FuzzParse fuzzes the reader alone (file walk, blob decoding and typed
// decoding, without SQLite, which makes index.FuzzBuild slow to fuzz): every
// input either parses or fails with an error, and what parses has a schema
// and a position in its file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(fbcgen.ReplacesChain("foo", 2, false)["foo/catalog.json"].Data))
	f.Add([]byte("schema: olm.bundle\nname: b\nproperties:\n- type: olm.gvk\n  value: {group: g, kind: K, version: v1}\n"))
	f.Add([]byte(`{"schema":"olm.channel","entries":"not a list"}`))
	f.Add([]byte("---\n---\nschema: x\n"))
	for _, seed := range fbcgen.BombSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Walk(context.Background(), fstest.MapFS{"a/c.json": {Data: data}, "b/c.yaml": {Data: data}}, Limits{}, func(_ context.Context, b Blob) error {
			if b.Meta.Schema == "" {
				t.Errorf("blob without schema passed the parser: %q", b.Meta.Blob)
			}
			if lines := bytes.Count(data, []byte("\n")) + 1; b.Pos.Line < 1 || b.Pos.Line > lines || b.Pos.Column < 1 || b.Pos.Column > len(data) {
				t.Errorf("blob at %s, outside the file of %d lines and %d bytes", b.Pos, lines, len(data))
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
// operator-registry's parser gives, and the walk rejects a file exactly
// when that parser does. The parser is what declcfg.LoadFS runs: its walk
// of metas, then the typed decoding of the schemas it knows (loadTyped).
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
	for _, seed := range fbcgen.BombSeeds() {
		f.Add(seed)
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
			if err := loadTyped(m); err != nil {
				return err
			}
			want = append(want, string(m.Blob))
			return nil
		})
		var got []string
		gotErr := Walk(context.Background(), fstest.MapFS{"c.json": {Data: data}}, Limits{}, func(_ context.Context, b Blob) error {
			got = append(got, string(b.Meta.Blob))
			return nil
		})
		switch {
		case wantErr != nil && gotErr == nil:
			t.Fatalf("operator-registry rejects what the walk reads (%v):\n%q", wantErr, data)
		case wantErr == nil && gotErr != nil:
			t.Fatalf("the walk rejects what operator-registry reads (%v):\n%q", gotErr, data)
		case wantErr == nil && gotErr == nil && !slices.Equal(got, want):
			t.Fatalf("the walk gives\n%q\noperator-registry\n%q", got, want)
		}
	})
}

// loadTyped decodes a meta of a schema operator-registry knows into its
// type, as declcfg.LoadFS does after its walk, which is where a blob of the
// wrong shape (a defaultChannel that is a list) is rejected.
func loadTyped(m *declcfg.Meta) error {
	var v any
	switch m.Schema {
	case declcfg.SchemaPackage:
		v = &declcfg.Package{}
	case declcfg.SchemaChannel:
		v = &declcfg.Channel{}
	case declcfg.SchemaBundle:
		v = &declcfg.Bundle{}
	case declcfg.SchemaDeprecation:
		v = &declcfg.Deprecation{}
	default:
		return nil
	}
	return json.Unmarshal(m.Blob, v)
}

// FuzzKnownMatchesWalk: a walk whose FileHooks.Known recognises blobs
// gives the blobs, positions and errors of a walk without it, in the same
// files, and leaves exactly the recognised blobs undecoded. Known answers,
// as an index build's does, only for blobs that decode (the ones an index
// held before), here every other one.
func FuzzKnownMatchesWalk(f *testing.F) {
	for _, seed := range []string{
		string(fbcgen.ReplacesChain("foo", 3, false)["foo/catalog.json"].Data),
		`{"schema":"a"}{"schema":"b"}` + "\n" + `{"schema":"c"}`,
		`{"schema":"a"}` + "\nschema: b\n",
		`{"schema":"olm.channel","entries":"not a list"}{"schema":"x"}`,
		"schema: olm.bundle\nname: b\n---\nschema: x\n",
		`{"schema":"a","n":"1"}{"schema":"a","n":"2"}{"schema":"a","n":"3"}{"schema":"a","n":"45"}{"schema":"a","n":"6"}`,
	} {
		f.Add([]byte(seed))
	}
	type seen struct {
		blob, pos string
		known     bool
	}
	walk := func(data []byte, known func(*catalogddecl.Meta) any) ([]seen, error) {
		var out []seen
		fsys := fstest.MapFS{"a/c.json": {Data: data}, "b/c.yaml": {Data: data}}
		err := WalkFiles(context.Background(), fsys, Limits{}, nil, FileHooks{Known: known, Blob: func(_ context.Context, b Blob) error {
			s := seen{string(b.Meta.Blob), b.Pos.String(), b.Known != nil}
			if s.known {
				if b.Value != nil || b.ValueStarts != nil || b.Meta.Blob != nil {
					return fmt.Errorf("blob known as %q with value %v, bytes %q", b.Known, b.Value, b.Meta.Blob)
				}
				// Known answered with the blob's bytes.
				s.blob = b.Known.(string)
			}
			out = append(out, s)
			return nil
		}})
		return out, err
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := walk(data, nil)
		n := 0
		got, gotErr := walk(data, func(m *catalogddecl.Meta) any {
			if _, _, err := decodeValue(m); err != nil {
				return nil
			}
			if n++; n%2 == 0 {
				return nil
			}
			return string(m.Blob)
		})
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("with Known the walk fails with %v, without %v:\n%q", gotErr, wantErr, data)
		}
		if len(got) != len(want) {
			t.Fatalf("with Known the walk gives %d blobs, without %d:\n%q", len(got), len(want), data)
		}
		for i := range got {
			if got[i].blob != want[i].blob || got[i].pos != want[i].pos || want[i].known {
				t.Fatalf("blob %d is %q at %s with Known, %q at %s without:\n%q", i, got[i].blob, got[i].pos, want[i].blob, want[i].pos, data)
			}
		}
	})
}
