package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/blang/semver/v4"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// catalogCase is a catalog the semantic tests run on.
type catalogCase struct {
	name string
	dir  func(t *testing.T) string
}

// catalogCases are the catalogs every semantic test runs on.
func catalogCases() []catalogCase {
	return []catalogCase{
		{"demo", func(*testing.T) string { return demoDir }},
		{"demo with phantom entries", func(t *testing.T) string {
			dir := t.TempDir()
			if err := fbcgen.WritePhantomDemo(demoDir, dir); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{"community-v4.20", func(t *testing.T) string { return fbcfacts.SharedCommunity(t) }},
	}
}

// serve serves the case's catalog as "cat" and reads its files for the
// expected answers.
func (tc catalogCase) serve(t *testing.T) (*harness, *fbcfacts.Catalog) {
	t.Helper()
	dir := tc.dir(t)
	want := fbcfacts.Load(t, dir)
	h := newHarness(t)
	h.add("cat", dir, 0)
	return h, want
}

func ptr[T any](v T) *T { return &v }

func sortedNames(m map[string]fbcfacts.Bundle) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestChannelHeads(t *testing.T) {
	for _, tc := range catalogCases() {
		t.Run(tc.name, func(t *testing.T) {
			h, want := tc.serve(t)
			ctx := context.Background()
			for pkg, channels := range want.Channels {
				resp, err := h.client.ListChannelsWithResponse(ctx, "cat", pkg, nil)
				if err != nil || resp.JSON200 == nil {
					t.Fatalf("channels of %s: %v %s", pkg, err, resp.Body)
				}
				if len(resp.JSON200.Items) != len(channels) {
					t.Errorf("%s: %d channels, catalog has %d", pkg, len(resp.JSON200.Items), len(channels))
				}
				for _, got := range resp.JSON200.Items {
					ch := channels[got.Name]
					if head := want.Head(pkg, got.Name); head != "" {
						if got.Head.Name != head || got.Head.Version != want.Bundles[pkg][head].Version() {
							t.Errorf("%s/%s: head %+v, catalog says %s", pkg, got.Name, got.Head, head)
						}
					} else if got.Head.Name != "" || got.HeadProblem == "" {
						t.Errorf("%s/%s: head %+v problem %q, catalog has heads %v", pkg, got.Name, got.Head, got.HeadProblem, ch.Heads())
					}
					if got.EntryCount != len(ch.Entries) || got.IsDefault != (want.Packages[pkg].DefaultChannel == got.Name) {
						t.Errorf("%s/%s: %d entries default=%v", pkg, got.Name, got.EntryCount, got.IsDefault)
					}
				}
			}
		})
	}
}

// expectedUpgrades computes OLM's direct upgrades from a bundle straight from
// the catalog's channels: "bundle@channel" -> rules.
func expectedUpgrades(c *fbcfacts.Catalog, pkg string, from fbcfacts.Bundle) map[string][]client.UpgradeRule {
	out := map[string][]client.UpgradeRule{}
	fromVersion, verr := semver.Parse(from.Version())
	for chName, ch := range c.Channels[pkg] {
		for _, e := range ch.Entries {
			if e.Name == from.Name {
				continue
			}
			if _, ok := c.Bundles[pkg][e.Name]; !ok {
				continue
			}
			var rules []client.UpgradeRule
			if e.Replaces == from.Name {
				rules = append(rules, client.UpgradeRuleReplaces)
			}
			for _, s := range e.Skips {
				if s == from.Name {
					rules = append(rules, client.UpgradeRuleSkips)
					break
				}
			}
			if e.SkipRange != "" && verr == nil {
				if r, err := semver.ParseRange(e.SkipRange); err == nil && r(fromVersion) {
					rules = append(rules, client.UpgradeRuleSkipRange)
				}
			}
			if len(rules) > 0 {
				out[e.Name+"@"+chName] = rules
			}
		}
	}
	return out
}

func TestUpgradeEdges(t *testing.T) {
	for _, tc := range catalogCases() {
		t.Run(tc.name, func(t *testing.T) {
			h, want := tc.serve(t)
			ctx := context.Background()
			checked := 0
			for pkg, bundles := range want.Bundles {
				for _, name := range sortedNames(bundles) {
					resp, err := h.client.ListUpgradesWithResponse(ctx, "cat", pkg, &client.ListUpgradesParams{From: name})
					if err != nil || resp.JSON200 == nil {
						t.Fatalf("upgrades of %s from %s: %v %s", pkg, name, err, resp.Body)
					}
					got := map[string][]client.UpgradeRule{}
					prev := ""
					for _, e := range resp.JSON200.Items {
						got[e.Name+"@"+e.Channel] = e.Rules
						if prev != "" && semver.MustParse(prev).LT(semver.MustParse(e.Version)) {
							t.Errorf("%s from %s: %s after %s, want newest first", pkg, name, e.Version, prev)
						}
						prev = e.Version
					}
					exp := expectedUpgrades(want, pkg, bundles[name])
					if fmt.Sprint(sortedRules(got)) != fmt.Sprint(sortedRules(exp)) {
						t.Errorf("%s from %s:\n got %v\nwant %v", pkg, name, sortedRules(got), sortedRules(exp))
					}
					checked++
				}
			}
			if checked != want.CountBundles() {
				t.Errorf("checked %d bundles of %d", checked, want.CountBundles())
			}
		})
	}
}

func sortedRules(m map[string][]client.UpgradeRule) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprint(k, v))
	}
	sort.Strings(out)
	return out
}

