package index

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"
)

// FuzzBuild feeds arbitrary bytes to the index as a catalog file: a build
// either succeeds with a checked file or fails with an error and leaves no
// file behind; it never panics.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		string(chainCatalog("foo", 2)["foo/catalog.json"].Data),
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
	f.Add([]byte(chainCatalog("foo", 2)["foo/catalog.json"].Data))
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
