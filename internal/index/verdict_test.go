package index

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// The differential test and fuzz target of this file mutate real packages
// one change at a time and check that the index's verdict on every package
// (problems or none) is operator-registry's: declcfg.LoadSlice, then
// declcfg.ConvertToModel (which ends in model.Validate), on the blobs of
// that package alone.

// fbcObject is a blob decoded as generic JSON, so that any field can be
// changed, removed or given the wrong type.
type fbcObject = map[string]any

// corpusPackage is a package's blobs in catalog order: its olm.package
// blob and the blobs whose package field names it.
type corpusPackage struct {
	name  string
	blobs []*corpusBlob
}

// corpusBlob is one blob of the corpus. Mutations decode the blobs they
// change (object); the others keep their bytes and operator-registry's
// decoding of them, shared by every copy of the package, so that a test
// re-encodes and re-decodes only what it changed.
type corpusBlob struct {
	schema, key string
	raw         []byte
	obj         fbcObject
	theirs      *theirDecoding
}

// theirDecoding is operator-registry's decoding of an unchanged blob.
type theirDecoding struct {
	once sync.Once
	cfg  *declcfg.DeclarativeConfig
	err  error
}

func (b *corpusBlob) object() fbcObject {
	if b.obj == nil {
		dec := json.NewDecoder(bytes.NewReader(b.raw))
		dec.UseNumber()
		if err := dec.Decode(&b.obj); err != nil {
			panic(fmt.Sprintf("corpus blob does not decode: %v", err))
		}
	}
	return b.obj
}

// encoded returns the blob's bytes and its package key as the index
// groups blobs: an olm.package blob's name, another blob's package.
func (b *corpusBlob) encoded() ([]byte, string) {
	if b.obj == nil {
		return b.raw, b.key
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b.obj); err != nil {
		panic(err)
	}
	field := "package"
	if b.schema == declcfg.SchemaPackage {
		field = "name"
	}
	key, _ := b.obj[field].(string)
	return buf.Bytes(), key
}

// decoded is operator-registry's decoding of the blob as it now is.
func (b *corpusBlob) decoded(data []byte, key string) (*declcfg.DeclarativeConfig, error) {
	meta := &declcfg.Meta{Schema: b.schema, Blob: data}
	if b.schema == declcfg.SchemaPackage {
		meta.Name = key
	} else {
		meta.Package = key
	}
	if b.obj != nil {
		return declcfg.LoadSlice([]*declcfg.Meta{meta})
	}
	b.theirs.once.Do(func() { b.theirs.cfg, b.theirs.err = declcfg.LoadSlice([]*declcfg.Meta{meta}) })
	return b.theirs.cfg, b.theirs.err
}