// TestUpgradeCases pins hand-checked answers from the demo catalog
// (test/testdata/README.md): skips, skipRange-only reachability, pre-releases.
func TestUpgradeCases(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	tests := []struct {
		from, channel string
		want          []string // name@channel:rules
		heads         []string
	}{
		// 1.1.0 was withdrawn: 1.1.1 skips it; 1.2.0's skipRange covers it in stable and fast.
		{"aurora-cache.v1.1.0", "", []string{"aurora-cache.v1.1.1@stable:[skips]", "aurora-cache.v1.2.0@fast:[skipRange]", "aurora-cache.v1.2.0@stable:[skipRange]"}, nil},
		// By version, restricted to the fast channel.
		{"1.0.1", "fast", []string{"aurora-cache.v1.2.0@fast:[skipRange]"}, []string{"fast:aurora-cache.v1.3.0"}},
		// Pre-release to pre-release.
		{"2.0.0-rc.1", "", []string{"aurora-cache.v2.0.0-rc.2@candidate:[replaces]"}, []string{"candidate:aurora-cache.v2.0.0-rc.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.from+"/"+tt.channel, func(t *testing.T) {
			params := &client.ListUpgradesParams{From: tt.from}
			if tt.channel != "" {
				params.Channel = &tt.channel
			}
			resp, err := h.client.ListUpgradesWithResponse(context.Background(), "demo", "aurora-cache", params)
			if err != nil || resp.JSON200 == nil {
				t.Fatalf("%v %s", err, resp.Body)
			}
			var got []string
			for _, e := range resp.JSON200.Items {
				got = append(got, fmt.Sprintf("%s@%s:%v", e.Name, e.Channel, e.Rules))
			}
			sort.Strings(got)
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("upgrades = %v, want %v", got, tt.want)
			}
			if tt.heads != nil {
				var heads []string
				for _, hd := range resp.JSON200.Heads {
					heads = append(heads, hd.Channel+":"+hd.Name)
				}
				if strings.Join(heads, " ") != strings.Join(tt.heads, " ") {
					t.Errorf("heads = %v, want %v", heads, tt.heads)
				}
			}
		})
	}
}

