package index

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// TestProblems indexes broken packages and checks that each one's verdict
// is operator-registry's (declcfg.ConvertToModel on the same catalog) and
// that its problems are the ones expected, every one of them, in an
// author's words.
func TestProblems(t *testing.T) {
	bundle := func(name, version, extra string) string {
		return `{"schema":"olm.bundle","name":"` + name + `","package":"p","image":"example.com/p:` + strings.ReplaceAll(version, "+", "_") + `","properties":[` +
			`{"type":"olm.package","value":{"packageName":"p","version":"` + version + `"}}` + extra + `]}`
	}
	channel := func(name, entries string) string {
		return `{"schema":"olm.channel","name":"` + name + `","package":"p","entries":[` + entries + `]}`
	}
	three := bundle("p.v1", "1.0.0", "") + "\n" + bundle("p.v2", "2.0.0", "") + "\n" + bundle("p.v3", "3.0.0", "")
	chain := channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`)
	pkg := `{"schema":"olm.package","name":"p","defaultChannel":"c"}` + "\n"
	tests := []struct {
		name    string
		catalog string
		// want are the package's problems, in order.
		want []string
	}{
		{"valid chain", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v0"}`), nil},
		{"cycle below the head", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v2"}`),
			[]string{`channel "c": the replaces chain from the head loops: p.v2 -> p.v1 -> p.v2: make the oldest entry replace nothing, or a bundle outside the channel`}},
		{"cycle of one", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v2","skips":["p.v1"]},{"name":"p.v1"}`),
			[]string{`channel "c": the replaces chain from the head loops: p.v2 -> p.v2: make the oldest entry replace nothing, or a bundle outside the channel`}},
		{"no head", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v3"}`),
			[]string{`channel "c" has no head: every entry is replaced or skipped by another, so none is the newest: break the cycle so that exactly one entry, the newest, is neither replaced nor skipped`}},
		{"skips end the chain", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v3"},{"name":"p.v1","replaces":"p.v2","skips":["p.v3"]}`), nil},
		{"two heads", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v1"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`),
			[]string{`channel "c" has 2 heads, entries that no other entry replaces or skips: "p.v2", "p.v3": a channel needs exactly one; make the newest replace or skip the others`}},
		{"replaces a skipped entry", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":["p.v2"]},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`),
			[]string{`channel "c": entries "p.v1" cannot be reached from the head "p.v3" by following replaces, and no entry skips them (the chain stops at "p.v3", whose replaces "p.v2" is skipped by an entry): link them into the replaces chain, skip them, or remove them`}},
		{"replaces a missing bundle", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v9"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v2"}`),
			[]string{`channel "c": entries "p.v1", "p.v2" cannot be reached from the head "p.v3" by following replaces, and no entry skips them (the chain ends at "p.v3", which replaces "p.v9", not an entry of the channel): link them into the replaces chain, skip them, or remove them`}},
		{"typo in replaces", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"pv2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v0"}`),
			[]string{`channel "c" has 2 heads, entries that no other entry replaces or skips: "p.v2", "p.v3": a channel needs exactly one; make the newest replace or skip the others; ` +
				`entry "p.v3" replaces "pv2", which is not an entry of the channel (did you mean "p.v2"?); entry "p.v1" replaces "p.v0", which is not an entry of the channel`}},
		{"replaces itself", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v3"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`),
			[]string{`channel "c": entries "p.v3" cannot be reached from the head "p.v2" by following replaces, and no entry skips them (the chain ends at "p.v1", which replaces nothing): link them into the replaces chain, skip them, or remove them; ` +
				`entry "p.v3" replaces itself`}},
		{"only entry replaces itself", pkg + bundle("p.v1", "1.0.0", "") + "\n" + channel("c", `{"name":"p.v1","replaces":"p.v1"}`),
			[]string{`channel "c" has no head: every entry is replaced or skipped by another, so none is the newest: break the cycle so that exactly one entry, the newest, is neither replaced nor skipped; entry "p.v1" replaces itself`}},
		{"typo in skips", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":["p.v1x","p.v0"]},{"name":"p.v2"},{"name":"p.v1"}`),
			[]string{`channel "c" has 2 heads, entries that no other entry replaces or skips: "p.v1", "p.v3": a channel needs exactly one; make the newest replace or skip the others; ` +
				`entry "p.v3" skips "p.v1x", which is not an entry of the channel (did you mean "p.v1"?)`}},
		{"a valid chain's tail may replace a name one edit from an entry", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":["p.v1"]},{"name":"p.v2","replaces":"p.v3x"},{"name":"p.v1"}`), nil},
		{"skips a missing bundle", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":["p.v9"]},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`), nil},
		{"skipped entries are not stranded", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":["p.v1"]},{"name":"p.v2"},{"name":"p.v1"}`), nil},
		{"empty skip", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2","skips":[""]},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`),
			[]string{`channel "c": entry "p.v3" has an empty name in skips: remove it`}},
		{"every problem of two channels", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v2"}`) + "\n" +
			channel("d", `{"name":"p.v3"},{"name":"p.v2","skipRange":"v>=1.0.0"}`), []string{
			`channel "c": the replaces chain from the head loops: p.v2 -> p.v1 -> p.v2: make the oldest entry replace nothing, or a bundle outside the channel`,
			`channel "d": entry "p.v2" has skipRange "v>=1.0.0", which is not a semver range (Could not parse Range "v>=1.0.0": Could not parse comparator "v>=" in "v>=1.0.0"): write it like ">=1.0.0 <1.2.0", versions without a "v"`,
			`channel "d" has 2 heads, entries that no other entry replaces or skips: "p.v2", "p.v3": a channel needs exactly one; make the newest replace or skip the others`,
		}},
		{"entry without bundle", pkg + three + "\n" + channel("c", `{"name":"p.v4","replaces":"p.v3"},{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`),
			[]string{`channel "c": entry "p.v4" has no olm.bundle blob: add a bundle named "p.v4" to the package, or remove the entry`}},
		{"bundle in no channel", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2"}`),
			[]string{`bundle "p.v1" is in no channel: add it to the entries of a channel, or remove it`}},
		{"bad property", pkg + bundle("p.v1", "1.0.0", `,{"type":"olm.gvk","value":"x"},{"type":"custom"}`) + "\n" + channel("c", `{"name":"p.v1"}`), []string{
			`bundle "p.v1": properties[1] (olm.gvk): the value does not decode (the value is a string, want an object): correct it or remove the property`,
			`bundle "p.v1": properties[2] (custom): the value is missing: correct it or remove the property`,
		}},
		{"duplicate package", pkg + three + "\n" + chain + "\n" + `{"schema":"olm.package","name":"p","defaultChannel":"c"}`,
			[]string{`olm.package "p" is defined 2 times: keep one`}},
		{"no package", three + "\n" + chain,
			[]string{`there is no olm.package blob named "p", which the "package" field of its channels, bundles or deprecations names: add one, or correct that field`}},
		{"invalid package name", `{"schema":"olm.package","name":"P","defaultChannel":"c"}` + "\n" + strings.ReplaceAll(three+"\n"+chain, `"p"`, `"P"`),
			[]string{`package name "P" is not valid: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'): rename the package`}},
		{"duplicate channel", pkg + three + "\n" + chain + "\n" + channel("c", `{"name":"p.v2"}`),
			[]string{`channel "c" is defined 2 times: merge its olm.channel blobs into one`}},
		{"empty channel", pkg + three + "\n" + chain + "\n" + channel("d", ``),
			[]string{`channel "d" has no entries: list the bundles it offers, or remove it`}},
		{"duplicate entry", pkg + three + "\n" + channel("c", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v3"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`),
			[]string{`channel "c" lists entry "p.v3" 2 times: keep one`}},
		{"duplicate bundle", pkg + three + "\n" + bundle("p.v1", "1.0.0", "") + "\n" + chain,
			[]string{`bundle "p.v1" is defined 2 times: keep one`}},
		{"bad version and image", pkg + strings.Replace(bundle("p.v1", "v1.0", `,{"type":"olm.package","value":{"packageName":"q","version":"1.0.0"}}`), `example.com/p:v1.0`, `oci://example.com/p@`, 1) + "\n" + channel("c", `{"name":"p.v1"}`), []string{
			`bundle "p.v1": image "oci://example.com/p@" is not a valid image reference (invalid reference format): write registry/repository:tag or registry/repository@sha256:digest, lowercase, without a transport prefix such as "oci://" or "docker://"`,
			`bundle "p.v1": 2 olm.package properties: keep one`,
			`bundle "p.v1": version "v1.0" of its olm.package property is not a semantic version (No Major.Minor.Patch elements found): write MAJOR.MINOR.PATCH, such as "1.2.3", without a "v"`,
		}},
		{"another package's name", pkg + strings.Replace(bundle("p.v1", "1.0.0", ""), `"packageName":"p"`, `"packageName":"q"`, 1) + "\n" + channel("c", `{"name":"p.v1"}`),
			[]string{`bundle "p.v1": its olm.package property names package "q", but the bundle is in package "p": make packageName and "package" agree`}},
		{"no olm.package property, no image", pkg + `{"schema":"olm.bundle","name":"p.v1","package":"p","properties":[]}` + "\n" + channel("c", `{"name":"p.v1"}`), []string{
			`channel "c": its head "p.v1" has no version, so the channel offers no head: give bundle "p.v1" an olm.package property with its version`,
			`bundle "p.v1": no image: set "image" to the bundle image's reference`,
			`bundle "p.v1": no olm.package property: add {"type":"olm.package","value":{"packageName":"p","version":"X.Y.Z"}}`,
		}},
		{"related image", pkg + strings.Replace(bundle("p.v1", "1.0.0", ""), `"properties"`, `"relatedImages":[{"name":"x","image":"example.com/X"}],"properties"`, 1) + "\n" + channel("c", `{"name":"p.v1"}`),
			[]string{`bundle "p.v1": relatedImages[0] image "example.com/X" is not a valid image reference (invalid reference format: repository name (X) must be lowercase): write registry/repository:tag or registry/repository@sha256:digest, lowercase, without a transport prefix such as "oci://" or "docker://"`}},
		{"release", pkg + strings.Replace(bundle("p.v1", "1.0.0", ""), `"version":"1.0.0"`, `"version":"1.0.0","release":"2"`, 1) + "\n" + strings.Replace(bundle("p-v2.0.0-01", "2.0.0", ""), `"version":"2.0.0"`, `"version":"2.0.0","release":"01"`, 1) + "\n" +
			channel("c", `{"name":"p-v2.0.0-01","replaces":"p.v1"},{"name":"p.v1"}`), []string{
			`bundle "p.v1": a bundle with a release must be named <package>-v<version>-<release>: rename it "p-v1.0.0-2", in its channels too`,
			`bundle "p-v2.0.0-01": release "01" of its olm.package property is not valid (invalid release "01": segment 0: Numeric PreRelease version must not contain leading zeroes "01"): use dot-separated alphanumeric segments, numbers without leading zeros`,
		}},
		{"default channel missing", pkg + three + "\n" + channel("d", `{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`),
			[]string{`defaultChannel "c" is not a channel of the package: set it to one of "d", or add an olm.channel named "c"`}},
		{"default channel of a package without channels", pkg,
			[]string{`defaultChannel "c" is not a channel of the package, which has none: add an olm.channel named "c"`, `the package has no olm.channel blob: add a channel that lists its bundles`}},
		{"no default channel", strings.Replace(pkg, `"defaultChannel":"c"`, `"defaultChannel":""`, 1) + three + "\n" + chain,
			[]string{`olm.package "p" has no defaultChannel: set it to one of its channels ("c")`}},
		{"deprecations", pkg + three + "\n" + chain + "\n" +
			`{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"p.v9"},"message":"m"},{"reference":{"schema":"olm.channel","name":"x"},"message":"m"},` +
			`{"reference":{"schema":"olm.package","name":"p"},"message":"m"},{"reference":{"schema":"olm.other","name":"x"},"message":"m"},{"reference":{"name":"x"},"message":"m"},` +
			`{"reference":{"schema":"olm.bundle","name":"p.v1"}},{"reference":{"schema":"olm.bundle","name":"p.v1"},"message":"m"}]}` + "\n" +
			`{"schema":"olm.deprecations","package":"p","entries":[]}`, []string{
			`the package has 2 olm.deprecations blobs: merge them into one`,
			`olm.deprecations entries[0] deprecates bundle "p.v9", which the package does not have: correct the name or remove the entry`,
			`olm.deprecations entries[1] deprecates channel "x", which the package does not have: correct the name or remove the entry`,
			`olm.deprecations entries[2] deprecates the package but names "p": leave reference.name empty for olm.package`,
			`olm.deprecations entries[3] references schema "olm.other": only olm.package, olm.channel and olm.bundle can be deprecated`,
			`olm.deprecations entries[4] has no reference schema: set reference.schema to olm.package, olm.channel or olm.bundle`,
			`olm.deprecations entries[5] (olm.bundle "p.v1") has no message: say why it is deprecated and what to use instead`,
			`olm.deprecations entries[6] repeats the reference to olm.bundle "p.v1": keep one`,
		}},
		{"duplicate versions", pkg + bundle("p.v1", "1.0.0", "") + "\n" + bundle("p.v1a", "1.0.0", "") + "\n" + bundle("p.v2", "2.0.0+b", "") + "\n" + bundle("p.v2a", "2.0.0+b", "") + "\n" +
			channel("c", `{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1"}`) + "\n" + channel("d", `{"name":"p.v2a","replaces":"p.v1a"},{"name":"p.v1a"}`), []string{
			`bundles "p.v1", "p.v1a" have the same version 1.0.0: give each bundle of a package its own version`,
			`bundles "p.v2", "p.v2a" have the same version 2.0.0+b: give each bundle of a package its own version`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"c.json": {Data: []byte(tt.catalog)}}
			_, _, problems := buildProblems(t, fsys)
			var got []string
			for _, pkg := range slices.Sorted(maps.Keys(problems)) {
				got = append(got, problems[pkg]...)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			cfg, err := declcfg.LoadFS(context.Background(), fsys)
			if err == nil {
				_, err = declcfg.ConvertToModel(*cfg)
			}
			if (err == nil) != (len(got) == 0) {
				t.Errorf("operator-registry says %v", err)
			}
		})
	}
}

// TestProblemPositions checks that each problem is placed at the blob it
// concerns, in YAML and JSON files alike: where the blob's first character
// stands, found here by searching the file for the text that starts it.
func TestProblemPositions(t *testing.T) {
	yamlFile := `---
name: p
schema: olm.package
defaultChannel: c
---
# the channel
name: c
schema: olm.channel
package: p
entries:
  - name: p.v1
  - name: p.v2
    replaces: p.v1
  - name: p.v9
    replaces: p.v2
---
name: p.v1
schema: olm.bundle
package: p
image: example.com/p:1
properties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]
---
name: p.v2
schema: olm.bundle
package: p
image: example.com/p:2
properties: [{type: olm.package, value: {packageName: p, version: 2.0.0}}]
---
name: p.v1
schema: olm.bundle
package: p
image: example.com/p:1
properties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]
`
	jsonFile := `
   {"schema": "olm.channel", "name": "stable", "package": "q",
    "entries": [{"name": "q.v1"}]}
	{
	  "schema": "olm.bundle", "name": "q.v1", "package": "q", "image": "oci://example.com/q@",
	  "properties": [{"type": "olm.package", "value": {"packageName": "q", "version": "1.0.0"}}]
	}
`
	files := map[string]string{"p/catalog.yaml": yamlFile, "nested/q/catalog.json": jsonFile}
	// Each problem, by the start of its message, and the text in a file
	// (its nth occurrence) that starts the blob concerned: its first
	// character that is neither space nor in a comment line before it.
	tests := []struct {
		pkg, message, path, text string
		nth                      int
	}{
		{"p", `channel "c": entry "p.v9" has no olm.bundle blob`, "p/catalog.yaml", "\nname: c\n", 1},
		{"p", `bundle "p.v1" is defined 2 times`, "p/catalog.yaml", "\nname: p.v1\n", 2},
		{"q", `there is no olm.package blob named "q"`, "nested/q/catalog.json", `{"schema": "olm.channel"`, 1},
		{"q", `bundle "q.v1": image "oci://example.com/q@" is not a valid image reference`, "nested/q/catalog.json", "{\n\t  \"schema\": \"olm.bundle\"", 1},
	}
	fsys := fstest.MapFS{}
	for path, text := range files {
		fsys[path] = &fstest.MapFile{Data: []byte(text)}
	}
	db, _ := buildFS(t, fsys, "positions")
	var rows []struct {
		Package  string `db:"package"`
		Position string `db:"position"`
		Message  string `db:"message"`
	}
	if err := db.Select(&rows, `SELECT package, position, message FROM problems ORDER BY package, id`); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(tests) {
		t.Fatalf("%d problems, want %d: %+v", len(rows), len(tests), rows)
	}
	for i, tt := range tests {
		text := files[tt.path]
		offset := -1
		for range tt.nth {
			next := strings.Index(text[offset+1:], tt.text)
			if next < 0 {
				t.Fatalf("%q occurs fewer than %d times in %s", tt.text, tt.nth, tt.path)
			}
			offset += 1 + next
		}
		offset += len(tt.text) - len(strings.TrimLeft(tt.text, "\n"))
		line := strings.Count(text[:offset], "\n") + 1
		column := offset - strings.LastIndex(text[:offset], "\n")
		want := fmt.Sprintf("%s:%d:%d", tt.path, line, column)
		got := rows[i]
		if got.Package != tt.pkg || !strings.HasPrefix(got.Message, tt.message) || got.Position != want {
			t.Errorf("problem %d: %s %s %q, want %s %s %q...", i, got.Package, got.Position, got.Message, tt.pkg, want, tt.message)
		}
	}
}
