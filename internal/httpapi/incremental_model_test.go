package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// catalogModel is a catalog as blobs laid out in files, several packages
// to a file, which the differential test edits at random and writes out,
// rewriting only the files whose content changed (as an editor does).
type catalogModel struct {
	blobs []fbcfacts.Blob
	// file holds the file of each package's blobs; split, the file its
	// bundles go to instead, for a package spread over two files.
	file, split map[string]string
	// broken is a file holding a blob that does not parse; brokenPkg a
	// package whose default channel names no channel (its value was
	// savedDefault). The next edit fixes either.
	broken, brokenPkg, savedDefault string
	written                         map[string][]byte
}

func newCatalogModel(t *testing.T, c *fbcfacts.Catalog) *catalogModel {
	m := &catalogModel{file: map[string]string{}, split: map[string]string{}, written: map[string][]byte{}}
	for _, b := range c.Blobs {
		m.blobs = append(m.blobs, fbcfacts.Blob{Schema: b.Schema, Package: b.Package, Name: b.Name, Doc: fbcchange.Clone(t, b.Doc)})
	}
	// Three packages to a file, but one on a small catalog, where a file
	// of three would be most of it: a change to one would then make the
	// build full.
	perFile := 3
	if len(m.packages()) <= 10 {
		perFile = 1
	}
	for i, p := range m.packages() {
		m.file[p] = fmt.Sprintf("f%02d/catalog.json", i/perFile)
	}
	return m
}

// ownerOf is the package a blob belongs to.
func ownerOf(b fbcfacts.Blob) string {
	if b.Schema == "olm.package" {
		return b.Name
	}
	return b.Package
}

func (m *catalogModel) packages() []string {
	var out []string
	for _, b := range m.blobs {
		if b.Schema == "olm.package" {
			out = append(out, b.Name)
		}
	}
	slices.Sort(out)
	return out
}

// files lays the blobs out, one JSON line each in catalog order.
func (m *catalogModel) files(t *testing.T, withBreak bool) map[string][]byte {
	t.Helper()
	out := map[string]*bytes.Buffer{}
	for _, b := range m.blobs {
		owner := ownerOf(b)
		f := m.file[owner]
		if f == "" {
			f = "unowned/catalog.json"
		}
		if s := m.split[owner]; s != "" && b.Schema == "olm.bundle" {
			f = s
		}
		if out[f] == nil {
			out[f] = &bytes.Buffer{}
		}
		line, err := json.Marshal(b.Doc)
		if err != nil {
			t.Fatal(err)
		}
		out[f].Write(append(line, '\n'))
	}
	if withBreak && m.broken != "" {
		if out[m.broken] == nil {
			out[m.broken] = &bytes.Buffer{}
		}
		out[m.broken].WriteString(`{"schema":"olm.bundle","name":` + "\n")
	}
	files := map[string][]byte{}
	for f, buf := range out {
		files[f] = buf.Bytes()
	}
	return files
}

