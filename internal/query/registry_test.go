package query_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/query"
)

// TestRegistryProperties reads every bundle of a catalog as the registry
// API reads them (EachListedBundle, ChannelBundle) and compares their
// properties with the catalog's own, decoded here with encoding/json: on
// each of the paths a bundle's properties take, the scan of its blob, the
// properties table for a blob the scan declines, and the values read one
// by one of a large blob listed without its objects.
func TestRegistryProperties(t *testing.T) {
	object := func(n int) string {
		return `{"type":"olm.bundle.object","value":{"data":"` + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", n))) + `"}}`
	}
	bundles := map[string]string{
		// The common shape: scanned, objects left out of the listing.
		"p.v1": `{"schema":"olm.bundle","name":"p.v1","package":"p","image":"quay.io/p:1","properties":[
			{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},` + object(100) + `,
			{"type":"olm.csv.metadata","value":{"displayName":"P \"one\""}},{"type":"custom.none"},{"type":"custom.list","value":[1,"a b",{"x":null}]}]}`,
		// No image: the listing has the objects.
		"p.v2": `{"schema":"olm.bundle","name":"p.v2","package":"p","properties":[
			{"type":"olm.package","value":{"packageName":"p","version":"2.0.0"}},` + object(200) + `]}`,
		// A property key encoding/json matches ignoring case, which the
		// scan declines: the properties table answers.
		"p.v3": `{"schema":"olm.bundle","name":"p.v3","package":"p","image":"quay.io/p:3","properties":[
			{"type":"olm.package","value":{"packageName":"p","version":"3.0.0"}},{"Type":"custom.folded","value":{"a":1}},` + object(50) + `]}`,
		// Larger than a blob read whole when its objects are not wanted.
		"p.v4": `{"schema":"olm.bundle","name":"p.v4","package":"p","image":"quay.io/p:4","properties":[
			{"type":"olm.package","value":{"packageName":"p","version":"4.0.0"}},` + object(100<<10) + `,{"type":"custom.after","value":"z"}]}`,
	}
	channels := map[string][]string{"stable": {"p.v1", "p.v2", "p.v3", "p.v4"}, "alpha": {"p.v3", "p.v1"}}
	var catalog strings.Builder
	catalog.WriteString(`{"schema":"olm.package","name":"p","defaultChannel":"stable"}` + "\n")
	for _, ch := range slices.Sorted(func(yield func(string) bool) {
		for ch := range channels {
			if !yield(ch) {
				return
			}
		}
	}) {
		var entries []string
		for i, b := range channels[ch] {
			e := `{"name":"` + b + `"`
			if i > 0 {
				e += `,"replaces":"` + channels[ch][i-1] + `"`
			}
			entries = append(entries, e+"}")
		}
		fmt.Fprintf(&catalog, `{"schema":"olm.channel","package":"p","name":%q,"entries":[%s]}`+"\n", ch, strings.Join(entries, ","))
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for b := range bundles {
			if !yield(b) {
				return
			}
		}
	}) {
		catalog.WriteString(strings.ReplaceAll(bundles[name], "\n", "") + "\n")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "catalog.json"), []byte(catalog.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, _ := openIndex(t, os.DirFS(dir))
	ctx := context.Background()

	// want is a bundle's properties as the catalog gives them, each value
	// decoded; a property without one is null, and objects are left out
	// (nil) when withoutObjects.
	want := func(name string, withoutObjects bool) []any {
		var b struct {
			Properties []struct {
				Type  string          `json:"type"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		}
		if err := json.Unmarshal([]byte(bundles[name]), &b); err != nil {
			t.Fatal(err)
		}
		var out []any
		for _, p := range b.Properties {
			var v any
			if withoutObjects && (p.Type == "olm.bundle.object" || p.Type == "olm.csv.metadata") {
				out = append(out, []any{p.Type, "left out"})
				continue
			}
			if len(p.Value) > 0 {
				if err := json.Unmarshal(p.Value, &v); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, []any{p.Type, v})
		}
		return out
	}
	got := func(props []query.Property) []any {
		var out []any
		for _, p := range props {
			if p.Value == nil {
				out = append(out, []any{p.Type, "left out"})
				continue
			}
			var v any
			if err := json.Unmarshal(p.Value, &v); err != nil {
				t.Fatalf("property %s: %v", p.Type, err)
			}
			out = append(out, []any{p.Type, v})
		}
		return out
	}

	var listed []string
	if err := c.EachListedBundle(ctx, func(b query.ChannelBundle) error {
		listed = append(listed, b.Channel+"/"+b.Bundle)
		if g, w := got(b.Properties), want(b.Bundle, b.Image != ""); !reflect.DeepEqual(g, w) {
			t.Errorf("listed %s/%s: properties %v, want %v", b.Channel, b.Bundle, g, w)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var wantListed []string
	for _, ch := range []string{"alpha", "stable"} {
		for _, b := range slices.Sorted(slices.Values(channels[ch])) {
			wantListed = append(wantListed, ch+"/"+b)
		}
	}
	if !slices.Equal(listed, wantListed) {
		t.Errorf("listed %v, want %v", listed, wantListed)
	}

	for ch, names := range channels {
		for _, name := range names {
			b, err := c.ChannelBundle(ctx, "p", ch, name)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := got(b.Properties), want(name, false); !reflect.DeepEqual(g, w) {
				t.Errorf("%s/%s: properties %v, want %v", ch, name, g, w)
			}
		}
	}
}
