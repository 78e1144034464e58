package fbcchange

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joelanford/ignore"
	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/test/fbcfacts"
)

// Model is a catalog directory being edited at random, for the
// differential tests of incremental builds: the documents of each file,
// by path (a path ending in .yaml is written as YAML, any other as JSON
// lines). Write rewrites only the files whose bytes changed, as an editor
// does, so that the files an edit did not touch keep their hashes.
type Model struct {
	files map[string][]map[string]any
	// written holds the bytes last written of each file.
	written map[string][]byte
	// brokenFile is a file written with a blob that does not parse after
	// its documents; brokenPkg a package whose default channel was
	// savedDefault and now names no channel. The next Edit fixes either.
	brokenFile, brokenPkg, savedDefault string
}

// ReadModel reads a catalog directory (JSON or YAML files) into a model,
// leaving out hidden files and those its .indexignore names.
func ReadModel(t testing.TB, dir string) *Model {
	t.Helper()
	m := &Model{files: map[string][]map[string]any{}, written: map[string][]byte{}}
	matcher, err := ignore.NewMatcher(os.DirFS(dir), ".indexignore")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if matcher.Match(rel, false) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		docs, err := readDocs(rel, data)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		m.files[rel] = docs
		m.written[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readDocs(path string, data []byte) ([]map[string]any, error) {
	var docs []map[string]any
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		for _, part := range strings.Split(string(data), "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(part, "---")) == "" {
				continue
			}
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
				return nil, err
			}
			docs = append(docs, doc)
		}
		return docs, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err == io.EOF {
			return docs, nil
		} else if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// Group lays the documents out anew, perFile packages to a JSON file
// (f00/catalog.json, ...) in name order, each package's documents in
// their order, documents of no package in unowned/catalog.json. Nothing
// is written until Write.
func (m *Model) Group(perFile int) {
	index := map[string]int{}
	for i, p := range m.Packages() {
		index[p] = i
	}
	files := map[string][]map[string]any{}
	for _, p := range m.Paths() {
		for _, d := range m.files[p] {
			to := "unowned/catalog.json"
			if i, ok := index[ownerOf(d)]; ok {
				to = fmt.Sprintf("f%02d/catalog.json", i/perFile)
			}
			files[to] = append(files[to], d)
		}
	}
	m.files = files
}

// render is the bytes of every file, with the blob that does not parse
// when withBreak is set.
func (m *Model) render(t testing.TB, withBreak bool) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for path, docs := range m.files {
		var buf bytes.Buffer
		for _, doc := range docs {
			if strings.HasSuffix(path, ".yaml") {
				data, err := yaml.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				buf.WriteString("---\n")
				buf.Write(data)
			} else {
				data, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(append(data, '\n'))
			}
		}
		if withBreak && path == m.brokenFile {
			if strings.HasSuffix(path, ".yaml") {
				buf.WriteString("---\n")
			}
			buf.WriteString(`{"schema":"olm.bundle","name":` + "\n")
		}
		out[path] = buf.Bytes()
	}
	return out
}

