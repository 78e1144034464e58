package fbc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/test/fbcfacts"
)

// yamlDocuments cuts a YAML stream into the documents' texts as the walk
// does.
func yamlDocuments(tb testing.TB, data []byte) [][]byte {
	tb.Helper()
	split := &yamlSplitter{in: newInput(bytes.NewReader(data), "f.yaml", Limits{}.withDefaults()), limit: DefaultFileBytes}
	var docs [][]byte
	for {
		text, _, err := split.nextDoc(func(int) bool { return true })
		if err == io.EOF {
			return docs
		}
		if err != nil {
			tb.Fatalf("split: %v", err)
		}
		docs = append(docs, bytes.Clone(text))
	}
}

// communityDocuments is every YAML document of the real community catalog,
// or none where it is absent.
func communityDocuments(tb testing.TB) [][]byte {
	tb.Helper()
	dir, ok := fbcfacts.FindSharedCommunity()
	if !ok {
		return nil
	}
	var docs [][]byte
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(dir + "/" + p)
		if err != nil {
			return err
		}
		docs = append(docs, yamlDocuments(tb, data)...)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}

// FuzzTreeMeta: whatever treeMeta encodes from a document's YAML tree,
// operator-registry's conversion (sigs.k8s.io/yaml into declcfg.Meta, the
// path decodeYAMLMeta took for every document before treeMeta) gives the
// same bytes and fields. Without -fuzz it checks every document of the
// community catalog, where present, beside the seeds.
func FuzzTreeMeta(f *testing.F) {
	for _, seed := range []string{
		"schema: olm.bundle\nname: b\npackage: p\nproperties:\n- type: olm.gvk\n  value: {group: g, kind: K, version: v1}\n",
		"schema: x\na: [1, -0, -0.0, 1.5, 1e400, .inf, .nan, 0x1F, 0o17, 017, 1_000, 12345678901234567890, 9007199254740993, -9223372036854775808]\n",
		"schema: x\nb: [yes, no, on, off, y, n, true, False, ~, null, '', \"\"]\n",
		"schema: x\n1: a\n1.5: b\ntrue: c\n2001-12-14: d\n\"1\": e\n",
		"schema: x\nt: 2001-12-14t21:59:43.10-05:00\nbin: !!binary aGVsbG8=\nbad: !!binary /w==\ns: !!str 12\n",
		"schema: x\nh: \"<&>\\u2028\\u2029\\t\\x01é\"\nl: |\n  line\n   more\nf: >-\n  folded\n  text\n",
		"schema: x\nbase: &b {k: v}\nm:\n  <<: *b\n  o: 1\nk: v\nk: w\n",
		"Schema: x\nNAME: n\nPackage: p\n",
		"schema: x\nSchema: y\n",
		"schema: 1\n",
		"schema: x\né: 1\n",
		"schema: x\n? [a]\n: b\n",
		"schema: x\n~: null\n",
		"- schema: x\n",
		"schema: x\na: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
	} {
		f.Add([]byte(seed))
	}
	for _, doc := range communityDocuments(f) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var tree any
		if yamlv2.Unmarshal(text, &tree) != nil {
			return
		}
		got, ok := treeMeta(tree, len(text))
		if !ok {
			return
		}
		var want declcfg.Meta
		if err := yaml.Unmarshal(text, &want); err != nil {
			t.Fatalf("treeMeta encoded what operator-registry rejects (%v):\n%q", err, text)
		}
		if !bytes.Equal(got.Blob, want.Blob) || got.Schema != want.Schema || got.Package != want.Package || got.Name != want.Name {
			t.Fatalf("treeMeta gives %q %q %q %q\noperator-registry %q %q %q %q\nfrom %q", got.Schema, got.Package, got.Name, got.Blob, want.Schema, want.Package, want.Name, want.Blob, text)
		}
	})
}

// TestTreeMetaTakesCommunity: the seeds of FuzzTreeMeta only prove
// something where treeMeta answers; on the real catalog it must answer for
// every document, or the fast path is not the one catalogs take.
func TestTreeMetaTakesCommunity(t *testing.T) {
	docs := communityDocuments(t)
	if docs == nil {
		t.Skip("../shared/catalogs/community-v4.20 is absent (a clone on its own): skipping the real-catalog test")
	}
	for _, doc := range docs {
		var tree any
		if err := yamlv2.Unmarshal(doc, &tree); err != nil {
			t.Fatalf("yaml.v2 rejects a document of the catalog: %v", err)
		}
		if _, ok := treeMeta(tree, len(doc)); !ok {
			t.Errorf("treeMeta declines a document of the catalog:\n%.500s", doc)
		}
	}
}