func TestProviders(t *testing.T) {
	for _, tc := range catalogCases() {
		t.Run(tc.name, func(t *testing.T) {
			h, want := tc.serve(t)
			// Independent answer: bundle -> whether it heads some channel, per GVK.
			headOf := map[string]bool{}
			for pkg, chs := range want.Channels {
				for name := range chs {
					if head := want.Head(pkg, name); head != "" {
						headOf[pkg+"/"+head] = true
					}
				}
			}
			byGVK := map[fbcfacts.GVK]map[string]bool{}
			for pkg, bundles := range want.Bundles {
				for _, b := range bundles {
					for _, g := range b.GVKs("olm.gvk") {
						if byGVK[g] == nil {
							byGVK[g] = map[string]bool{}
						}
						byGVK[g][pkg+"/"+b.Name] = true
					}
				}
			}
			for g, bundles := range byGVK {
				for _, latest := range []bool{false, true} {
					resp, err := h.client.ListCatalogProvidersWithResponse(context.Background(), "cat",
						&client.ListCatalogProvidersParams{Group: &g.Group, Version: g.Version, Kind: g.Kind, Latest: &latest})
					if err != nil || resp.JSON200 == nil {
						t.Fatalf("providers of %v: %v %s", g, err, resp.Body)
					}
					var got, exp []string
					for _, p := range resp.JSON200.Items {
						got = append(got, p.Package+"/"+p.Bundle)
						isHead := false
						for _, c := range p.Channels {
							isHead = isHead || c.IsHead
						}
						if isHead != headOf[p.Package+"/"+p.Bundle] {
							t.Errorf("%v: %s/%s isHead=%v", g, p.Package, p.Bundle, isHead)
						}
					}
					for b := range bundles {
						if !latest || headOf[b] {
							exp = append(exp, b)
						}
					}
					sort.Strings(got)
					sort.Strings(exp)
					if strings.Join(got, " ") != strings.Join(exp, " ") {
						t.Errorf("%v latest=%v: providers %v, want %v", g, latest, got, exp)
					}
				}
			}
		})
	}
}

// TestProvidersAcrossCatalogs: /providers orders by priority, then name.
func TestProvidersAcrossCatalogs(t *testing.T) {
	h := newHarness(t)
	h.add("low", demoDir, -1)
	h.add("b-high", demoDir, 5)
	h.add("a-high", demoDir, 5)
	resp, err := h.client.ListProvidersWithResponse(context.Background(), &client.ListProvidersParams{
		Group: ptr("observability.example.com"), Version: "v1", Kind: "ServiceProbe", Latest: ptr(true)})
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("%v %s", err, resp.Body)
	}
	var order []string
	for _, p := range resp.JSON200.Items {
		if len(order) == 0 || order[len(order)-1] != p.Catalog {
			order = append(order, p.Catalog)
		}
	}
	if strings.Join(order, ",") != "a-high,b-high,low" {
		t.Errorf("catalog order %v, want a-high,b-high,low", order)
	}
	one, err := h.client.ListCatalogProvidersWithResponse(context.Background(), "low", &client.ListCatalogProvidersParams{
		Group: ptr("observability.example.com"), Version: "v1", Kind: "ServiceProbe", Latest: ptr(true)})
	if err != nil || one.JSON200 == nil || len(one.JSON200.Items) == 0 {
		t.Fatalf("%v %s", err, one.Body)
	}
	if len(resp.JSON200.Items) != 3*len(one.JSON200.Items) {
		t.Errorf("%d providers across three copies of a catalog with %d", len(resp.JSON200.Items), len(one.JSON200.Items))
	}
}

func TestBundleVersionFilterAndPaging(t *testing.T) {
	for _, tc := range catalogCases() {
		t.Run(tc.name, func(t *testing.T) {
			h, want := tc.serve(t)
			for _, constraint := range []string{"", ">=1.2.0 <2.0.0", ">=2.0.0-0", "~0.3"} {
				var mc *mmsemver.Constraints
				if constraint != "" {
					mc = mustConstraint(constraint)
				}
				for pkg, bundles := range want.Bundles {
					var exp []string
					for name, b := range bundles {
						v, err := mmsemver.NewVersion(b.Version())
						if mc == nil || (err == nil && mc.Check(v)) {
							exp = append(exp, name)
						}
					}
					got := pagedBundles(t, h, pkg, constraint)
					if len(got) != len(exp) {
						t.Fatalf("%s %q: %d bundles, want %d", pkg, constraint, len(got), len(exp))
					}
					names := make([]string, len(got))
					for i, b := range got {
						names[i] = b.Name
						if i > 0 && mmsemver.MustParse(got[i-1].Version).LessThan(mmsemver.MustParse(b.Version)) {
							t.Errorf("%s: %s listed after %s, want newest first", pkg, b.Version, got[i-1].Version)
						}
					}
					sort.Strings(names)
					sort.Strings(exp)
					if strings.Join(names, " ") != strings.Join(exp, " ") {
						t.Errorf("%s %q: %v, want %v", pkg, constraint, names, exp)
					}
				}
			}
		})
	}
}