// write brings dir in line with the model: new and changed files are
// written, files no longer used removed, the others left alone.
func (m *catalogModel) write(t *testing.T, dir string) {
	t.Helper()
	files := m.files(t, true)
	for f := range m.written {
		if _, ok := files[f]; !ok {
			if err := os.Remove(filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for f, data := range files {
		if old, ok := m.written[f]; ok && bytes.Equal(old, data) {
			continue
		}
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.written = files
}

// facts reads the model as fbcfacts does a directory, without the blob
// that does not parse.
func (m *catalogModel) facts(t *testing.T) *fbcfacts.Catalog {
	t.Helper()
	dir := t.TempDir()
	for f, data := range m.files(t, false) {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fbcfacts.Load(t, dir)
}

// find returns the index of the first blob that matches, or -1.
func (m *catalogModel) find(match func(fbcfacts.Blob) bool) int {
	return slices.IndexFunc(m.blobs, match)
}

func (m *catalogModel) of(p, schema string) []int {
	var out []int
	for i, b := range m.blobs {
		if ownerOf(b) == p && b.Schema == schema {
			out = append(out, i)
		}
	}
	return out
}

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

func (m *catalogModel) defaultChannel(p string) string {
	i := m.find(func(b fbcfacts.Blob) bool { return b.Schema == "olm.package" && b.Name == p })
	if i < 0 {
		return ""
	}
	s, _ := m.blobs[i].Doc["defaultChannel"].(string)
	return s
}

func entryNames(doc map[string]any) []string {
	entries, _ := doc["entries"].([]any)
	var out []string
	for _, e := range entries {
		if em, ok := e.(map[string]any); ok {
			if n, ok := em["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// edit makes one random edit, or fixes the last one's break, and says
// what it did.
func (m *catalogModel) edit(t *testing.T, rng *rand.Rand, step int) string {
	t.Helper()
	if m.broken != "" {
		f := m.broken
		m.broken = ""
		return "fixed the blob that does not parse in " + f
	}
	if m.brokenPkg != "" {
		p := m.brokenPkg
		i := m.find(func(b fbcfacts.Blob) bool { return b.Schema == "olm.package" && b.Name == p })
		m.blobs[i].Doc["defaultChannel"] = m.savedDefault
		m.brokenPkg = ""
		return "fixed the default channel of " + p
	}
	edits := []func(t *testing.T, rng *rand.Rand, step int) string{
		m.changeBundle, m.addBundle, m.removeBundle, m.addPackage, m.removePackage, m.addChannel,
		m.removeChannel, m.deprecate, m.movePackage, m.splitPackage, m.breakPackage, m.breakFile,
	}
	for {
		if what := pick(rng, edits)(t, rng, step); what != "" {
			return what
		}
	}
}

// Each edit returns what it did, or "" when the catalog has nothing it
// applies to.

func (m *catalogModel) changeBundle(_ *testing.T, rng *rand.Rand, step int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	bs := m.of(p, "olm.bundle")
	if len(bs) == 0 {
		return ""
	}
	b := m.blobs[pick(rng, bs)]
	b.Doc["image"] = fmt.Sprintf("%v-step%d", b.Doc["image"], step)
	return fmt.Sprintf("changed bundle %s of %s", b.Name, p)
}

func (m *catalogModel) addBundle(t *testing.T, rng *rand.Rand, step int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	def := m.defaultChannel(p)
	ci := m.find(func(b fbcfacts.Blob) bool { return b.Schema == "olm.channel" && b.Package == p && b.Name == def })
	if ci < 0 {
		return ""
	}
	names := entryNames(m.blobs[ci].Doc)
	if len(names) == 0 {
		return ""
	}
	head := names[len(names)-1]
	bi := m.find(func(b fbcfacts.Blob) bool { return b.Schema == "olm.bundle" && b.Package == p && b.Name == head })
	if bi < 0 {
		return ""
	}
	name := fmt.Sprintf("%s.v99.%d.0", p, step)
	doc := fbcchange.Clone(t, m.blobs[bi].Doc)
	doc["name"] = name
	props, _ := doc["properties"].([]any)
	for i, pr := range props {
		if pm, ok := pr.(map[string]any); ok && pm["type"] == "olm.package" {
			props[i] = map[string]any{"type": "olm.package", "value": map[string]any{"packageName": p, "version": fmt.Sprintf("99.%d.0", step)}}
		}
	}
	entries, _ := m.blobs[ci].Doc["entries"].([]any)
	m.blobs[ci].Doc["entries"] = append(entries, map[string]any{"name": name, "replaces": head})
	m.blobs = slices.Insert(m.blobs, bi+1, fbcfacts.Blob{Schema: "olm.bundle", Package: p, Name: name, Doc: doc})
	return fmt.Sprintf("added bundle %s as the head of %s/%s", name, p, def)
}

func (m *catalogModel) removeBundle(_ *testing.T, rng *rand.Rand, _ int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	bs := m.of(p, "olm.bundle")
	if len(bs) < 2 {
		return ""
	}
	name := m.blobs[pick(rng, bs)].Name
	m.blobs = slices.DeleteFunc(m.blobs, func(b fbcfacts.Blob) bool { return b.Schema == "olm.bundle" && b.Package == p && b.Name == name })
	for _, ci := range m.of(p, "olm.channel") {
		entries, _ := m.blobs[ci].Doc["entries"].([]any)
		m.blobs[ci].Doc["entries"] = slices.DeleteFunc(slices.Clone(entries), func(e any) bool {
			em, _ := e.(map[string]any)
			return em["name"] == name
		})
	}
	return fmt.Sprintf("removed bundle %s of %s", name, p)
}

func (m *catalogModel) addPackage(_ *testing.T, rng *rand.Rand, step int) string {
	p := fmt.Sprintf("zz-added-%d", step)
	bundle := p + ".v1.0.0"
	docs := []map[string]any{
		{"schema": "olm.package", "name": p, "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": p, "name": "stable", "entries": []any{map[string]any{"name": bundle}}},
		{"schema": "olm.bundle", "package": p, "name": bundle, "image": "example.com/added:v1.0.0",
			"properties": []any{
				map[string]any{"type": "olm.package", "value": map[string]any{"packageName": p, "version": "1.0.0"}},
				map[string]any{"type": "olm.gvk", "value": map[string]any{"group": "added.example.com", "version": "v1", "kind": "Added"}},
			}},
	}
	for _, d := range docs {
		pk, _ := d["package"].(string)
		n, _ := d["name"].(string)
		m.blobs = append(m.blobs, fbcfacts.Blob{Schema: d["schema"].(string), Package: pk, Name: n, Doc: d})
	}
	m.file[p] = fmt.Sprintf("new%d/catalog.json", step)
	if files := slices.Sorted(maps.Values(m.file)); rng.IntN(2) == 0 {
		m.file[p] = pick(rng, files)
	}
	return fmt.Sprintf("added package %s in %s", p, m.file[p])
}

func (m *catalogModel) removePackage(_ *testing.T, rng *rand.Rand, _ int) string {
	pkgs := m.packages()
	if len(pkgs) < 2 {
		return ""
	}
	p := pick(rng, pkgs)
	m.blobs = slices.DeleteFunc(m.blobs, func(b fbcfacts.Blob) bool { return ownerOf(b) == p })
	return "removed package " + p
}

func (m *catalogModel) addChannel(_ *testing.T, rng *rand.Rand, step int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	bs := m.of(p, "olm.bundle")
	if len(bs) == 0 {
		return ""
	}
	name := fmt.Sprintf("extra-%d", step)
	bundle := m.blobs[pick(rng, bs)].Name
	m.blobs = append(m.blobs, fbcfacts.Blob{Schema: "olm.channel", Package: p, Name: name, Doc: map[string]any{
		"schema": "olm.channel", "package": p, "name": name, "entries": []any{map[string]any{"name": bundle}},
	}})
	return fmt.Sprintf("added channel %s to %s", name, p)
}

func (m *catalogModel) removeChannel(_ *testing.T, rng *rand.Rand, _ int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	def := m.defaultChannel(p)
	var others []string
	for _, ci := range m.of(p, "olm.channel") {
		if m.blobs[ci].Name != def {
			others = append(others, m.blobs[ci].Name)
		}
	}
	if len(others) == 0 {
		return ""
	}
	ch := pick(rng, others)
	m.blobs = slices.DeleteFunc(m.blobs, func(b fbcfacts.Blob) bool { return b.Schema == "olm.channel" && b.Package == p && b.Name == ch })
	return fmt.Sprintf("removed channel %s of %s", ch, p)
}

func (m *catalogModel) deprecate(_ *testing.T, rng *rand.Rand, step int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	bs := m.of(p, "olm.bundle")
	if len(bs) == 0 {
		return ""
	}
	bundle := m.blobs[pick(rng, bs)].Name
	entry := map[string]any{"reference": map[string]any{"schema": "olm.bundle", "name": bundle}, "message": fmt.Sprintf("deprecated at step %d", step)}
	if ds := m.of(p, "olm.deprecations"); len(ds) > 0 {
		doc := m.blobs[ds[0]].Doc
		entries, _ := doc["entries"].([]any)
		doc["entries"] = append(entries, entry)
	} else {
		m.blobs = append(m.blobs, fbcfacts.Blob{Schema: "olm.deprecations", Package: p, Doc: map[string]any{
			"schema": "olm.deprecations", "package": p, "entries": []any{entry},
		}})
	}
	return fmt.Sprintf("deprecated bundle %s of %s", bundle, p)
}

func (m *catalogModel) movePackage(_ *testing.T, rng *rand.Rand, step int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	to := fmt.Sprintf("moved%d/catalog.json", step)
	if files := slices.Sorted(maps.Values(m.file)); rng.IntN(2) == 0 {
		to = pick(rng, files)
	}
	if to == m.file[p] {
		return ""
	}
	from := m.file[p]
	m.file[p] = to
	return fmt.Sprintf("moved package %s from %s to %s", p, from, to)
}

func (m *catalogModel) splitPackage(_ *testing.T, rng *rand.Rand, step int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	if m.split[p] != "" {
		delete(m.split, p)
		return fmt.Sprintf("joined the bundles of %s back into %s", p, m.file[p])
	}
	m.split[p] = fmt.Sprintf("split%d/bundles.json", step)
	return fmt.Sprintf("moved the bundles of %s to %s", p, m.split[p])
}

func (m *catalogModel) breakPackage(_ *testing.T, rng *rand.Rand, _ int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	p := pick(rng, pkgs)
	i := m.find(func(b fbcfacts.Blob) bool { return b.Schema == "olm.package" && b.Name == p })
	m.savedDefault, _ = m.blobs[i].Doc["defaultChannel"].(string)
	m.blobs[i].Doc["defaultChannel"] = "no-such-channel"
	m.brokenPkg = p
	return "broke package " + p + ": its default channel names no channel"
}

func (m *catalogModel) breakFile(_ *testing.T, rng *rand.Rand, _ int) string {
	pkgs := m.packages()
	if len(pkgs) == 0 {
		return ""
	}
	m.broken = m.file[pick(rng, pkgs)]
	return "broke " + m.broken + " with a blob that does not parse"
}