// TestWalkCommunityMatchesDeclcfg: on the real catalog, the walk gives, file
// by file, the blobs operator-registry's own walk gives, byte for byte:
// the bytes /api/v1/all serves.
func TestWalkCommunityMatchesDeclcfg(t *testing.T) {
	dir := fbcfacts.SharedCommunity(t)
	fsys := os.DirFS(dir)
	var mu sync.Mutex
	want := map[string][]string{}
	err := declcfg.WalkMetasFS(context.Background(), fsys, func(path string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		want[path] = append(want[path], strings.Join([]string{m.Schema, m.Package, m.Name, string(m.Blob)}, "\x00"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	err = Walk(context.Background(), fsys, Limits{}, func(_ context.Context, b Blob) error {
		got[b.Pos.Path] = append(got[b.Pos.Path], strings.Join([]string{b.Meta.Schema, b.Meta.Package, b.Meta.Name, string(b.Meta.Blob)}, "\x00"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("the walk read %d files, operator-registry %d", len(got), len(want))
	}
	for p, w := range want {
		if g := got[p]; !slices.Equal(g, w) {
			t.Errorf("%s: the walk gives %d blobs that differ from operator-registry's %d", p, len(g), len(w))
		}
	}
}

// dumpTree writes a decoded YAML tree with the type of every value and the
// keys of every map sorted, so that two trees compare as text (NaN too).
func dumpTree(v any) string {
	switch v := v.(type) {
	case map[any]any:
		entries := make([]string, 0, len(v))
		for k, e := range v {
			entries = append(entries, dumpTree(k)+": "+dumpTree(e))
		}
		slices.Sort(entries)
		return "{" + strings.Join(entries, ", ") + "}"
	case []any:
		items := make([]string, len(v))
		for i, e := range v {
			items[i] = dumpTree(e)
		}
		return "[" + strings.Join(items, ", ") + "]"
	default:
		return fmt.Sprintf("%T(%#v)", v, v)
	}
}

// FuzzBlockTree: whatever blockTree decodes, go.yaml.in/yaml/v2 decodes to
// the same tree. Without -fuzz it checks every document of the community
// catalog, where present, beside the seeds.
func FuzzBlockTree(f *testing.F) {
	for _, seed := range []string{
		"schema: olm.bundle\nname: b\npackage: p\nproperties:\n- type: olm.gvk\n  value:\n    group: g\n    kind: K\n    version: v1\n",
		"a: [1, 2]\nb: {}\nc: []\n",
		"n: [-0, 1.5, 1e400, .inf, -.inf, .nan, 0x1F, 0o17, 017, 1_000, 0b101, -0b11, 12345678901234567890, 9007199254740993, 1.2.3, 2001-12-14, 2001-12-14t21:59:43.10-05:00, +1, .5, 5., 1e5]\n",
		"a: 1\nb: 1.5\nc: .inf\nd: .NaN\ne: 0x1F\nf: 017\ng: 1_000\nh: 0b101\ni: 12345678901234567890\nj: 1.2.3\nk: 2001-12-14\nl: 2001-12-14t21:59:43.10-05:00\nm: +1\nn: .5\no: 5.\np: 1e5\nq: 99999999999999999999999\n",
		"b: yes\nc: No\nd: on\ne: OFF\nf: y\ng: n\nh: true\ni: False\nj: ~\nk: null\nl: ''\nm: \"\"\n",
		"1: a\n1.5: b\ntrue: c\n2001-12-14: d\n\"1\": e\n'q''s': f\n\"\\u00e9\\x41\": g\n~: h\n",
		"d: \"<&>\\u2028\\t\\x01é \\U0001F431\\N\\_\\L\\P\\e\\0\\ \\/\"\ns: 'it''s'\n",
		"l: |\n  line\n   more\n\n  last\nm: |-\n  strip\n\n\nk: |+\n  keep\n\n\nz: 1\n",
		"s:\n- |\n  in a sequence\n- - nested\n",
		"p: a plain\n  scalar over\n\n  lines   \n    and more\nq: after\n",
		"q: \"a double\n  quoted \\\n  scalar\n\n   over lines \"\nr: 'single\n\n  quoted  '\n",
		"m:\n  k: v\n  l:\n  - a\n  - b: c\n    d: e\n  n: ~\nx:\n- 1\n-   2\n",
		"a: b # comment\n",
		"a: &x 1\nb: *x\n",
		"a: !!str 1\n",
		"a: >\n  folded\n",
		"a: |2\n   indented\n",
		"a:\n\tb: 1\n",
		"a: 'unterminated\n",
		"a: \"bad \\q escape\"\n",
		"a: b: c\n",
		"a:\n  b\n",
		"- a\n",
		"  a: 1\n",
		"a: 1\n a: 2\n",
		"a:\n  - 1\n  b: 2\n",
		"a: x\n- y\n",
		"a: 'x'y\n",
		"a: \"\\ud800\"\n",
		"a: |\n\n  leading blank\n",
		"a: |\nnot indented\n",
		"a: \"x\n---\n\"\n",
		"a: x\n  #y\n",
		"<<: {a: 1}\n",
		"a: 1\na: 2\n",
	} {
		f.Add([]byte(seed))
	}
	for _, doc := range communityDocuments(f) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		got, ok := blockTree(text)
		if !ok {
			return
		}
		var want any
		if err := yamlv2.Unmarshal(text, &want); err != nil {
			t.Fatalf("blockTree decoded what go.yaml.in/yaml/v2 rejects (%v):\n%q", err, text)
		}
		if g, w := dumpTree(got), dumpTree(want); g != w {
			t.Fatalf("blockTree gives\n%s\ngo.yaml.in/yaml/v2\n%s\nfrom %q", g, w, text)
		}
	})
}

// TestBlockTreeTakesCommunity: blockTree must decode nearly every document
// of the real catalog, or the fast path is not the one catalogs take.
func TestBlockTreeTakesCommunity(t *testing.T) {
	docs := communityDocuments(t)
	if docs == nil {
		t.Skip("../shared/catalogs/community-v4.20 is absent (a clone on its own): skipping the real-catalog test")
	}
	declined, declinedBytes, total := 0, 0, 0
	for _, doc := range docs {
		total += len(doc)
		if _, ok := blockTree(doc); !ok {
			declined++
			declinedBytes += len(doc)
			t.Logf("declined:\n%.300s", doc)
		}
	}
	t.Logf("blockTree declined %d of %d documents, %d of %d bytes", declined, len(docs), declinedBytes, total)
	if declinedBytes > total/20 {
		t.Errorf("blockTree declined %d of %d bytes, more than 5%%", declinedBytes, total)
	}
}