func (p *corpusPackage) clone() *corpusPackage {
	out := &corpusPackage{name: p.name, blobs: make([]*corpusBlob, len(p.blobs))}
	for i, b := range p.blobs {
		c := *b
		if b.obj != nil {
			c.obj = deepCopy(b.obj).(fbcObject)
		}
		out.blobs[i] = &c
	}
	return out
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

var (
	corpusOnce   sync.Once
	corpus       []*corpusPackage
	corpusSource string
	corpusErr    error
)

// verdictCorpus returns the packages to mutate: the shared community
// catalog's, or, where it is absent, generated ones.
func verdictCorpus(t testing.TB) []*corpusPackage {
	t.Helper()
	corpusOnce.Do(func() {
		dir, ok := fbcfacts.FindSharedCommunity()
		corpusSource = dir
		if !ok {
			var err error
			if dir, err = os.MkdirTemp("", "verdict-corpus"); err != nil {
				corpusErr = err
				return
			}
			defer os.RemoveAll(dir)
			corpusSource = "packages generated with test/fbcgen (../shared/catalogs/community-v4.20 is absent)"
			if _, corpusErr = fbcgen.Write(context.Background(), dir, fbcgen.Options{
				Packages: 30, Bundles: 360, BundleObjectBytes: 2000, Icons: true, Seed: 15,
			}); corpusErr != nil {
				return
			}
		}
		corpus, corpusErr = loadCorpus(dir)
	})
	if corpusErr != nil {
		t.Fatalf("load the packages to mutate: %v", corpusErr)
	}
	return corpus
}

func loadCorpus(dir string) ([]*corpusPackage, error) {
	byName := map[string]*corpusPackage{}
	var out []*corpusPackage
	err := declcfg.WalkMetasFS(context.Background(), os.DirFS(dir), func(_ string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		key := m.Package
		if m.Schema == declcfg.SchemaPackage {
			key = m.Name
		}
		p, ok := byName[key]
		if !ok {
			p = &corpusPackage{name: key}
			byName[key] = p
			out = append(out, p)
		}
		p.blobs = append(p.blobs, &corpusBlob{schema: m.Schema, key: key, raw: m.Blob, theirs: &theirDecoding{}})
		return nil
	}, declcfg.WithConcurrency(1))
	slices.SortFunc(out, func(a, b *corpusPackage) int { return strings.Compare(a.name, b.name) })
	return out, err
}

// judged is a set of packages as both sides read it: the files the index
// reads, and each package's blobs as operator-registry decodes them.
type judged struct {
	fsys   fstest.MapFS
	groups map[string]*declcfg.DeclarativeConfig
	// broken holds the packages of which a blob does not even load.
	broken map[string]error
}

func prepare(pkgs []*corpusPackage) judged {
	j := judged{fsys: fstest.MapFS{}, groups: map[string]*declcfg.DeclarativeConfig{}, broken: map[string]error{}}
	for i, p := range pkgs {
		var buf bytes.Buffer
		for _, b := range p.blobs {
			data, key := b.encoded()
			buf.Write(data)
			switch b.schema {
			case declcfg.SchemaPackage, declcfg.SchemaChannel, declcfg.SchemaBundle, declcfg.SchemaDeprecation:
			default:
				continue
			}
			part, err := b.decoded(data, key)
			g := j.groups[key]
			if g == nil {
				g = &declcfg.DeclarativeConfig{}
				j.groups[key] = g
			}
			if err != nil {
				j.broken[key] = err
				continue
			}
			g.Packages = append(g.Packages, part.Packages...)
			g.Channels = append(g.Channels, part.Channels...)
			for _, b := range part.Bundles {
				b.Properties = slices.Clone(b.Properties) // model.Normalize rewrites them
				g.Bundles = append(g.Bundles, b)
			}
			g.Deprecations = append(g.Deprecations, part.Deprecations...)
		}
		j.fsys[fmt.Sprintf("%04d/catalog.json", i)] = &fstest.MapFile{Data: buf.Bytes()}
	}
	return j
}

// theirVerdicts returns operator-registry's verdict on each package: nil
// when it accepts it.
func (j judged) theirVerdicts() map[string]error {
	out := map[string]error{}
	for key, cfg := range j.groups {
		err := j.broken[key]
		if err == nil {
			_, err = declcfg.ConvertToModel(*cfg)
		}
		out[key] = err
	}
	return out
}

// ourVerdicts indexes the packages and returns each one's problems,
// failing t unless Check finds the same problems as Build, at the same
// positions and in the same order.
func (j judged) ourVerdicts(t testing.TB) map[string][]string {
	t.Helper()
	db, _, problems := buildProblems(t, j.fsys)
	defer db.Close()
	checkMatchesBuild(t, db, j.fsys)
	return problems
}

// disagreement is a package on which the index and operator-registry
// disagree.
type disagreement struct {
	pkg    string
	ours   []string
	theirs error
}

func (d disagreement) String() string {
	if d.theirs == nil {
		return fmt.Sprintf("package %q: operator-registry accepts it, the index reports %q", d.pkg, d.ours)
	}
	return fmt.Sprintf("package %q: the index accepts it, operator-registry says %v", d.pkg, d.theirs)
}

// compareVerdicts indexes the packages and judges them with
// operator-registry, and returns the packages judged differently and those
// operator-registry rejects.
func compareVerdicts(t testing.TB, pkgs []*corpusPackage) (differ []disagreement, rejected map[string]bool) {
	t.Helper()
	j := prepare(pkgs)
	ours, theirs := j.ourVerdicts(t), j.theirVerdicts()
	rejected = map[string]bool{}
	for key, err := range theirs {
		rejected[key] = err != nil
	}
	var out []disagreement
	for key, err := range theirs {
		if (err != nil) != (len(ours[key]) > 0) {
			out = append(out, disagreement{key, ours[key], err})
		}
	}
	for key, problems := range ours {
		if _, ok := theirs[key]; !ok {
			out = append(out, disagreement{key, problems, nil})
		}
	}
	slices.SortFunc(out, func(a, b disagreement) int { return strings.Compare(a.pkg, b.pkg) })
	return out, rejected
}

// TestVerdictsMatchOperatorRegistry mutates each package of the corpus
// several times, one mutation per package and build, every kind of
// mutation in turn, and compares the index's verdicts with
// operator-registry's.
func TestVerdictsMatchOperatorRegistry(t *testing.T) {
	pkgs := verdictCorpus(t)
	t.Logf("mutating %d packages of %s", len(pkgs), corpusSource)
	if clean, _ := compareVerdicts(t, pkgs); len(clean) > 0 {
		t.Fatalf("the unmutated packages are judged differently: %v", clean)
	}
	const atLeast = 320
	rounds := (atLeast + len(pkgs) - 1) / len(pkgs)
	r := rand.New(rand.NewPCG(20, 15))
	tried, disagreed, broken := map[string]int{}, map[string]int{}, map[string]int{}
	var examples []string
	next := 0
	for range rounds {
		mutated := make([]*corpusPackage, len(pkgs))
		kinds := make([]string, len(pkgs))
		for i, p := range pkgs {
			mutated[i] = p.clone()
			kinds[i] = mutateOnce(r, mutated[i], &next)
			tried[kinds[i]]++
		}
		differ, rejected := compareVerdicts(t, mutated)
		for i, p := range pkgs {
			if rejected[p.name] {
				broken[kinds[i]]++
			}
		}
		for _, d := range differ {
			kind := "(another package's blobs)"
			for i, p := range pkgs {
				if p.name == d.pkg {
					kind = kinds[i]
				}
			}
			disagreed[kind]++
			if len(examples) < 10 {
				examples = append(examples, kind+": "+d.String())
			}
		}
	}
	total, failed, rejected := 0, 0, 0
	var report strings.Builder
	for _, kind := range slices.Sorted(maps.Keys(tried)) {
		total += tried[kind]
		failed += disagreed[kind]
		fmt.Fprintf(&report, "\n  %-28s %4d tried %4d rejected by operator-registry %4d disagreements", kind, tried[kind], broken[kind], disagreed[kind])
		rejected += broken[kind]
	}
	t.Logf("%d mutations, %d rejected by operator-registry, %d disagreements:%s", total, rejected, failed, report.String())
	// Agreement means little if the mutations rarely break a package
	// (both sides accept what is fine) or always do: most should, some
	// (no change, skips of bundles the catalog does not have) must not.
	if rejected < total/2 || rejected == total {
		t.Errorf("operator-registry rejected %d of %d mutated packages: the mutations do not exercise both verdicts", rejected, total)
	}
	if failed > 0 {
		t.Errorf("%d of %d mutations judged differently from operator-registry, e.g.\n%s", failed, total, strings.Join(examples, "\n"))
	}
}

// FuzzVerdicts applies one to three mutations, chosen by the fuzzer, to
// one package of the corpus and compares the index's verdict with
// operator-registry's.
func FuzzVerdicts(f *testing.F) {
	for i := range mutations {
		f.Add(uint16(i), uint8(i), uint64(i))
	}
	f.Fuzz(func(t *testing.T, pkg uint16, kind uint8, seed uint64) {
		pkgs := verdictCorpus(t)
		p := pkgs[int(pkg)%len(pkgs)].clone()
		r := rand.New(rand.NewPCG(seed, uint64(kind)))
		next := int(kind)
		var kinds []string
		for range 1 + seed%3 {
			kinds = append(kinds, mutateOnce(r, p, &next))
		}
		if d, _ := compareVerdicts(t, []*corpusPackage{p}); len(d) > 0 {
			t.Fatalf("after %v: %v", kinds, d)
		}
	})
}

// mutateOnce applies the mutation *next to p, or the first after it that
// applies, and returns its name.
func mutateOnce(r *rand.Rand, p *corpusPackage, next *int) string {
	for range mutations {
		m := mutations[*next%len(mutations)]
		*next++
		if m.apply(r, p) {
			return m.name
		}
	}
	return "none applies"
}

// Helpers that find a package's blobs and their parts; each blob they
// return is decoded, to be changed.

func (p *corpusPackage) all(schema string) []fbcObject {
	var out []fbcObject
	for _, b := range p.blobs {
		if b.schema == schema {
			out = append(out, b.object())
		}
	}
	return out
}

func (p *corpusPackage) pick(r *rand.Rand, schema string) fbcObject {
	var ix []int
	for i, b := range p.blobs {
		if b.schema == schema {
			ix = append(ix, i)
		}
	}
	if len(ix) == 0 {
		return nil
	}
	return p.blobs[ix[r.IntN(len(ix))]].object()
}

// add appends a blob, a copy of obj.
func (p *corpusPackage) add(schema string, obj fbcObject) {
	p.blobs = append(p.blobs, &corpusBlob{schema: schema, obj: deepCopy(obj).(fbcObject)})
}

func (p *corpusPackage) remove(obj fbcObject) {
	p.blobs = slices.DeleteFunc(p.blobs, func(b *corpusBlob) bool {
		return b.obj != nil && reflect.ValueOf(b.obj).Pointer() == reflect.ValueOf(obj).Pointer()
	})
}

func objects(v any) []fbcObject {
	list, _ := v.([]any)
	var out []fbcObject
	for _, x := range list {
		if o, ok := x.(fbcObject); ok {
			out = append(out, o)
		}
	}
	return out
}

func pickOf[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// pickEntry returns a random entry of a random channel with entries.
func (p *corpusPackage) pickEntry(r *rand.Rand) (fbcObject, fbcObject) {
	var chans []fbcObject
	for _, ch := range p.all(declcfg.SchemaChannel) {
		if len(objects(ch["entries"])) > 0 {
			chans = append(chans, ch)
		}
	}
	if len(chans) == 0 {
		return nil, nil
	}
	ch := pickOf(r, chans)
	return ch, pickOf(r, objects(ch["entries"]))
}

// olmPackageValue returns the value of a bundle's olm.package property.
func olmPackageValue(b fbcObject) fbcObject {
	for _, prop := range objects(b["properties"]) {
		if prop["type"] == "olm.package" {
			v, _ := prop["value"].(fbcObject)
			return v
		}
	}
	return nil
}

func appendTo(obj fbcObject, key string, v any) {
	list, _ := obj[key].([]any)
	obj[key] = append(list, v)
}

// Values mutations choose from: some valid, most not.
var (
	someImages = []string{"oci://quay.io/example/op@sha256:0123", "quay.io/example/op@", "quay.io/Example/op:v1",
		"", "quay.io/example/op:v1.2.3", "example.com:5000/a/b@sha256:" + strings.Repeat("a", 64), "a b"}
	someVersions   = []string{"v1.0.0", "1.0", "", "1.0.0-01", "1.0.0+build.1", "1.0.0-rc.1", "99.0.0", "1.0.0-"}
	someReleases   = []string{"1", "01", "a.b", "x_y", "", strings.Repeat("9", 21), "2.beta"}
	someSkipRanges = []string{">=1.0.0 <2.0.0", "v>=1.0.0", ">=v1.0.0 <2.0.0", "<1.0.0 ||", "1.x", ">=0.0.0", "<=1.0.0-0", "foo"}
	badValues      = []any{"x", json.Number("5"), []any{}, nil, fbcObject{"group": json.Number("1")}, true}
)

// badValue returns a copy of one of badValues: the package mutated may be
// mutated again, and must share nothing with them (a shared object once
// came to hold itself).
func badValue(r *rand.Rand) any { return deepCopy(pickOf(r, badValues)) }

type mutation struct {
	name  string
	apply func(r *rand.Rand, p *corpusPackage) bool
}

var mutations = []mutation{
	{"no change", func(*rand.Rand, *corpusPackage) bool { return true }},
	{"entry without bundle", func(r *rand.Rand, p *corpusPackage) bool {
		ch, e := p.pickEntry(r)
		if ch == nil {
			return false
		}
		appendTo(ch, "entries", fbcObject{"name": p.name + ".v9.9.9", "replaces": e["name"]})
		return true
	}},
	{"drop bundle", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		p.remove(b)
		return b != nil
	}},
	{"replaces missing", func(r *rand.Rand, p *corpusPackage) bool {
		_, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		e["replaces"] = p.name + ".v0.0.1-missing"
		return true
	}},
	{"skips missing", func(r *rand.Rand, p *corpusPackage) bool {
		_, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		appendTo(e, "skips", p.name+".v0.0.1-missing")
		return true
	}},
	{"replaces another entry", func(r *rand.Rand, p *corpusPackage) bool {
		ch, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		e["replaces"] = pickOf(r, objects(ch["entries"]))["name"]
		return true
	}},
	{"skips another entry", func(r *rand.Rand, p *corpusPackage) bool {
		ch, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		appendTo(e, "skips", pickOf(r, objects(ch["entries"]))["name"])
		return true
	}},
	{"drop edges", func(r *rand.Rand, p *corpusPackage) bool {
		_, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		delete(e, "replaces")
		delete(e, "skips")
		return true
	}},
	{"empty skip", func(r *rand.Rand, p *corpusPackage) bool {
		_, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		appendTo(e, "skips", "")
		return true
	}},
	{"skipRange", func(r *rand.Rand, p *corpusPackage) bool {
		_, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		e["skipRange"] = pickOf(r, someSkipRanges)
		return true
	}},
	{"remove entry", func(r *rand.Rand, p *corpusPackage) bool {
		ch, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		entries := ch["entries"].([]any)
		ch["entries"] = slices.DeleteFunc(slices.Clone(entries), func(x any) bool { return x.(fbcObject)["name"] == e["name"] })
		return true
	}},
	{"duplicate entry", func(r *rand.Rand, p *corpusPackage) bool {
		ch, e := p.pickEntry(r)
		if e == nil {
			return false
		}
		appendTo(ch, "entries", deepCopy(e))
		return true
	}},
	{"empty channel", func(r *rand.Rand, p *corpusPackage) bool {
		ch := p.pick(r, declcfg.SchemaChannel)
		if ch == nil {
			return false
		}
		ch["entries"] = []any{}
		return true
	}},
	{"channel name", func(r *rand.Rand, p *corpusPackage) bool {
		ch := p.pick(r, declcfg.SchemaChannel)
		if ch == nil {
			return false
		}
		ch["name"] = pickOf(r, []string{"", "renamed"})
		return true
	}},
	{"duplicate channel", func(r *rand.Rand, p *corpusPackage) bool {
		ch := p.pick(r, declcfg.SchemaChannel)
		if ch == nil {
			return false
		}
		p.add(declcfg.SchemaChannel, ch)
		return true
	}},
	{"channel of another package", func(r *rand.Rand, p *corpusPackage) bool {
		ch := p.pick(r, declcfg.SchemaChannel)
		if ch == nil {
			return false
		}
		ch["package"] = p.name + "-other"
		return true
	}},
	{"defaultChannel", func(r *rand.Rand, p *corpusPackage) bool {
		pkg := p.pick(r, declcfg.SchemaPackage)
		if pkg == nil {
			return false
		}
		pkg["defaultChannel"] = pickOf(r, []string{"", "nonexistent"})
		return true
	}},
	{"drop olm.package", func(r *rand.Rand, p *corpusPackage) bool {
		pkg := p.pick(r, declcfg.SchemaPackage)
		p.remove(pkg)
		return pkg != nil
	}},
	{"duplicate olm.package", func(r *rand.Rand, p *corpusPackage) bool {
		pkg := p.pick(r, declcfg.SchemaPackage)
		if pkg == nil {
			return false
		}
		p.add(declcfg.SchemaPackage, pkg)
		return true
	}},
	{"package name", func(r *rand.Rand, p *corpusPackage) bool {
		pkg := p.pick(r, declcfg.SchemaPackage)
		if pkg == nil {
			return false
		}
		name := pickOf(r, []string{"Bad_Name", "", strings.Repeat("a", 64)})
		pkg["name"] = name
		for _, b := range p.blobs {
			if b.schema != declcfg.SchemaPackage && r.IntN(2) == 0 {
				b.object()["package"] = name
			}
		}
		return true
	}},
	{"duplicate bundle", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil {
			return false
		}
		p.add(declcfg.SchemaBundle, b)
		return true
	}},
	{"bundle name", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil {
			return false
		}
		b["name"] = pickOf(r, []string{"", p.name + ".renamed"})
		return true
	}},
	{"bundle of another package", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil {
			return false
		}
		b["package"] = pickOf(r, []string{"", p.name + "-other"})
		return true
	}},
	{"drop olm.package property", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil {
			return false
		}
		props, _ := b["properties"].([]any)
		b["properties"] = slices.DeleteFunc(slices.Clone(props), func(x any) bool { return x.(fbcObject)["type"] == "olm.package" })
		return true
	}},
	{"two olm.package properties", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil || olmPackageValue(b) == nil {
			return false
		}
		appendTo(b, "properties", fbcObject{"type": "olm.package", "value": deepCopy(olmPackageValue(b))})
		return true
	}},
	{"olm.package of another package", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil || olmPackageValue(b) == nil {
			return false
		}
		olmPackageValue(b)["packageName"] = pickOf(r, []string{"", p.name + "-other"})
		return true
	}},
	{"version", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil || olmPackageValue(b) == nil {
			return false
		}
		olmPackageValue(b)["version"] = pickOf(r, someVersions)
		return true
	}},
	{"version of another bundle", func(r *rand.Rand, p *corpusPackage) bool {
		b, other := p.pick(r, declcfg.SchemaBundle), p.pick(r, declcfg.SchemaBundle)
		if b == nil || olmPackageValue(b) == nil || olmPackageValue(other) == nil {
			return false
		}
		olmPackageValue(b)["version"] = olmPackageValue(other)["version"]
		return true
	}},
	{"release", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		pp := olmPackageValue(b)
		if pp == nil {
			return false
		}
		release := pickOf(r, someReleases)
		pp["release"] = release
		if r.IntN(2) == 0 {
			// The name a release asks for, in the channels too.
			name := p.name + "-v" + fmt.Sprint(pp["version"]) + "-" + release
			for _, ch := range p.all(declcfg.SchemaChannel) {
				for _, e := range objects(ch["entries"]) {
					if e["name"] == b["name"] {
						e["name"] = name
					}
				}
			}
			b["name"] = name
		}
		return true
	}},
	{"image", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil {
			return false
		}
		b["image"] = pickOf(r, someImages)
		return true
	}},
	{"no image, no objects", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil {
			return false
		}
		delete(b, "image")
		props, _ := b["properties"].([]any)
		b["properties"] = slices.DeleteFunc(slices.Clone(props), func(x any) bool { return x.(fbcObject)["type"] == "olm.bundle.object" })
		return true
	}},
	{"related image", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		if b == nil {
			return false
		}
		appendTo(b, "relatedImages", fbcObject{"name": "extra", "image": pickOf(r, someImages)})
		return true
	}},
	{"property value", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		props := objects(b["properties"])
		if len(props) == 0 {
			return false
		}
		prop := pickOf(r, props)
		if v := badValue(r); v == nil && r.IntN(2) == 0 {
			delete(prop, "value")
		} else {
			prop["value"] = v
		}
		return true
	}},
	{"property field type", func(r *rand.Rand, p *corpusPackage) bool {
		b := p.pick(r, declcfg.SchemaBundle)
		var withFields []fbcObject
		for _, prop := range objects(b["properties"]) {
			if v, ok := prop["value"].(fbcObject); ok && len(v) > 0 {
				withFields = append(withFields, v)
			}
		}
		if len(withFields) == 0 {
			return false
		}
		v := pickOf(r, withFields)
		keys := slices.Sorted(maps.Keys(v))
		v[pickOf(r, keys)] = badValue(r)
		return true
	}},
	{"deprecation", func(r *rand.Rand, p *corpusPackage) bool {
		d := p.pick(r, declcfg.SchemaDeprecation)
		if d == nil || r.IntN(3) == 0 {
			p.add(declcfg.SchemaDeprecation, fbcObject{"schema": declcfg.SchemaDeprecation, "package": p.name, "entries": []any{}})
			d = p.blobs[len(p.blobs)-1].obj
		}
		bundle, channel := p.pick(r, declcfg.SchemaBundle), p.pick(r, declcfg.SchemaChannel)
		ref := func(schema string, name any) fbcObject {
			return fbcObject{"reference": fbcObject{"schema": schema, "name": name}, "message": "deprecated"}
		}
		var entry fbcObject
		switch r.IntN(9) {
		case 0:
			entry = ref(declcfg.SchemaBundle, p.name+".v0.0.1-missing")
		case 1:
			entry = ref(declcfg.SchemaChannel, "missing-channel")
		case 2:
			entry = ref(declcfg.SchemaPackage, "some-name")
		case 3:
			entry = ref("olm.other", "x")
		case 4:
			entry = ref("", "x")
		case 5:
			if bundle == nil {
				return false
			}
			entry = ref(declcfg.SchemaBundle, bundle["name"])
			entry["message"] = pickOf(r, []string{"", "deprecated"})
		case 6:
			if channel == nil {
				return false
			}
			entry = ref(declcfg.SchemaChannel, channel["name"])
			entry["message"] = pickOf(r, []string{"", "deprecated"})
		case 7:
			entry = fbcObject{"reference": fbcObject{"schema": declcfg.SchemaPackage}, "message": pickOf(r, []string{"", "deprecated"})}
		case 8:
			d["package"] = pickOf(r, []string{"", p.name + "-other"})
			return true
		}
		appendTo(d, "entries", entry)
		if r.IntN(4) == 0 {
			appendTo(d, "entries", deepCopy(entry))
		}
		return true
	}},
	{"second olm.deprecations", func(r *rand.Rand, p *corpusPackage) bool {
		for range 2 {
			p.add(declcfg.SchemaDeprecation, fbcObject{"schema": declcfg.SchemaDeprecation, "package": p.name, "entries": []any{}})
		}
		return true
	}},
}
