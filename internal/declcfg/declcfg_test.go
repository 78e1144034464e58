package declcfg_test

import (
	"bytes"
	"encoding/json"
	"testing"

	ordeclcfg "github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// upstreamMeta reads data with operator-registry's Meta, several times:
// where a blob has more than one fault, which one it reports follows Go's
// map order, so every message it gave is an answer it may give.
func upstreamMeta(data []byte) (meta ordeclcfg.Meta, messages map[string]bool) {
	messages = map[string]bool{}
	for range 8 {
		var m ordeclcfg.Meta
		if err := m.UnmarshalJSON(data); err != nil {
			messages[err.Error()] = true
			continue
		}
		meta = m
	}
	return meta, messages
}

// checkMeta compares Meta.UnmarshalJSON with operator-registry's on data.
func checkMeta(t *testing.T, data []byte) {
	t.Helper()
	want, wantErrs := upstreamMeta(data)
	var got declcfg.Meta
	err := got.UnmarshalJSON(data)
	switch {
	case err != nil && len(wantErrs) == 0:
		t.Fatalf("UnmarshalJSON(%q) = %v; operator-registry accepts it", data, err)
	case err == nil && len(wantErrs) > 0:
		t.Fatalf("UnmarshalJSON(%q) accepts; operator-registry says %v", data, wantErrs)
	case err != nil && !wantErrs[err.Error()]:
		t.Fatalf("UnmarshalJSON(%q) = %q; operator-registry says one of %v", data, err, wantErrs)
	case err == nil && (got.Schema != want.Schema || got.Package != want.Package || got.Name != want.Name || !bytes.Equal(got.Blob, want.Blob)):
		t.Fatalf("UnmarshalJSON(%q) = %q %q %q %q; operator-registry %q %q %q %q",
			data, got.Schema, got.Package, got.Name, got.Blob, want.Schema, want.Package, want.Name, want.Blob)
	}
}

var metaSeeds = []string{
	`{"schema":"olm.bundle","name":"b","package":"p","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}`,
	`{"Schema":"olm.package","NAME":"p","x":"<&>\u2028","n":[1.50,-0,1e21,12345678901234567890]}`,
	`{"schema":"a","Schema":"b"}`,
	`{"name":"a","Name":"b","NAME":"c","package":"p","PACKAGE":"q"}`,
	`{"schema":1}`,
	`{"schema":"s","name":["x"],"package":{"a":1}}`,
	`{"schema":"s","name":null}`,
	`{"ſchema":"long s folds to s"}`,
	`{"K":"kelvin sign","k":"k"}`,
	`[]`,
	`"schema"`,
	`{"schema":"s",}`,
	`{"schema":"s"`,
	`{"a":1,"a":2}`,
	``,
}

// TestMetaMatchesOperatorRegistry: a blob is accepted or refused as
// operator-registry's declcfg.Meta does, with its message, and an accepted
// one gives the same schema, package, name and encoding.
func TestMetaMatchesOperatorRegistry(t *testing.T) {
	for _, seed := range metaSeeds {
		t.Run(seed, func(t *testing.T) { checkMeta(t, []byte(seed)) })
	}
}

func FuzzMetaMatchesOperatorRegistry(f *testing.F) {
	for _, seed := range metaSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(checkMeta)
}

// FuzzTypesMatchOperatorRegistry: each schema's blob decodes into this
// package's type exactly when it decodes into operator-registry's, to the
// same values (compared through their JSON).
func FuzzTypesMatchOperatorRegistry(f *testing.F) {
	for _, seed := range []string{
		`{"schema":"olm.package","name":"p","defaultChannel":"stable","icon":{"base64data":"aGk=","mediatype":"image/png"},"description":"d","properties":[{"type":"t","value":1}]}`,
		`{"schema":"olm.package","name":"p","icon":{"base64data":"not base64!"}}`,
		`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"b","replaces":"a","skips":["z"],"skipRange":"<1.0.0"}]}`,
		`{"schema":"olm.bundle","name":"b","package":"p","image":"i","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}],"relatedImages":[{"name":"n","image":"i"}]}`,
		`{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"b"},"message":"m"}]}`,
		`{"entries":"not a list","properties":{}}`,
		`{"Name":"cased","IMAGE":"x","csvJson":"dropped","objects":["dropped"]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pairs := []struct {
			name      string
			got, want any
		}{
			{"olm.package", &declcfg.Package{}, &ordeclcfg.Package{}},
			{"olm.channel", &declcfg.Channel{}, &ordeclcfg.Channel{}},
			{"olm.bundle", &declcfg.Bundle{}, &ordeclcfg.Bundle{}},
			{"olm.deprecations", &declcfg.Deprecation{}, &ordeclcfg.Deprecation{}},
		}
		for _, p := range pairs {
			gotErr, wantErr := json.Unmarshal(data, p.got), json.Unmarshal(data, p.want)
			if (gotErr != nil) != (wantErr != nil) {
				t.Fatalf("%s %q: error %v; operator-registry's type: %v", p.name, data, gotErr, wantErr)
			}
			if gotErr != nil {
				continue
			}
			got, err := json.Marshal(p.got)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(p.want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %q decodes to\n%s\noperator-registry's type to\n%s", p.name, data, got, want)
			}
		}
	})
}
