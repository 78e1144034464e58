package index

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// TestValidateModelMatchesOperatorRegistry validates broken packages with
// convertAndValidate and with operator-registry's ConvertToModel (which
// validates the model it makes). That lists channels and bundles in map
// order, so it is run until it gives convertAndValidate's report (no case
// has more than two orders) or has had ample chances to.
func TestValidateModelMatchesOperatorRegistry(t *testing.T) {
	bundle := func(name, version, extra string) string {
		return `{"schema":"olm.bundle","name":"` + name + `","package":"p","image":"example.com/p:` + version + `","properties":[` +
			`{"type":"olm.package","value":{"packageName":"p","version":"` + version + `"}}` + extra + `]}`
	}
	channel := func(name, entries string) string {
		return `{"schema":"olm.channel","name":"` + name + `","package":"p","entries":[` + entries + `]}`
	}
	three := bundle("p.v1", "1.0.0", "") + "\n" + bundle("p.v2", "2.0.0", "") + "\n" + bundle("p.v3", "3.0.0", "")
	tests := []struct {
		name    string
		catalog string
		valid   bool
	}{
		{"valid chain", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v0"}`), true},
		{"cycle below the head", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v2"}`), false},
		{"cycle of one", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v2","skips":["p.v1"]},{"name":"p.v1"}`), false},
		{"no head", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v3"}`), false},
		{"skips end the chain", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v3"},{"name":"p.v1","replaces":"p.v2","skips":["p.v3"]}`), true},
		{"two heads", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v1"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`), false},
		{"stranded", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2"},{"name":"p.v1","skips":["p.v0"]}`), false},
		{"replaces a skipped entry", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":["p.v2"]},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`), false},
		{"skipped entries are not stranded", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":["p.v1"]},{"name":"p.v2"},{"name":"p.v1"}`), true},
		{"empty skip", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":[""]},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`), false},
		{"two broken channels", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v2"}`) + "\n" +
			channel("d", `{"name":"p.v3"},{"name":"p.v2"}`), false},
		{"bundle without image, and a cycle", bundle("p.v1", "1.0.0", "") + "\n" + strings.Replace(bundle("p.v2", "2.0.0", ""), `"image":"example.com/p:2.0.0"`, `"image":""`, 1) + "\n" +
			bundle("p.v3", "3.0.0", "") + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1","skips":["p.v0",""]},{"name":"p.v1","replaces":"p.v2"}`), false},
		{"bad property", bundle("p.v1", "1.0.0", `,{"type":"olm.gvk","value":"x"}`) + "\n" + channel("c", `{"name":"p.v1"}`), false},
		{"duplicate package", three + "\n" + `{"schema":"olm.package","name":"p"}`, false},
		{"unknown package", three + "\n" + `{"schema":"olm.channel","name":"c","package":"q","entries":[]}`, false},
		{"duplicate channel", three + "\n" + channel("c", `{"name":"p.v3"}`) + "\n" + channel("c", `{"name":"p.v2"}`), false},
		{"duplicate entry", three + "\n" + channel("c", `{"name":"p.v3"},{"name":"p.v3"}`), false},
		{"duplicate bundle", three + "\n" + bundle("p.v1", "1.0.0", "") + "\n" + channel("c", `{"name":"p.v3"}`), false},
		{"bundle in no channel", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2"}`), false},
		{"entry without bundle", three + "\n" + channel("c", `{"name":"p.v4","replaces":"p.v3"},{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"},{"name":"p.v0"}`), false},
		{"bad version", bundle("p.v1", "one", "") + "\n" + channel("c", `{"name":"p.v1"}`), false},
		{"two package properties", bundle("p.v1", "1.0.0", `,{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}`) + "\n" + channel("c", `{"name":"p.v1"}`), false},
		{"default channel missing", three + "\n" + channel("d", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`), false},
		{"deprecation of a missing bundle", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`) + "\n" +
			`{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"p.v9"},"message":"m"}]}`, false},
		{"deprecation of an unknown schema", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`) + "\n" +
			`{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.other","name":"x"},"message":"m"}]}`, false},
		{"duplicate versions", bundle("p.v1", "1.0.0", "") + "\n" + bundle("p.v1a", "1.0.0", "") + "\n" + bundle("p.v2", "2.0.0+b", "") + "\n" + bundle("p.v2a", "2.0.0+b", "") + "\n" +
			channel("c", `{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`) + "\n" + channel("d", `{"name":"p.v2a","replaces":"p.v1a"},{"name":"p.v1a"}`), false},
		{"deprecation without message", three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`) + "\n" +
			`{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.channel","name":"c"}},{"reference":{"schema":"olm.bundle","name":"p.v1"},"message":"m"}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			catalog := `{"schema":"olm.package","name":"p","defaultChannel":"c"}` + "\n" + tt.catalog
			cfg, err := declcfg.LoadFS(context.Background(), fstest.MapFS{"c.json": {Data: []byte(catalog)}})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := convertAndValidate(*cfg); err != nil {
				got = err.Error()
			}
			if tt.valid != (got == "") {
				t.Fatalf("valid = %v, want %v: %s", got == "", tt.valid, got)
			}
			var theirs []string
			for range 64 {
				var want string
				if _, err := declcfg.ConvertToModel(*cfg); err != nil {
					want = err.Error()
				}
				if want == got {
					return
				}
				theirs = append(theirs, want)
			}
			t.Errorf("validateModel says\n%s\noperator-registry says, in 64 runs, one of\n%s", got, strings.Join(theirs, "\n--\n"))
		})
	}
}
