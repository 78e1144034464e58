package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestNamesNeedingEscapes asks for a package, a channel and a bundle whose
// names hold characters that a client escapes in a path segment although
// net/http would not (';', ',', ']'), and others it always escapes (a
// space, '%', '/', an ESC). The generated client escapes each segment
// as it must; the server must find each name as the catalog wrote it.
func TestNamesNeedingEscapes(t *testing.T) {
	for _, tc := range []struct {
		title, pkg, channel string
	}{
		{title: "semicolon and comma", pkg: "odd;pkg,one", channel: "fast;lane,1"},
		{title: "bracket", pkg: "odd]pkg", channel: "ch]a"},
		{title: "space and percent", pkg: "odd pkg%41", channel: "ch %2F"},
		{title: "slash", pkg: "odd/pkg", channel: "ch/a"},
		{title: "control character", pkg: "odd\x1bpkg", channel: "ch\x07a"},
	} {
		t.Run(tc.title, func(t *testing.T) {
			bundle := tc.pkg + ".v1.0.0"
			dir := t.TempDir()
			fbc := `{"schema":"olm.package","name":` + jsonString(tc.pkg) + `,"defaultChannel":` + jsonString(tc.channel) + `}
{"schema":"olm.channel","package":` + jsonString(tc.pkg) + `,"name":` + jsonString(tc.channel) + `,"entries":[{"name":` + jsonString(bundle) + `}]}
{"schema":"olm.bundle","package":` + jsonString(tc.pkg) + `,"name":` + jsonString(bundle) + `,"image":"example.com/odd@sha256:0000000000000000000000000000000000000000000000000000000000000000","properties":[{"type":"olm.package","value":{"packageName":` + jsonString(tc.pkg) + `,"version":"1.0.0"}}]}
`
			if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(fbc), 0o644); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			h.add("odd", dir, 0)
			ctx := context.Background()

			pkg, err := h.client.GetPackageWithResponse(ctx, "odd", tc.pkg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pkg.StatusCode() != http.StatusOK || pkg.JSON200.Name != tc.pkg {
				t.Errorf("package %q: status %d, body %s", tc.pkg, pkg.StatusCode(), pkg.Body)
			}
			ch, err := h.client.GetChannelWithResponse(ctx, "odd", tc.pkg, tc.channel, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ch.StatusCode() != http.StatusOK || ch.JSON200.Name != tc.channel {
				t.Errorf("channel %q: status %d, body %s", tc.channel, ch.StatusCode(), ch.Body)
			}
			b, err := h.client.GetBundleWithResponse(ctx, "odd", tc.pkg, bundle, nil)
			if err != nil {
				t.Fatal(err)
			}
			if b.StatusCode() != http.StatusOK || b.JSON200.Name != bundle {
				t.Errorf("bundle %q: status %d, body %s", bundle, b.StatusCode(), b.Body)
			}
		})
	}
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