// pagedBundles follows continue tokens with a small page size.
func pagedBundles(t *testing.T, h *harness, pkg, constraint string) []client.BundleSummary {
	t.Helper()
	var out []client.BundleSummary
	params := &client.ListBundlesParams{Limit: ptr(int32(3))}
	if constraint != "" {
		params.Version = &constraint
	}
	for pages := 0; pages < 1000; pages++ {
		resp, err := h.client.ListBundlesWithResponse(context.Background(), "cat", pkg, params)
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("bundles of %s: %v %s", pkg, err, resp.Body)
		}
		out = append(out, resp.JSON200.Items...)
		if resp.JSON200.Continue == "" {
			return out
		}
		params.Continue = &resp.JSON200.Continue
	}
	t.Fatal("paging did not end")
	return nil
}

func TestBundleDetail(t *testing.T) {
	want := fbcfacts.Load(t, demoDir)
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	for pkg, bundles := range want.Bundles {
		for name, b := range bundles {
			resp, err := h.client.GetBundleWithResponse(context.Background(), "demo", pkg, name, nil)
			if err != nil || resp.JSON200 == nil {
				t.Fatalf("%s/%s: %v %s", pkg, name, err, resp.Body)
			}
			got := resp.JSON200
			if got.Version != b.Version() || got.Image != b.Image || len(got.Properties) != len(b.Properties) ||
				len(got.RelatedImages) != len(b.RelatedImages) || len(got.ProvidedGVKs) != len(b.GVKs("olm.gvk")) ||
				len(got.RequiredGVKs) != len(b.GVKs("olm.gvk.required")) {
				t.Errorf("%s/%s: %+v", pkg, name, got)
				continue
			}
			for i, p := range got.Properties {
				if p.Type != b.Properties[i].Type || !fbcfacts.JSONEqual(p.Value, b.Properties[i].Value) {
					t.Errorf("%s/%s property %d: %s %s, want %s %s", pkg, name, i, p.Type, p.Value, b.Properties[i].Type, b.Properties[i].Value)
				}
			}
			inChannels := 0
			for _, ch := range want.Channels[pkg] {
				for _, e := range ch.Entries {
					if e.Name == name {
						inChannels++
					}
				}
			}
			if len(got.Channels) != inChannels {
				t.Errorf("%s/%s: in %d channels, catalog says %d", pkg, name, len(got.Channels), inChannels)
			}
		}
	}
}

func TestPackages(t *testing.T) {
	want := fbcfacts.Load(t, demoDir)
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	ctx := context.Background()

	// Paging one at a time yields every package once, in name order.
	var names []string
	params := &client.ListPackagesParams{Limit: ptr(int32(1))}
	for {
		resp, err := h.client.ListPackagesWithResponse(ctx, "demo", params)
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("%v %s", err, resp.Body)
		}
		for _, p := range resp.JSON200.Items {
			names = append(names, p.Name)
			if p.DefaultChannel != want.Packages[p.Name].DefaultChannel || len(p.Channels) != len(want.Channels[p.Name]) {
				t.Errorf("package %s: %+v", p.Name, p)
			}
			m := headMetadata(t, want, p.Name)
			var links []string
			for _, l := range p.Links {
				links = append(links, l.Name+"="+l.Url)
			}
			var wantLinks []string
			for _, l := range m.Links {
				wantLinks = append(wantLinks, l.Name+"="+l.URL)
			}
			if p.DisplayName != m.DisplayName || p.Provider != m.Provider.Name || p.Maturity != m.Maturity ||
				p.ShortDescription != m.Annotations["description"] || strings.Join(p.Keywords, ",") != strings.Join(m.Keywords, ",") ||
				strings.Join(links, ",") != strings.Join(wantLinks, ",") || len(p.Maintainers) != len(m.Maintainers) {
				t.Errorf("package %s lists %+v, its default channel head's metadata says %+v", p.Name, p, m)
			}
		}
		if resp.JSON200.Continue == "" {
			break
		}
		params.Continue = &resp.JSON200.Continue
	}
	var exp []string
	for name := range want.Packages {
		exp = append(exp, name)
	}
	sort.Strings(exp)
	if strings.Join(names, " ") != strings.Join(exp, " ") {
		t.Errorf("paged packages %v, want %v", names, exp)
	}

	// Substring filter.
	resp, err := h.client.ListPackagesWithResponse(ctx, "demo", &client.ListPackagesParams{Name: ptr("-")})
	if err != nil || resp.JSON200 == nil {
		t.Fatal(err)
	}
	var dashed []string
	for _, n := range exp {
		if strings.Contains(n, "-") {
			dashed = append(dashed, n)
		}
	}
	if len(resp.JSON200.Items) != len(dashed) {
		t.Errorf("name=- gave %d packages, want %d", len(resp.JSON200.Items), len(dashed))
	}

	// Full-text search finds a package by a word of its display name.
	resp, err = h.client.ListPackagesWithResponse(ctx, "demo", &client.ListPackagesParams{Q: ptr("lighthouse")})
	if err != nil || resp.JSON200 == nil || len(resp.JSON200.Items) == 0 || resp.JSON200.Items[0].Name != "lighthouse-metrics" {
		t.Errorf("q=lighthouse: %v %s", err, resp.Body)
	}
}

