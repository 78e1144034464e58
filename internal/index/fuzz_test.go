package index

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

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
	for _, seed := range fbcgen.BombSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "index.db")
		_, err := Build(context.Background(), path, Content{FS: fstest.MapFS{"c.yaml": {Data: data}}, Digest: "sha256:fuzz"}, time.Now())
		if _, statErr := os.Stat(path); err != nil && statErr == nil {
			t.Errorf("failed build left its file: %v", err)
		} else if err == nil && statErr != nil {
			t.Errorf("successful build has no file: %v", statErr)
		}
	})
}

// FuzzParse fuzzes the parsing stage alone (file walk, blob decoding and
