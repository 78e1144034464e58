// Package fbcchange makes, for tests and benchmarks, a second version of a
// file-based catalog with known differences from the first, and computes
// what changed between two catalog directories without any of catalogd's
// own code (from package fbcfacts' plain values), so that a test of
// catalogd's changes answers checks them against an independent account.
// Its Model edits a catalog directory at random, one kind of edit at a
// time, for the differential tests of incremental index builds.
package fbcchange

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/test/fbcfacts"
)

// Layout is how Write lays the blobs out in files.
type Layout int

const (
	// PerPackage writes one JSON file per package, blobs in their order.
	PerPackage Layout = iota
	// OneYAMLReversed writes every blob into one YAML file, in reverse
	// order: the same content as PerPackage, laid out and ordered apart.
	OneYAMLReversed
)

// Write writes blobs as a catalog into dir (created).
func Write(t testing.TB, dir string, blobs []fbcfacts.Blob, layout Layout) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	switch layout {
	case PerPackage:
		files := map[string]*bytes.Buffer{}
		for _, b := range blobs {
			owner := Owner(b)
			if owner == "" {
				owner = "_none"
			}
			if files[owner] == nil {
				files[owner] = &bytes.Buffer{}
			}
			data, err := json.Marshal(b.Doc)
			if err != nil {
				t.Fatal(err)
			}
			files[owner].Write(append(data, '\n'))
		}
		for owner, buf := range files {
			sub := filepath.Join(dir, owner)
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "catalog.json"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	case OneYAMLReversed:
		var buf bytes.Buffer
		for i := len(blobs) - 1; i >= 0; i-- {
			data, err := yaml.Marshal(blobs[i].Doc)
			if err != nil {
				t.Fatal(err)
			}
			buf.WriteString("---\n")
			buf.Write(data)
		}
		if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Owner is the package a blob belongs to: the name of an olm.package blob,
// the package of any other.
func Owner(b fbcfacts.Blob) string {
	if b.Schema == "olm.package" {
		return b.Name
	}
	return b.Package
}

// AddedPackage is the name of the package Edit adds.
const AddedPackage = "zz-added-by-fbcchange"

// Edits are the packages Edit changed, by what it did to them.
type Edits struct {
	Removed    string
	HeadMoved  string // a bundle added as the new head of its default channel
	ChannelCut string // a channel other than the default removed
	Deprecated string // a bundle deprecation entry added
	Touched    string // a bundle's image changed, nothing else
	Added      string
}

// Edit returns c's blobs with one package removed, one added and five
// others changed in different ways, chosen in name order among the
// packages with what each edit needs; it fails the test when c has too few
// packages. Untouched blobs are the same values as c's.
func Edit(t testing.TB, c *fbcfacts.Catalog) ([]fbcfacts.Blob, Edits) {
	t.Helper()
	names := make([]string, 0, len(c.Packages))
	for name := range c.Packages {
		names = append(names, name)
	}
	slices.Sort(names)
	used := map[string]bool{}
	pick := func(what string, ok func(string) bool) string {
		for _, n := range names {
			if !used[n] && ok(n) {
				used[n] = true
				return n
			}
		}
		t.Fatalf("fbcchange: no package left to %s", what)
		return ""
	}
	hasHead := func(n string) bool { return c.Head(n, c.Packages[n].DefaultChannel) != "" }
	e := Edits{Added: AddedPackage}
	e.HeadMoved = pick("move a head", hasHead)
	e.ChannelCut = pick("cut a channel", func(n string) bool { return len(c.Channels[n]) >= 2 })
	e.Deprecated = pick("deprecate", func(n string) bool { return len(c.Bundles[n]) > 0 })
	e.Touched = pick("touch", func(n string) bool { return len(c.Bundles[n]) > 0 })
	e.Removed = pick("remove", func(string) bool { return true })

	var out []fbcfacts.Blob
	deprecated := false
	for _, b := range c.Blobs {
		owner := Owner(b)
		switch {
		case owner == e.Removed:
			continue
		case owner == e.HeadMoved && b.Schema == "olm.channel" && b.Name == c.Packages[owner].DefaultChannel:
			doc := Clone(t, b.Doc)
			entries, _ := doc["entries"].([]any)
			doc["entries"] = append(entries, map[string]any{"name": nextBundle(owner), "replaces": c.Head(owner, b.Name)})
			b.Doc = doc
		case owner == e.HeadMoved && b.Schema == "olm.bundle" && b.Name == c.Head(owner, c.Packages[owner].DefaultChannel):
			out = append(out, b)
			doc := Clone(t, b.Doc)
			doc["name"] = nextBundle(owner)
			props, _ := doc["properties"].([]any)
			for i, p := range props {
				if pm, ok := p.(map[string]any); ok && pm["type"] == "olm.package" {
					pm = Clone(t, pm)
					pm["value"] = map[string]any{"packageName": owner, "version": "999.0.0"}
					props[i] = pm
				}
			}
			b = fbcfacts.Blob{Schema: b.Schema, Package: b.Package, Name: nextBundle(owner), Doc: doc}
		case owner == e.ChannelCut && b.Schema == "olm.channel" && b.Name == cutChannel(c, owner):
			continue
		case owner == e.Deprecated && b.Schema == "olm.deprecations":
			doc := Clone(t, b.Doc)
			entries, _ := doc["entries"].([]any)
			doc["entries"] = append(entries, deprecationEntry(c, owner))
			b.Doc = doc
			deprecated = true
		case owner == e.Touched && b.Schema == "olm.bundle" && b.Name == firstBundle(c, owner):
			doc := Clone(t, b.Doc)
			doc["image"] = fmt.Sprintf("%v-touched", doc["image"])
			b.Doc = doc
		}
		out = append(out, b)
	}
	if !deprecated {
		out = append(out, fbcfacts.Blob{Schema: "olm.deprecations", Package: e.Deprecated, Doc: map[string]any{
			"schema": "olm.deprecations", "package": e.Deprecated, "entries": []any{deprecationEntry(c, e.Deprecated)},
		}})
	}
	return append(out, addedPackage()...), e
}

func nextBundle(pkg string) string { return pkg + ".v999.0.0-fbcchange" }

// cutChannel is the channel Edit removes: the first by name that is not
// the default.
func cutChannel(c *fbcfacts.Catalog, pkg string) string {
	var names []string
	for name := range c.Channels[pkg] {
		if name != c.Packages[pkg].DefaultChannel {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names[0]
}

func firstBundle(c *fbcfacts.Catalog, pkg string) string {
	var names []string
	for name := range c.Bundles[pkg] {
		names = append(names, name)
	}
	slices.Sort(names)
	return names[0]
}

func deprecationEntry(c *fbcfacts.Catalog, pkg string) map[string]any {
	return map[string]any{
		"reference": map[string]any{"schema": "olm.bundle", "name": firstBundle(c, pkg)},
		"message":   "deprecated by fbcchange",
	}
}

func addedPackage() []fbcfacts.Blob {
	const pkg, bundle = AddedPackage, AddedPackage + ".v1.0.0"
	docs := []map[string]any{
		{"schema": "olm.package", "name": pkg, "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": pkg, "name": "stable", "entries": []any{map[string]any{"name": bundle}}},
		{"schema": "olm.bundle", "package": pkg, "name": bundle, "image": "example.com/added:v1.0.0",
			"properties": []any{map[string]any{"type": "olm.package", "value": map[string]any{"packageName": pkg, "version": "1.0.0"}}}},
	}
	out := make([]fbcfacts.Blob, len(docs))
	for i, d := range docs {
		p, _ := d["package"].(string)
		n, _ := d["name"].(string)
		out[i] = fbcfacts.Blob{Schema: d["schema"].(string), Package: p, Name: n, Doc: d}
	}
	return out
}

// Clone is a deep copy of a blob's document, for an edit that must not
// change the blob it starts from.
func Clone(t testing.TB, doc map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Deprecation is one deprecation entry of a package.
type Deprecation struct{ Schema, Name, Message string }

// Head is a channel's head before and after ("" where absent or none).
type Head struct{ Channel, Before, After string }

// Change is what changed in one package.
type Change struct {
	ChannelsAdded, ChannelsRemoved         []string
	Heads                                  []Head
	BundlesAdded, BundlesRemoved           []string
	DeprecationsAdded, DeprecationsRemoved []Deprecation
}

// Changes are the differences between two catalogs; lists are sorted.
type Changes struct {
	Added, Removed []string
	Changed        map[string]Change
}

// Diff computes what changed from before to after: a package changed when
// the multiset of its blobs (compared as canonical JSON) differs.
func Diff(t testing.TB, before, after *fbcfacts.Catalog) Changes {
	t.Helper()
	bb, ab := blobsByOwner(t, before), blobsByOwner(t, after)
	out := Changes{Changed: map[string]Change{}}
	for pkg := range after.Packages {
		if _, ok := before.Packages[pkg]; !ok {
			out.Added = append(out.Added, pkg)
		}
	}
	for pkg := range before.Packages {
		if _, ok := after.Packages[pkg]; !ok {
			out.Removed = append(out.Removed, pkg)
			continue
		}
		if slices.Equal(bb[pkg], ab[pkg]) {
			continue
		}
		var ch Change
		ch.ChannelsAdded, ch.ChannelsRemoved = keyDiff(before.Channels[pkg], after.Channels[pkg])
		ch.BundlesAdded, ch.BundlesRemoved = keyDiff(before.Bundles[pkg], after.Bundles[pkg])
		all := map[string]bool{}
		for n := range before.Channels[pkg] {
			all[n] = true
		}
		for n := range after.Channels[pkg] {
			all[n] = true
		}
		for n := range all {
			ch.Heads = append(ch.Heads, Head{Channel: n, Before: before.Head(pkg, n), After: after.Head(pkg, n)})
		}
		slices.SortFunc(ch.Heads, func(a, b Head) int { return strings.Compare(a.Channel, b.Channel) })
		db, da := deprecations(before, pkg), deprecations(after, pkg)
		for _, d := range da {
			if !slices.Contains(db, d) {
				ch.DeprecationsAdded = append(ch.DeprecationsAdded, d)
			}
		}
		for _, d := range db {
			if !slices.Contains(da, d) {
				ch.DeprecationsRemoved = append(ch.DeprecationsRemoved, d)
			}
		}
		out.Changed[pkg] = ch
	}
	slices.Sort(out.Added)
	slices.Sort(out.Removed)
	return out
}

// blobsByOwner is each package's blobs as sorted canonical JSON.
func blobsByOwner(t testing.TB, c *fbcfacts.Catalog) map[string][]string {
	out := map[string][]string{}
	for _, b := range c.Blobs {
		data, err := json.Marshal(b.Doc)
		if err != nil {
			t.Fatal(err)
		}
		out[Owner(b)] = append(out[Owner(b)], string(data))
	}
	for _, list := range out {
		slices.Sort(list)
	}
	return out
}

func keyDiff[V any](before, after map[string]V) (added, removed []string) {
	for k := range after {
		if _, ok := before[k]; !ok {
			added = append(added, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			removed = append(removed, k)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

// deprecations are a package's deprecation entries, sorted.
func deprecations(c *fbcfacts.Catalog, pkg string) []Deprecation {
	var out []Deprecation
	for _, b := range c.Blobs {
		if b.Schema != "olm.deprecations" || b.Package != pkg {
			continue
		}
		entries, _ := b.Doc["entries"].([]any)
		for _, e := range entries {
			em, _ := e.(map[string]any)
			ref, _ := em["reference"].(map[string]any)
			s, _ := ref["schema"].(string)
			n, _ := ref["name"].(string)
			m, _ := em["message"].(string)
			out = append(out, Deprecation{Schema: s, Name: n, Message: m})
		}
	}
	slices.SortFunc(out, func(a, b Deprecation) int {
		return strings.Compare(a.Schema+"\x00"+a.Name+"\x00"+a.Message, b.Schema+"\x00"+b.Name+"\x00"+b.Message)
	})
	return out
}