// Write brings dir (created if need be) in line with the model: new and
// changed files are written, files no longer in it removed, the others
// left alone.
func (m *Model) Write(t testing.TB, dir string) {
	t.Helper()
	files := m.render(t, true)
	for path := range m.written {
		if _, ok := files[path]; !ok {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(path))); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	for path, data := range files {
		if old, ok := m.written[path]; ok && bytes.Equal(old, data) {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.written = files
}

// Broken says whether the catalog as written holds a blob that does not
// parse, so that every build of it fails.
func (m *Model) Broken() bool { return m.brokenFile != "" }

// Facts reads the model as fbcfacts reads a directory, without the blob
// that does not parse.
func (m *Model) Facts(t testing.TB) *fbcfacts.Catalog {
	t.Helper()
	dir := t.TempDir()
	for path, data := range m.render(t, false) {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fbcfacts.Load(t, dir)
}

// ownerOf is the package a document belongs to: the name of an
// olm.package document, the package of any other.
func ownerOf(doc map[string]any) string {
	key := "package"
	if doc["schema"] == "olm.package" {
		key = "name"
	}
	s, _ := doc[key].(string)
	return s
}

// docRef is a document of the model, by file and place.
type docRef struct {
	path string
	i    int
}

// Paths lists the model's files in name order.
func (m *Model) Paths() []string {
	paths := make([]string, 0, len(m.files))
	for p := range m.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// AppendBlob adds a blob of a custom schema, owned by the package of the
// file's first document, at the end of the file at path: an edit that
// changes one file and no answer about bundles.
func (m *Model) AppendBlob(path, schema, name string) {
	m.files[path] = append(m.files[path], map[string]any{"schema": schema, "package": ownerOf(m.files[path][0]), "name": name})
}

// find lists the documents matching keep, in path order.
func (m *Model) find(keep func(map[string]any) bool) []docRef {
	var out []docRef
	for _, p := range m.Paths() {
		for i, d := range m.files[p] {
			if keep(d) {
				out = append(out, docRef{p, i})
			}
		}
	}
	return out
}

func (m *Model) doc(r docRef) map[string]any { return m.files[r.path][r.i] }

// remove removes the documents matching drop.
func (m *Model) remove(drop func(map[string]any) bool) {
	for p, docs := range m.files {
		m.files[p] = slices.DeleteFunc(docs, drop)
	}
}

// take removes the documents matching drop and returns them, in path
// order.
func (m *Model) take(drop func(map[string]any) bool) []map[string]any {
	var out []map[string]any
	for _, p := range m.Paths() {
		m.files[p] = slices.DeleteFunc(m.files[p], func(d map[string]any) bool {
			if drop(d) {
				out = append(out, d)
				return true
			}
			return false
		})
	}
	return out
}

// Packages lists the packages the model declares, in name order.
func (m *Model) Packages() []string {
	var out []string
	for _, r := range m.find(isSchema("olm.package")) {
		out = append(out, m.doc(r)["name"].(string))
	}
	slices.Sort(out)
	return out
}

// of lists the package's documents of a schema.
func (m *Model) of(pkg, schema string) []docRef {
	return m.find(func(d map[string]any) bool { return d["schema"] == schema && ownerOf(d) == pkg })
}

func (m *Model) packageDoc(pkg string) map[string]any {
	if rs := m.of(pkg, "olm.package"); len(rs) > 0 {
		return m.doc(rs[0])
	}
	return nil
}

func isSchema(schema string) func(map[string]any) bool {
	return func(d map[string]any) bool { return d["schema"] == schema }
}

func pick[T any](rng *rand.Rand, list []T) (T, bool) {
	var zero T
	if len(list) == 0 {
		return zero, false
	}
	return list[rng.IntN(len(list))], true
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

// EditKinds names every kind of edit Edit makes, in the order it picks
// them from.
func EditKinds() []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range editKinds {
			if !yield(k) {
				return
			}
		}
	})
}

// Edit fixes the break the last edit made, if any, or else makes one
// random edit of the given kind ("" for any), and says what it did: ""
// when the catalog has nothing that kind applies to.
func (m *Model) Edit(t testing.TB, rng *rand.Rand, kind string, step int) string {
	t.Helper()
	if m.brokenFile != "" {
		f := m.brokenFile
		m.brokenFile = ""
		return "fixed the blob that does not parse in " + f
	}
	if m.brokenPkg != "" {
		p := m.brokenPkg
		if d := m.packageDoc(p); d != nil {
			d["defaultChannel"] = m.savedDefault
		}
		m.brokenPkg = ""
		return "fixed the default channel of " + p
	}
	if kind == "" {
		kinds := EditKinds()
		kind = kinds[rng.IntN(len(kinds))]
	}
	e, ok := editKinds[kind]
	if !ok {
		t.Fatalf("fbcchange: no edit %q", kind)
	}
	if what := e(t, m, rng, step); what != "" {
		return kind + ": " + what
	}
	return ""
}

type editFunc func(t testing.TB, m *Model, rng *rand.Rand, step int) string

// editKinds are the edits, by name. Each returns what it did, or "" when
// the catalog has nothing it applies to.
var editKinds = map[string]editFunc{
	"change a bundle's properties": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		r, ok := pick(rng, m.find(isSchema("olm.bundle")))
		if !ok {
			return ""
		}
		b := m.doc(r)
		props, _ := b["properties"].([]any)
		b["properties"] = append(props, map[string]any{"type": "test.edit", "value": map[string]any{"step": step}})
		return fmt.Sprintf("bundle %v in %s", b["name"], r.path)
	},
	"change a bundle's image": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		r, ok := pick(rng, m.find(isSchema("olm.bundle")))
		if !ok {
			return ""
		}
		b := m.doc(r)
		b["image"] = fmt.Sprintf("%v-step%d", b["image"], step)
		return fmt.Sprintf("bundle %v of %v", b["name"], b["package"])
	},
	"remove a bundle's blob": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		r, ok := pick(rng, m.find(isSchema("olm.bundle")))
		if !ok {
			return ""
		}
		name := m.doc(r)["name"]
		m.files[r.path] = slices.Delete(m.files[r.path], r.i, r.i+1)
		return fmt.Sprintf("bundle %v from %s, its channel entries left", name, r.path)
	},
	"remove a bundle": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		p, ok := pick(rng, m.Packages())
		bs := m.of(p, "olm.bundle")
		if !ok || len(bs) < 2 {
			return ""
		}
		r, _ := pick(rng, bs)
		name := m.doc(r)["name"]
		m.remove(func(d map[string]any) bool {
			return d["schema"] == "olm.bundle" && d["package"] == p && d["name"] == name
		})
		for _, c := range m.of(p, "olm.channel") {
			doc := m.doc(c)
			entries, _ := doc["entries"].([]any)
			doc["entries"] = slices.DeleteFunc(slices.Clone(entries), func(e any) bool {
				em, _ := e.(map[string]any)
				return em["name"] == name
			})
		}
		return fmt.Sprintf("bundle %v of %s and its channel entries", name, p)
	},
	"add a bundle": func(t testing.TB, m *Model, rng *rand.Rand, step int) string {
		b, path := m.copyDoc(t, rng, "olm.bundle", func(name any) string { return fmt.Sprintf("%v-added%d", name, step) })
		if b == nil {
			return ""
		}
		name := b["name"]
		// Listed in a channel of its package, replacing nothing.
		if c, ok := pick(rng, m.of(ownerOf(b), "olm.channel")); ok {
			ch := m.doc(c)
			entries, _ := ch["entries"].([]any)
			ch["entries"] = append(entries, map[string]any{"name": name})
		}
		return fmt.Sprintf("bundle %v to %s", name, path)
	},
	"add a head": func(t testing.TB, m *Model, rng *rand.Rand, step int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		def, _ := m.packageDoc(p)["defaultChannel"].(string)
		var ch map[string]any
		for _, c := range m.of(p, "olm.channel") {
			if m.doc(c)["name"] == def {
				ch = m.doc(c)
				break
			}
		}
		names := entryNames(ch)
		if len(names) == 0 {
			return ""
		}
		head := names[len(names)-1]
		var at docRef
		found := false
		for _, r := range m.of(p, "olm.bundle") {
			if m.doc(r)["name"] == head {
				at, found = r, true
				break
			}
		}
		if !found {
			return ""
		}
		name := fmt.Sprintf("%s.v99.%d.0", p, step)
		doc := Clone(t, m.doc(at))
		doc["name"] = name
		props, _ := doc["properties"].([]any)
		for i, pr := range props {
			if pm, ok := pr.(map[string]any); ok && pm["type"] == "olm.package" {
				props[i] = map[string]any{"type": "olm.package", "value": map[string]any{"packageName": p, "version": fmt.Sprintf("99.%d.0", step)}}
			}
		}
		entries, _ := ch["entries"].([]any)
		ch["entries"] = append(entries, map[string]any{"name": name, "replaces": head})
		m.files[at.path] = slices.Insert(m.files[at.path], at.i+1, doc)
		return fmt.Sprintf("bundle %s as the head of %s/%s", name, p, def)
	},
	"remove a package": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		pkgs := m.Packages()
		p, ok := pick(rng, pkgs)
		if !ok || len(pkgs) < 3 {
			return ""
		}
		m.remove(func(d map[string]any) bool { return ownerOf(d) == p })
		return "package " + p
	},
	"copy a package": func(t testing.TB, m *Model, rng *rand.Rand, step int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		name := fmt.Sprintf("%s-copy%d", p, step)
		path := fmt.Sprintf("added/%s/catalog.json", name)
		if rng.IntN(2) == 0 {
			path = fmt.Sprintf("added/%s.yaml", name)
		}
		for _, r := range m.find(func(d map[string]any) bool { return ownerOf(d) == p }) {
			d := Clone(t, m.doc(r))
			if d["schema"] == "olm.package" {
				d["name"] = name
			} else {
				d["package"] = name
			}
			m.files[path] = append(m.files[path], d)
		}
		return "package " + name + " in " + path
	},
	"add a package": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		p := fmt.Sprintf("zz-added-%d", step)
		bundle := p + ".v1.0.0"
		to := fmt.Sprintf("new%d/catalog.json", step)
		if f, ok := pick(rng, m.Paths()); ok && rng.IntN(2) == 0 {
			to = f
		}
		m.files[to] = append(m.files[to],
			map[string]any{"schema": "olm.package", "name": p, "defaultChannel": "stable"},
			map[string]any{"schema": "olm.channel", "package": p, "name": "stable", "entries": []any{map[string]any{"name": bundle}}},
			map[string]any{"schema": "olm.bundle", "package": p, "name": bundle, "image": "example.com/added:v1.0.0",
				"properties": []any{
					map[string]any{"type": "olm.package", "value": map[string]any{"packageName": p, "version": "1.0.0"}},
					map[string]any{"type": "olm.gvk", "value": map[string]any{"group": "added.example.com", "version": "v1", "kind": "Added"}},
				}})
		return fmt.Sprintf("package %s in %s", p, to)
	},
	"copy a channel": func(t testing.TB, m *Model, rng *rand.Rand, step int) string {
		c, _ := m.copyDoc(t, rng, "olm.channel", func(any) string { return fmt.Sprintf("added-%d", step) })
		if c == nil {
			return ""
		}
		return fmt.Sprintf("channel %v of %v", c["name"], c["package"])
	},
	"add a channel": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		p, b, ok := m.pickBundle(rng)
		if !ok {
			return ""
		}
		name := fmt.Sprintf("extra-%d", step)
		to := m.of(p, "olm.package")[0].path
		m.files[to] = append(m.files[to], map[string]any{
			"schema": "olm.channel", "package": p, "name": name, "entries": []any{map[string]any{"name": m.doc(b)["name"]}},
		})
		return fmt.Sprintf("channel %s of %s", name, p)
	},
	"remove a channel": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		r, ok := pick(rng, m.find(isSchema("olm.channel")))
		if !ok {
			return ""
		}
		c := m.doc(r)
		m.files[r.path] = slices.Delete(m.files[r.path], r.i, r.i+1)
		return fmt.Sprintf("channel %v of %v", c["name"], c["package"])
	},
	"remove another channel": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		def := m.packageDoc(p)["defaultChannel"]
		var others []docRef
		for _, c := range m.of(p, "olm.channel") {
			if m.doc(c)["name"] != def {
				others = append(others, c)
			}
		}
		r, ok := pick(rng, others)
		if !ok {
			return ""
		}
		name := m.doc(r)["name"]
		m.remove(func(d map[string]any) bool {
			return d["schema"] == "olm.channel" && d["package"] == p && d["name"] == name
		})
		return fmt.Sprintf("channel %v of %s, not its default", name, p)
	},
	"deprecate a package": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		if r, ok := pick(rng, m.find(isSchema("olm.deprecations"))); ok && rng.IntN(2) == 0 {
			pkg := m.doc(r)["package"]
			m.files[r.path] = slices.Delete(m.files[r.path], r.i, r.i+1)
			return fmt.Sprintf("deprecations of %v removed", pkg)
		}
		r, ok := pick(rng, m.find(isSchema("olm.package")))
		if !ok {
			return ""
		}
		pkg := m.doc(r)["name"].(string)
		m.remove(func(d map[string]any) bool { return d["schema"] == "olm.deprecations" && d["package"] == pkg })
		m.files[r.path] = append(m.files[r.path], map[string]any{"schema": "olm.deprecations", "package": pkg,
			"entries": []any{map[string]any{"reference": map[string]any{"schema": "olm.package"}, "message": fmt.Sprintf("gone at %d", step)}}})
		return "deprecations of " + pkg + " added"
	},
	"deprecate a bundle": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		p, b, ok := m.pickBundle(rng)
		if !ok {
			return ""
		}
		bundle := m.doc(b)["name"]
		entry := map[string]any{"reference": map[string]any{"schema": "olm.bundle", "name": bundle}, "message": fmt.Sprintf("deprecated at step %d", step)}
		if ds := m.of(p, "olm.deprecations"); len(ds) > 0 {
			doc := m.doc(ds[0])
			entries, _ := doc["entries"].([]any)
			doc["entries"] = append(entries, entry)
		} else {
			to := m.of(p, "olm.package")[0].path
			m.files[to] = append(m.files[to], map[string]any{"schema": "olm.deprecations", "package": p, "entries": []any{entry}})
		}
		return fmt.Sprintf("bundle %v of %s", bundle, p)
	},
	"move a package": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		to, _ := pick(rng, m.Paths())
		if rng.IntN(3) == 0 {
			to = fmt.Sprintf("moved/%d.json", step)
		}
		moved := m.take(func(d map[string]any) bool { return ownerOf(d) == p })
		m.files[to] = append(m.files[to], moved...)
		return "package " + p + " to " + to
	},
	"spread a package": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		to := fmt.Sprintf("spread/%s-%d.yaml", p, step)
		m.files[to] = m.take(func(d map[string]any) bool {
			return ownerOf(d) == p && d["schema"] == "olm.bundle" && rng.IntN(2) == 0
		})
		return fmt.Sprintf("%d bundles of %s to %s", len(m.files[to]), p, to)
	},
	"split a package": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		to := fmt.Sprintf("split%d/bundles.json", step)
		m.files[to] = m.take(func(d map[string]any) bool { return ownerOf(d) == p && d["schema"] == "olm.bundle" })
		return fmt.Sprintf("the bundles of %s to %s", p, to)
	},
	"break or fix a package": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		if r, ok := pick(rng, m.find(func(d map[string]any) bool { return d["schema"] == "olm.package" && d["broken"] != nil })); ok {
			d := m.doc(r)
			d["defaultChannel"] = d["broken"]
			delete(d, "broken")
			return fmt.Sprintf("package %v fixed", d["name"])
		}
		r, ok := pick(rng, m.find(isSchema("olm.package")))
		if !ok {
			return ""
		}
		d := m.doc(r)
		d["broken"] = d["defaultChannel"]
		d["defaultChannel"] = "no-such-channel"
		return fmt.Sprintf("package %v broken", d["name"])
	},
	"break a package": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		d := m.packageDoc(p)
		m.savedDefault, _ = d["defaultChannel"].(string)
		d["defaultChannel"] = "no-such-channel"
		m.brokenPkg = p
		return "package " + p + ": its default channel names no channel until the next edit"
	},
	"break a file": func(_ testing.TB, m *Model, rng *rand.Rand, _ int) string {
		p, ok := pick(rng, m.Packages())
		if !ok {
			return ""
		}
		m.brokenFile = m.of(p, "olm.package")[0].path
		return m.brokenFile + ", with a blob that does not parse until the next edit"
	},
	"custom blob": func(_ testing.TB, m *Model, rng *rand.Rand, step int) string {
		to, ok := pick(rng, m.Paths())
		if !ok {
			return ""
		}
		m.files[to] = append(m.files[to], map[string]any{"schema": "test.custom", "name": fmt.Sprintf("c%d", step)})
		return "in " + to
	},
	"touch nothing": func(testing.TB, *Model, *rand.Rand, int) string { return "no change" },
}