func TestCatalogDetail(t *testing.T) {
	want := fbcfacts.Load(t, demoDir)
	h := newHarness(t)
	h.add("demo", demoDir, 3)
	resp, err := h.client.GetCatalogWithResponse(context.Background(), "demo", nil)
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("%v %s", err, resp.Body)
	}
	d := resp.JSON200
	if d.Counts.Packages != len(want.Packages) || d.Counts.Channels != want.CountChannels() || d.Counts.Bundles != want.CountBundles() ||
		d.Priority != 3 || d.State != client.CatalogStateServing || d.IndexedAt == nil {
		t.Errorf("detail = %+v", d)
	}
	// The first index of a catalog is built in full: every package.
	if want := (client.IndexBuild{Mode: client.IndexBuildModeFull, PackagesRebuilt: len(want.Packages)}); d.Build != want {
		t.Errorf("build %+v; want %+v", d.Build, want)
	}
	schemas := map[string]int{}
	for _, b := range want.Blobs {
		schemas[b.Schema]++
	}
	if len(d.Schemas) != len(schemas) {
		t.Errorf("schemas %+v, want %v", d.Schemas, schemas)
	}
	for _, s := range d.Schemas {
		if s.Count != schemas[s.Schema] || s.Known != strings.HasPrefix(s.Schema, "olm.") {
			t.Errorf("schema %+v, want count %d", s, schemas[s.Schema])
		}
	}
}

// TestProblemPositions serves the demo with phantom entries, whose problems
// are each in one of aurora-cache's channels, and checks that each problem
// the catalog's detail lists gives where that channel's blob starts, found
// here in the file by the lines that begin it.
func TestProblemPositions(t *testing.T) {
	dir := t.TempDir()
	if err := fbcgen.WritePhantomDemo(demoDir, dir); err != nil {
		t.Fatal(err)
	}
	const path = "aurora-cache/catalog.yaml"
	data, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.add("phantom", dir, 0)
	resp, err := h.client.GetCatalogWithResponse(context.Background(), "phantom", nil)
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("%v %s", err, resp.Body)
	}
	problems := resp.JSON200.Problems
	if len(problems) == 0 {
		t.Fatal("no problems listed for a catalog with phantom entries")
	}
	channel := regexp.MustCompile(`^channel "([^"]*)"`)
	for _, p := range problems {
		m := channel.FindStringSubmatch(p.Message)
		if p.Package != "aurora-cache" || m == nil {
			t.Errorf("problem %+v, want one of a channel of aurora-cache", p)
			continue
		}
		start := bytes.Index(data, []byte("---\nschema: olm.channel\nname: "+m[1]+"\n"))
		if start < 0 {
			t.Fatalf("%s has no channel %q", path, m[1])
		}
		if want := fmt.Sprintf("%s:%d:1", path, bytes.Count(data[:start], []byte("\n"))+2); p.Position != want {
			t.Errorf("problem %q at %s, want %s", p.Message, p.Position, want)
		}
	}
}

