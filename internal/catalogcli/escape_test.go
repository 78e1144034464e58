package catalogcli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/catalogdproc"
)

// Catalog text that drives a terminal: colours, a screen clear, a window
// title (OSC 0, ended by BEL) and a hyperlink whose text hides its target
// (OSC 8, ended by ESC \).
const (
	hostileDescription = "Evil \x1b[31mred\x1b[0m, \x1b]8;;https://evil.example/\x1b\\a safe link\x1b]8;;\x1b\\, \x1b[2J"
	hostileDisplayName = "Evil\x1b]0;pwned\x07 Operator"
	hostileCSVText     = "Long \x1b[5mblinking\x1b[0m description"
	hostilePkgDep      = "package deprecated \x1b[41m\x07"
	hostileChannelDep  = "channel deprecated \x1b]0;title\x07"
	hostileBundleDep   = "bundle deprecated \x1b[31m\r"
	// hostileLoopName is a bundle in a replaces loop: the problem the loop
	// makes names it.
	hostileLoopName = "evil.v2.0.1\x1b]0;loop\x07"
	// hostileDupName shares its version with evil.v1.1.0, so that asking
	// for the bundle by version fails with an error listing both names.
	hostileDupName = "evil.v1.1.0-dup\x1b[31m"
)

// writeHostileCatalog writes package evil, whose strings carry terminal
// control sequences.
func writeHostileCatalog(t *testing.T) string {
	t.Helper()
	bundle := func(name, version string, props ...map[string]any) map[string]any {
		props = append([]map[string]any{{"type": "olm.package", "value": map[string]any{"packageName": "evil", "version": version}}}, props...)
		return map[string]any{"schema": "olm.bundle", "name": name, "package": "evil", "image": "example.com/evil:" + version, "properties": props}
	}
	csv := map[string]any{"type": "olm.csv.metadata", "value": map[string]any{
		"displayName": hostileDisplayName, "description": hostileCSVText, "provider": map[string]any{"name": "Evil Inc"},
	}}
	blobs := []map[string]any{
		{"schema": "olm.package", "name": "evil", "defaultChannel": "stable", "description": hostileDescription},
		{"schema": "olm.channel", "name": "stable", "package": "evil", "entries": []map[string]any{
			{"name": "evil.v1.0.0"}, {"name": "evil.v1.1.0", "replaces": "evil.v1.0.0"}}},
		{"schema": "olm.channel", "name": "dup", "package": "evil", "entries": []map[string]any{{"name": hostileDupName}}},
		{"schema": "olm.channel", "name": "loop", "package": "evil", "entries": []map[string]any{
			{"name": "evil.v2.0.2", "replaces": "evil.v2.0.0"},
			{"name": "evil.v2.0.0", "replaces": hostileLoopName},
			{"name": hostileLoopName, "replaces": "evil.v2.0.0"}}},
		bundle("evil.v1.0.0", "1.0.0"),
		bundle("evil.v1.1.0", "1.1.0", csv),
		bundle(hostileDupName, "1.1.0"),
		bundle("evil.v2.0.0", "2.0.0"),
		bundle(hostileLoopName, "2.0.1"),
		bundle("evil.v2.0.2", "2.0.2"),
		{"schema": "olm.deprecations", "package": "evil", "entries": []map[string]any{
			{"reference": map[string]any{"schema": "olm.package"}, "message": hostilePkgDep},
			{"reference": map[string]any{"schema": "olm.channel", "name": "stable"}, "message": hostileChannelDep},
			{"reference": map[string]any{"schema": "olm.bundle", "name": "evil.v1.0.0"}, "message": hostileBundleDep}}},
	}
	dir := t.TempDir()
	var b strings.Builder
	for _, blob := range blobs {
		line, err := json.Marshal(blob)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Join(dir, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "evil", "catalog.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shown is how a person must see catalog text: ESC as ^[ and CR as \r, as
// kubectl shows them, and BEL as \a.
var shown = strings.NewReplacer("\x1b", "^[", "\r", `\r`, "\x07", `\a`).Replace

// rawControl returns the first control byte of out other than a newline,
// or -1.
func rawControl(out string) int {
	return strings.IndexFunc(out, func(r rune) bool { return r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) })
}

// TestTerminalEscapes prints a catalog whose description, display name,
// deprecation messages, a problem and bundle names carry terminal control
// sequences, in every human-readable format and in an error: no raw ESC,
// BEL or other control character may reach the terminal, and the text
// shows escaped. JSON and YAML stay the API's objects, the text intact.
func TestTerminalEscapes(t *testing.T) {
	dir := writeHostileCatalog(t)
	_, base := catalogdproc.Serve(t, catalogd, "--data-dir", t.TempDir(), "--catalog", "hostile="+dir)
	for name, c := range map[string]cli{"server": newCLI(t, "--server", base), "dir": newCLI(t, "--dir", dir)} {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				args []string
				// fail says the command must fail (its error is checked).
				fail bool
				want []string
			}{
				{[]string{"packages", "-o", "wide"}, false, []string{hostileDisplayName}},
				{[]string{"show", "evil"}, false, []string{hostileDisplayName, hostileDescription, hostilePkgDep, hostileChannelDep, hostileLoopName}},
				{[]string{"channels", "evil", "-o", "wide"}, false, []string{hostileDupName}},
				{[]string{"versions", "evil", "-o", "wide"}, false, []string{hostileDupName, hostileLoopName}},
				{[]string{"versions", "evil", "-o", "name"}, false, []string{hostileDupName, hostileLoopName}},
				{[]string{"bundle", "evil", "evil.v1.0.0"}, false, []string{hostileBundleDep}},
				{[]string{"bundle", "evil", "1.1.0"}, true, []string{hostileDupName}},
			} {
				t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
					out, errOut, ok := c.run(t, tc.args...)
					if ok == tc.fail {
						t.Fatalf("succeeded %v, want %v:\n%s\n%s", ok, !tc.fail, out, errOut)
					}
					printed := out + errOut
					if i := rawControl(printed); i >= 0 {
						t.Errorf("raw control character %q at byte %d of:\n%q", printed[i], i, printed)
					}
					for _, w := range tc.want {
						if !strings.Contains(printed, shown(w)) {
							t.Errorf("the output does not show %q as %q:\n%s", w, shown(w), printed)
						}
					}
				})
			}
			t.Run("json and yaml", func(t *testing.T) {
				jsonOut := c.ok(t, "show", "evil", "-o", "json")
				yamlOut := c.ok(t, "show", "evil", "-o", "yaml")
				for format, out := range map[string]string{"json": jsonOut, "yaml": yamlOut} {
					if i := rawControl(out); i >= 0 {
						t.Errorf("-o %s: raw control character %q at byte %d", format, out[i], i)
					}
				}
				fromYAML, err := yaml.YAMLToJSON([]byte(yamlOut))
				if err != nil {
					t.Fatal(err)
				}
				for format, doc := range map[string][]byte{"json": []byte(jsonOut), "yaml": fromYAML} {
					var p client.Package
					if err := json.Unmarshal(doc, &p); err != nil {
						t.Fatalf("-o %s: %v", format, err)
					}
					if p.Description != hostileDescription || p.DisplayName != hostileDisplayName || p.Deprecation.Message != hostilePkgDep {
						t.Errorf("-o %s changed the catalog's text: description %q, display name %q, deprecation %q", format, p.Description, p.DisplayName, p.Deprecation.Message)
					}
				}
			})
		})
	}
}