// Share moves every document of the packages into one file, after what
// it holds.
func (m *Model) Share(path string, pkgs ...string) {
	moved := m.take(func(d map[string]any) bool { return slices.Contains(pkgs, ownerOf(d)) })
	m.files[path] = append(m.files[path], moved...)
}

// Remove removes every document of the packages.
func (m *Model) Remove(pkgs ...string) {
	m.remove(func(d map[string]any) bool { return slices.Contains(pkgs, ownerOf(d)) })
}

// copyDoc appends to its file a copy of a random document of the schema,
// named by rename from the original's name, and returns the copy and the
// file; nil when the model has no document of the schema.
func (m *Model) copyDoc(t testing.TB, rng *rand.Rand, schema string, rename func(name any) string) (map[string]any, string) {
	r, ok := pick(rng, m.find(isSchema(schema)))
	if !ok {
		return nil, ""
	}
	d := Clone(t, m.doc(r))
	d["name"] = rename(d["name"])
	m.files[r.path] = append(m.files[r.path], d)
	return d, r.path
}

// pickBundle picks a random package, then a random bundle of it.
func (m *Model) pickBundle(rng *rand.Rand) (string, docRef, bool) {
	p, ok := pick(rng, m.Packages())
	if !ok {
		return "", docRef{}, false
	}
	b, ok := pick(rng, m.of(p, "olm.bundle"))
	return p, b, ok
}