func TestErrors(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	h.reg.Put(catalogsPending("waiting"))
	h.reg.Put(catalogsUnavailable("off"))
	tests := []struct {
		path    string
		status  int
		typ     string
		param   string
		headers map[string]string
	}{
		{"/catalogs/nope/packages", 404, "not-found", "catalog", nil},
		{"/catalogs/Bad_Name/packages", 400, "invalid-parameter", "catalog", nil},
		{"/catalogs/demo/packages/nope", 404, "not-found", "package", nil},
		{"/catalogs/demo/packages/aurora-cache/channels/nope", 404, "not-found", "channel", nil},
		{"/catalogs/demo/packages/aurora-cache/bundles/nope", 404, "not-found", "bundle", nil},
		{"/catalogs/demo/packages/aurora-cache/bundles?version=" + url.QueryEscape(">=banana"), 400, "invalid-parameter", "version", nil},
		{"/catalogs/demo/packages/aurora-cache/bundles?channel=nope", 404, "not-found", "channel", nil},
		{"/catalogs/demo/packages?limit=0", 400, "invalid-parameter", "limit", nil},
		{"/catalogs/demo/packages?limit=5000", 400, "invalid-parameter", "limit", nil},
		{"/catalogs/demo/packages?limit=x", 400, "invalid-parameter", "limit", nil},
		{"/catalogs/demo/packages?continue=garbage", 400, "invalid-parameter", "continue", nil},
		{"/catalogs/demo/packages?q=" + url.QueryEscape("***"), 400, "invalid-parameter", "q", nil},
		{"/catalogs/demo/packages?chanel=x", 400, "unknown-parameter", "chanel", nil},
		{"/catalogs/demo/packages/aurora-cache/upgrades", 400, "invalid-parameter", "from", nil},
		{"/catalogs/demo/packages/aurora-cache/upgrades?from=9.9.9", 404, "not-found", "from", nil},
		{"/catalogs/demo/providers?version=v1", 400, "invalid-parameter", "kind", nil},
		{"/catalogs/demo/providers?kind=Foo", 400, "invalid-parameter", "version", nil},
		{"/catalogs/demo/providers?group=" + url.QueryEscape("Not A Group") + "&version=v1&kind=Foo", 400, "invalid-parameter", "group", nil},
		{"/catalogs/demo/providers?version=v1&kind=Foo-Bar", 400, "invalid-parameter", "kind", nil},
		{"/catalogs/demo/providers?version=v1&kind=Foo&latest=maybe", 400, "invalid-parameter", "latest", nil},
		{"/providers?version=v1&kind=Foo&extra=1", 400, "unknown-parameter", "extra", nil},
		{"/catalogs/demo/api/v1/metas?schema=olm.package&foo=bar", 400, "unknown-parameter", "foo", nil},
		{"/catalogs/waiting/packages", 503, "catalog-not-ready", "catalog", nil},
		{"/catalogs/off/packages", 503, "catalog-unavailable", "catalog", nil},
		{"/catalogs/demo/packages/paper-lantern/icon", 404, "not-found", "package", nil},
		{"/catalogs/demo/api/v1/all", 416, "range-not-satisfiable", "Range", map[string]string{"Range": "bytes=999999999-"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			var hdr []string
			for k, v := range tt.headers {
				hdr = append(hdr, k, v)
			}
			resp := h.get(tt.path, hdr...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.typ == "" {
				return
			}
			p := decodeProblem(t, resp)
			if p.Type != "/problems/"+tt.typ || p.Parameter != tt.param || p.Detail == "" || int(p.Status) != tt.status {
				t.Errorf("problem = %+v, want type %s parameter %s", p, tt.typ, tt.param)
			}
			if tt.status == 503 && tt.typ == "catalog-not-ready" && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	resp, err := http.Post(h.srv.URL+"/catalogs/demo/packages", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("POST: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func mustConstraint(s string) *mmsemver.Constraints {
	c, err := mmsemver.NewConstraint(s)
	if err != nil {
		panic(err)
	}
	return c
}

// csvMetadata is the part of olm.csv.metadata the package list shows.
type csvMetadata struct {
	DisplayName string            `json:"displayName"`
	Annotations map[string]string `json:"annotations"`
	Keywords    []string          `json:"keywords"`
	Maturity    string            `json:"maturity"`
	Provider    struct {
		Name string `json:"name"`
	} `json:"provider"`
	Links []struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	} `json:"links"`
	Maintainers []struct {
		Name string `json:"name"`
	} `json:"maintainers"`
}

// headMetadata reads, from the catalog files, the olm.csv.metadata of the
// head of a package's default channel (empty when it has none).
func headMetadata(t *testing.T, c *fbcfacts.Catalog, pkg string) csvMetadata {
	t.Helper()
	var m csvMetadata
	head := c.Head(pkg, c.Packages[pkg].DefaultChannel)
	if head == "" {
		return m
	}
	for _, p := range c.Bundles[pkg][head].Properties {
		if p.Type == "olm.csv.metadata" {
			if err := json.Unmarshal(p.Value, &m); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}
