package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/sqltrace"
)

const demoDir = "../../test/testdata/demo"

// openIndex builds the index of the catalog in fsys and reads it through
// traced connections, which the returned database shares.
func openIndex(t *testing.T, fsys fs.FS) (*query.Catalog, *sqlx.DB, *sqltrace.Trace) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.db")
	if _, err := index.Build(context.Background(), path, index.Content{FS: fsys, Ref: "test", Digest: "sha256:test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	db, trace := sqltrace.Open(t, path)
	content, gz, err := index.OpenStreams(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { content.Close(); gz.Close() })
	c := query.New(db, content)
	t.Cleanup(c.Close)
	return c, db, trace
}

// indexed is the index of the catalog in dir and the facts read from its FBC.
func indexed(t *testing.T, dir string) (*query.Catalog, *fbcfacts.Catalog) {
	t.Helper()
	c, _, _ := openIndex(t, os.DirFS(dir))
	return c, fbcfacts.Load(t, dir)
}

// phantomDemo writes the demo catalog with phantom entries (see
// fbcgen.WritePhantomDemo) and returns its directory.
func phantomDemo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := fbcgen.WritePhantomDemo(demoDir, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// versionlessDemo writes the demo catalog with a bundle without a version
// (see fbcgen.WriteVersionlessDemo) and returns its directory.
func versionlessDemo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := fbcgen.WriteVersionlessDemo(demoDir, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// forDemos runs check on the demo catalog, on the same with phantom
// entries, and on the same with a bundle without a version: whatever the
// catalog, every head, edge and provider the read API answers is a bundle
// the catalog has, and every head and edge one with a version.
func forDemos(t *testing.T, check func(*testing.T, *query.Catalog, *fbcfacts.Catalog)) {
	for _, demo := range []struct {
		name string
		dir  string
	}{{"demo", demoDir}, {"phantom entries", phantomDemo(t)}, {"versionless bundle", versionlessDemo(t)}} {
		t.Run(demo.name, func(t *testing.T) {
			c, facts := indexed(t, demo.dir)
			check(t, c, facts)
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// csvMetadata is the olm.csv.metadata of a bundle, as the FBC gives it.
type csvMetadata struct {
	DisplayName string   `json:"displayName"`
	Keywords    []string `json:"keywords"`
	Maturity    string   `json:"maturity"`
	Provider    struct {
		Name string `json:"name"`
	} `json:"provider"`
	Annotations map[string]string              `json:"annotations"`
	Links       []struct{ Name, URL string }   `json:"links"`
	Maintainers []struct{ Name, Email string } `json:"maintainers"`
}

func TestPackages(t *testing.T) { forDemos(t, checkPackages) }

func checkPackages(t *testing.T, c *query.Catalog, facts *fbcfacts.Catalog) {
	ctx := context.Background()
	idx, err := c.PackageSummaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, p := range idx.Items {
		listed = append(listed, p.Name)
	}
	if want := sortedKeys(facts.Packages); !slices.Equal(listed, want) {
		t.Errorf("package list %v, want %v", listed, want)
	}
	for _, name := range sortedKeys(facts.Packages) {
		t.Run(name, func(t *testing.T) {
			want := facts.Packages[name]
			p, err := c.Package(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			hasIcon := want.Icon != nil && len(want.Icon.Data) > 0
			if p.DefaultChannel != want.DefaultChannel || p.Description != want.Description || p.HasIcon != hasIcon {
				t.Errorf("package %+v, want default channel %q, description %q, icon %v", p, want.DefaultChannel, want.Description, hasIcon)
			}
			sum, ok := idx.Get(name)
			if !ok {
				t.Fatalf("no list entry")
			}
			if want := sortedKeys(facts.Channels[name]); !slices.Equal(sum.Channels, want) {
				t.Errorf("listed channels %v, want %v", sum.Channels, want)
			}
			// What a console lists comes from the default channel's head's
			// olm.csv.metadata.
			var meta csvMetadata
			if h := facts.Head(name, want.DefaultChannel); h != "" {
				for _, prop := range facts.Bundles[name][h].Properties {
					if prop.Type == "olm.csv.metadata" {
						if err := json.Unmarshal(prop.Value, &meta); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			d := p.Display
			if d.DisplayName != meta.DisplayName || d.Provider != meta.Provider.Name || d.Maturity != meta.Maturity ||
				d.ShortDescription != meta.Annotations["description"] || !slices.Equal(d.Keywords, meta.Keywords) ||
				len(d.Links) != len(meta.Links) || len(d.Maintainers) != len(meta.Maintainers) {
				t.Errorf("display %+v, want it from %+v", d, meta)
			}
			for i, l := range meta.Links {
				if d.Links[i] != (query.Link{Name: l.Name, URL: l.URL}) {
					t.Errorf("link %d: %+v, want %+v", i, d.Links[i], l)
				}
			}
			for i, m := range meta.Maintainers {
				if d.Maintainers[i] != (query.Maintainer{Name: m.Name, Email: m.Email}) {
					t.Errorf("maintainer %d: %+v, want %+v", i, d.Maintainers[i], m)
				}
			}
			if !reflectEqualDisplay(sum.Display, d) {
				t.Errorf("listed display %+v, package's %+v", sum.Display, d)
			}
		})
	}
	if _, err := c.Package(ctx, "no-such-package"); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("unknown package: %v, want ErrNotFound", err)
	}
}

func reflectEqualDisplay(a, b query.Display) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestChannels(t *testing.T) { forDemos(t, checkChannels) }

func checkChannels(t *testing.T, c *query.Catalog, facts *fbcfacts.Catalog) {
	ctx := context.Background()
	for _, pkgName := range sortedKeys(facts.Channels) {
		pkg, err := c.Package(ctx, pkgName)
		if err != nil {
			t.Fatal(err)
		}
		summaries, err := c.Channels(ctx, pkg)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range summaries {
			names = append(names, s.Name)
		}
		if want := sortedKeys(facts.Channels[pkgName]); !slices.Equal(names, want) {
			t.Errorf("%s: channels %v, want %v", pkgName, names, want)
		}
		for _, chName := range sortedKeys(facts.Channels[pkgName]) {
			t.Run(pkgName+"/"+chName, func(t *testing.T) {
				want := facts.Channels[pkgName][chName]
				ch, err := c.Channel(ctx, pkg, chName)
				if err != nil {
					t.Fatal(err)
				}
				if ch.IsDefault != (chName == facts.Packages[pkgName].DefaultChannel) || ch.EntryCount != len(want.Entries) {
					t.Errorf("default %v, %d entries; want %v, %d", ch.IsDefault, ch.EntryCount, !ch.IsDefault, len(want.Entries))
				}
				if h := facts.Head(pkgName, chName); ch.Head.Name != h || (h == "") == (ch.HeadProblem == "") {
					t.Errorf("head %+v (problem %q), want %q", ch.Head, ch.HeadProblem, h)
				} else if h != "" && ch.Head.Version != facts.Bundles[pkgName][h].Version() {
					t.Errorf("head version %q, want %q", ch.Head.Version, facts.Bundles[pkgName][h].Version())
				}
				if len(ch.Entries) != len(want.Entries) {
					t.Fatalf("%d entries, want %d", len(ch.Entries), len(want.Entries))
				}
				for i, e := range want.Entries {
					got := ch.Entries[i]
					if got.Name != e.Name || got.Replaces != e.Replaces || got.SkipRange != e.SkipRange || !slices.Equal(got.Skips, e.Skips) ||
						got.Version != facts.Bundles[pkgName][e.Name].Version() {
						t.Errorf("entry %d: %+v, want %+v", i, got, e)
					}
				}
			})
		}
	}
	pkg, _ := c.Package(ctx, "aurora-cache")
	if _, err := c.Channel(ctx, pkg, "no-such-channel"); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("unknown channel: %v, want ErrNotFound", err)
	}
}

func TestBundles(t *testing.T) { forDemos(t, checkBundles) }

func checkBundles(t *testing.T, c *query.Catalog, facts *fbcfacts.Catalog) {
	ctx := context.Background()
	for _, pkgName := range sortedKeys(facts.Bundles) {
		// Every bundle, newest first: ranks descend.
		all, err := c.Bundles(ctx, pkgName, "", 1<<62, -1)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for i, b := range all {
			names = append(names, b.Name)
			if i > 0 && b.Rank >= all[i-1].Rank {
				t.Errorf("%s: %s ranks %d after %s's %d", pkgName, b.Name, b.Rank, all[i-1].Name, all[i-1].Rank)
			}
		}
		sort.Strings(names)
		if want := sortedKeys(facts.Bundles[pkgName]); !slices.Equal(names, want) {
			t.Errorf("%s: bundles %v, want %v", pkgName, names, want)
		}
		summaries, err := c.BundleSummaries(ctx, pkgName, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range summaries {
			if want := listingChannels(facts, pkgName, s.Name); !slices.Equal(s.Channels, want) {
				t.Errorf("%s: channels %v, want %v", s.Name, s.Channels, want)
			}
		}
		for _, chName := range sortedKeys(facts.Channels[pkgName]) {
			inChannel, err := c.Bundles(ctx, pkgName, chName, 1<<62, -1)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, b := range inChannel {
				got = append(got, b.Name)
			}
			for _, e := range facts.Channels[pkgName][chName].Entries {
				if _, ok := facts.Bundles[pkgName][e.Name]; ok && !slices.Contains(want, e.Name) {
					want = append(want, e.Name)
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s/%s: bundles %v, want %v", pkgName, chName, got, want)
			}
		}
		for _, name := range sortedKeys(facts.Bundles[pkgName]) {
			t.Run(name, func(t *testing.T) { checkBundleDetail(t, c, facts, pkgName, name) })
		}
	}
	if _, err := c.BundleDetail(ctx, "aurora-cache", "no-such-bundle"); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("unknown bundle: %v, want ErrNotFound", err)
	}
}

// listingChannels are the names of the channels of pkg that list bundle.
func listingChannels(facts *fbcfacts.Catalog, pkg, bundle string) []string {
	var out []string
	for _, chName := range sortedKeys(facts.Channels[pkg]) {
		for _, e := range facts.Channels[pkg][chName].Entries {
			if e.Name == bundle && !slices.Contains(out, chName) {
				out = append(out, chName)
			}
		}
	}
	return out
}

func checkBundleDetail(t *testing.T, c *query.Catalog, facts *fbcfacts.Catalog, pkg, name string) {
	want := facts.Bundles[pkg][name]
	b, err := c.BundleDetail(context.Background(), pkg, name)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != name || b.Package != pkg || b.Image != want.Image || b.Version != want.Version() {
		t.Errorf("bundle %s %s %s %s, want %s %s %s %s", b.Name, b.Package, b.Image, b.Version, name, pkg, want.Image, want.Version())
	}
	if len(b.Properties) != len(want.Properties) {
		t.Fatalf("%d properties, want %d", len(b.Properties), len(want.Properties))
	}
	for i, p := range want.Properties {
		if b.Properties[i].Type != p.Type || !fbcfacts.JSONEqual(b.Properties[i].Value, p.Value) {
			t.Errorf("property %d: %s %s, want %s %s", i, b.Properties[i].Type, b.Properties[i].Value, p.Type, p.Value)
		}
	}
	var images []query.RelatedImage
	for _, ri := range want.RelatedImages {
		images = append(images, query.RelatedImage{Name: ri.Name, Image: ri.Image})
	}
	if !slices.Equal(b.RelatedImages, images) {
		t.Errorf("related images %v, want %v", b.RelatedImages, images)
	}
	for _, g := range []struct {
		typ string
		got []query.GVK
	}{{"olm.gvk", b.ProvidedGVKs}, {"olm.gvk.required", b.RequiredGVKs}} {
		var wantGVKs []query.GVK
		for _, w := range want.GVKs(g.typ) {
			wantGVKs = append(wantGVKs, query.GVK(w))
		}
		if !slices.Equal(g.got, wantGVKs) {
			t.Errorf("%s: %v, want %v", g.typ, g.got, wantGVKs)
		}
	}
	var channels []string
	for _, ch := range b.Channels {
		channels = append(channels, ch.Channel)
		if isHead := facts.Head(pkg, ch.Channel) == name; ch.IsHead != isHead {
			t.Errorf("channel %s: head %v, want %v", ch.Channel, ch.IsHead, isHead)
		}
	}
	if want := listingChannels(facts, pkg, name); !slices.Equal(slices.Compact(channels), want) {
		t.Errorf("channels %v, want %v", channels, want)
	}
}

func TestUpgradesFrom(t *testing.T) { forDemos(t, checkUpgradesFrom) }

func checkUpgradesFrom(t *testing.T, c *query.Catalog, facts *fbcfacts.Catalog) {
	ctx := context.Background()
	for _, pkgName := range sortedKeys(facts.Bundles) {
		for _, from := range sortedKeys(facts.Bundles[pkgName]) {
			for _, channel := range append([]string{""}, sortedKeys(facts.Channels[pkgName])...) {
				t.Run(pkgName+"/"+from+"/"+channel, func(t *testing.T) {
					src, err := c.BundleByName(ctx, pkgName, from)
					if err != nil {
						t.Fatal(err)
					}
					got, err := c.UpgradesFrom(ctx, pkgName, src, channel)
					if err != nil {
						t.Fatal(err)
					}
					var gotEdges []string
					for _, e := range got.Edges {
						for _, r := range e.Rules {
							gotEdges = append(gotEdges, e.Channel+" "+e.Name+" "+string(r))
						}
						if e.Version != facts.Bundles[pkgName][e.Name].Version() {
							t.Errorf("%s: version %q, want %q", e.Name, e.Version, facts.Bundles[pkgName][e.Name].Version())
						}
					}
					sort.Strings(gotEdges)
					if want := upgradeEdges(facts, pkgName, from, channel); !slices.Equal(slices.Compact(gotEdges), want) {
						t.Errorf("edges %v, want %v", gotEdges, want)
					}
					var gotHeads, wantHeads []string
					for _, h := range got.Heads {
						gotHeads = append(gotHeads, h.Channel+" "+h.Name)
						if want := facts.Bundles[pkgName][h.Name].Version(); h.Version != want {
							t.Errorf("head %s of %s: version %q, want %q", h.Name, h.Channel, h.Version, want)
						}
					}
					for _, chName := range sortedKeys(facts.Channels[pkgName]) {
						h := facts.Head(pkgName, chName)
						if h != "" && (chName == channel || channel == "" && slices.Contains(listingChannels(facts, pkgName, from), chName)) {
							wantHeads = append(wantHeads, chName+" "+h)
						}
					}
					if !slices.Equal(gotHeads, wantHeads) {
						t.Errorf("heads %v, want %v", gotHeads, wantHeads)
					}
				})
			}
		}
	}
}

// upgradeEdges computes from the FBC, by OLM's rules, where bundle from of
// pkg may upgrade to in channel (every channel when ""): "channel bundle
// rule", sorted. A bundle without a version is no target.
func upgradeEdges(facts *fbcfacts.Catalog, pkg, from, channel string) []string {
	v, vErr := semver.Parse(facts.Bundles[pkg][from].Version())
	var out []string
	for _, chName := range sortedKeys(facts.Channels[pkg]) {
		if channel != "" && chName != channel {
			continue
		}
		for _, e := range facts.Channels[pkg][chName].Entries {
			if b, ok := facts.Bundles[pkg][e.Name]; !ok || b.Version() == "" || e.Name == from {
				continue
			}
			if e.Replaces == from {
				out = append(out, chName+" "+e.Name+" replaces")
			}
			if slices.Contains(e.Skips, from) {
				out = append(out, chName+" "+e.Name+" skips")
			}
			if r, err := semver.ParseRange(e.SkipRange); e.SkipRange != "" && err == nil && vErr == nil && r(v) {
				out = append(out, chName+" "+e.Name+" skipRange")
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestProviders(t *testing.T) { forDemos(t, checkProviders) }

func checkProviders(t *testing.T, c *query.Catalog, facts *fbcfacts.Catalog) {
	ctx := context.Background()
	gvks := map[fbcfacts.GVK]bool{}
	for _, bundles := range facts.Bundles {
		for _, b := range bundles {
			for _, g := range b.GVKs("olm.gvk") {
				gvks[g] = true
			}
		}
	}
	for g := range gvks {
		for _, latest := range []bool{false, true} {
			got, err := c.Providers(ctx, query.GVK(g), latest)
			if err != nil {
				t.Fatal(err)
			}
			var gotNames, want []string
			for _, p := range got {
				gotNames = append(gotNames, p.Package+" "+p.Bundle)
				for _, ch := range p.Channels {
					wantDefault := ch.Name == facts.Packages[p.Package].DefaultChannel
					if ch.IsHead != (facts.Head(p.Package, ch.Name) == p.Bundle) || ch.IsDefault != wantDefault {
						t.Errorf("%v: %s in %s: head %v, default %v", g, p.Bundle, ch.Name, ch.IsHead, ch.IsDefault)
					}
				}
			}
			for _, pkgName := range sortedKeys(facts.Bundles) {
				for _, name := range sortedKeys(facts.Bundles[pkgName]) {
					if !slices.Contains(facts.Bundles[pkgName][name].GVKs("olm.gvk"), g) {
						continue
					}
					heads := false
					for _, ch := range listingChannels(facts, pkgName, name) {
						heads = heads || facts.Head(pkgName, ch) == name
					}
					if !latest || heads {
						want = append(want, pkgName+" "+name)
					}
				}
			}
			sort.Strings(gotNames)
			if !slices.Equal(gotNames, want) {
				t.Errorf("%v latest=%v: providers %v, want %v", g, latest, gotNames, want)
			}
		}
	}
}

func TestCountsAndBlobs(t *testing.T) {
	c, db, _ := openIndex(t, os.DirFS(demoDir))
	facts := fbcfacts.Load(t, demoDir)
	ctx := context.Background()
	counts, err := c.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (query.Counts{Packages: len(facts.Packages), Channels: facts.CountChannels(), Bundles: facts.CountBundles()}); counts != want {
		t.Errorf("counts %+v, want %+v", counts, want)
	}
	bySchema := map[string]int{}
	for _, b := range facts.Blobs {
		bySchema[b.Schema]++
	}
	schemas, err := c.SchemaCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []query.SchemaCount
	for _, s := range sortedKeys(bySchema) {
		want = append(want, query.SchemaCount{Schema: s, Count: bySchema[s]})
	}
	if !slices.Equal(schemas, want) {
		t.Errorf("schema counts %v, want %v", schemas, want)
	}

	var path string
	if err := db.Get(&path, `SELECT file FROM pragma_database_list WHERE name = 'main'`); err != nil {
		t.Fatal(err)
	}
	stream, gz, err := index.OpenStreams(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	defer gz.Close()
	content, err := io.ReadAll(io.NewSectionReader(stream, 0, stream.Size()))
	if err != nil {
		t.Fatal(err)
	}
	if string(content) != string(facts.JSONLines()) {
		t.Errorf("the content file differs from the catalog's blobs")
	}
	for _, f := range []query.BlobFilter{{}, {Schema: "olm.bundle"}, {Package: "quarry-db"}, {Schema: "olm.package", Name: "paper-lantern"}, {Name: "no such blob"}} {
		ranges, err := c.BlobRanges(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		for i, r := range ranges {
			if i > 0 && r.Offset <= ranges[i-1].Offset+ranges[i-1].Length {
				t.Errorf("%+v: range %d at %d is not after the one before it, ending at %d", f, i, r.Offset, ranges[i-1].Offset+ranges[i-1].Length)
			}
			got = append(got, content[r.Offset:r.Offset+r.Length]...)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want) // catalogd's encoding, as fbcfacts.JSONLines
		enc.SetEscapeHTML(false)
		for _, b := range facts.Blobs {
			if (f.Schema == "" || b.Schema == f.Schema) && (f.Package == "" || b.Package == f.Package) && (f.Name == "" || b.Name == f.Name) {
				if err := enc.Encode(b.Doc); err != nil {
					t.Fatal(err)
				}
			}
		}
		if string(got) != want.String() {
			t.Errorf("%+v: the ranges hold %d bytes, not the %d of the matching blobs", f, len(got), want.Len())
		}
	}
}

// TestUpgradesQueryCount checks that an upgrades answer takes the same few
// queries whatever its length: it used to read each edge's bundle with a
// query of its own.
func TestUpgradesQueryCount(t *testing.T) {
	const maxQueries = 10
	for _, n := range []int{5, 300} {
		t.Run(fmt.Sprint(n, " bundles"), func(t *testing.T) {
			// With skipRanges, every newer bundle is an upgrade of the oldest.
			c, _, trace := openIndex(t, fbcgen.ReplacesChain("p", n, true))
			ctx := context.Background()
			src, err := c.BundleByName(ctx, "p", "p.v1.0.1")
			if err != nil {
				t.Fatal(err)
			}
			before := trace.Runs()
			got, err := c.UpgradesFrom(ctx, "p", src, "")
			if err != nil {
				t.Fatal(err)
			}
			queries := trace.Runs() - before
			if len(got.Edges) != n-1 {
				t.Errorf("%d upgrades from the oldest of %d bundles, want %d", len(got.Edges), n, n-1)
			}
			for _, e := range got.Edges {
				want := "[skipRange]"
				if e.Name == "p.v1.0.2" {
					want = "[replaces skipRange]"
				}
				if fmt.Sprint(e.Rules) != want {
					t.Errorf("%s: rules %v, want %s", e.Name, e.Rules, want)
				}
			}
			if queries > maxQueries {
				t.Errorf("the answer took %d queries, want at most %d whatever its length", queries, maxQueries)
			}
		})
	}
}
