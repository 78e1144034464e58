package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/query"
)

// writeRandomCatalog writes a catalog of packages p0..p<n-1> with random
// versions (pre-releases, releases in build metadata), channels with
// replaces chains, random skips and skipRanges, and deprecated bundles:
// every bundle of the packages in deprecated.
func writeRandomCatalog(t *testing.T, rng *rand.Rand, dir string, packages, deprecated []string) {
	t.Helper()
	var cfg declcfg.DeclarativeConfig
	for _, pkg := range packages {
		cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: "stable"})
		seen := map[string]bool{}
		var versions []string
		for len(versions) < 3+rng.IntN(6) {
			v := fmt.Sprintf("%d.%d.%d", rng.IntN(3), rng.IntN(4), rng.IntN(3))
			switch rng.IntN(8) {
			case 0:
				v += "-rc.1"
			case 1:
				v += fmt.Sprintf("+%d", 1+rng.IntN(2))
			}
			if !seen[v] {
				seen[v] = true
				versions = append(versions, v)
			}
		}
		sort.Slice(versions, func(i, j int) bool {
			return semver.MustParse(versions[i]).Compare(semver.MustParse(versions[j])) < 0
		})
		name := func(v string) string { return pkg + ".v" + v }
		var deprecations []declcfg.DeprecationEntry
		for _, v := range versions {
			value, _ := json.Marshal(property.Package{PackageName: pkg, Version: v})
			cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: name(v), Package: pkg,
				Image:      "registry.example.com/" + pkg + ":" + strings.ReplaceAll(v, "+", "_"),
				Properties: []property.Property{{Type: property.TypePackage, Value: value}}})
			if rng.IntN(6) == 0 || slices.Contains(deprecated, pkg) {
				deprecations = append(deprecations, declcfg.DeprecationEntry{
					Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: name(v)}, Message: "withdrawn"})
			}
		}
		if len(deprecations) > 0 {
			cfg.Deprecations = append(cfg.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: pkg, Entries: deprecations})
		}
		for i, ch := range []string{"stable", "fast", "candidate"} {
			if i > 0 && rng.IntN(2) == 0 {
				continue
			}
			var listed []string
			for _, v := range versions {
				if rng.IntN(3) > 0 {
					listed = append(listed, v)
				}
			}
			if len(listed) == 0 {
				listed = versions[len(versions)-1:]
			}
			c := declcfg.Channel{Schema: declcfg.SchemaChannel, Name: ch, Package: pkg}
			for k, v := range listed {
				e := declcfg.ChannelEntry{Name: name(v)}
				if k > 0 {
					e.Replaces = name(listed[k-1])
				}
				if k > 1 && rng.IntN(4) == 0 {
					e.Skips = []string{name(versions[rng.IntN(len(versions))])}
				}
				if rng.IntN(3) == 0 {
					lo := semver.MustParse(versions[rng.IntN(len(versions))])
					lo.Build = nil
					e.SkipRange = fmt.Sprintf(">=%s <%s", lo, strings.SplitN(v, "+", 2)[0])
				}
				c.Entries = append(c.Entries, e)
			}
			cfg.Channels = append(cfg.Channels, c)
		}
	}
	f, err := os.Create(filepath.Join(dir, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := declcfg.WriteJSON(cfg, f); err != nil {
		t.Fatal(err)
	}
}

// refCatalog is a catalog for the reference resolver: its FBC as
// operator-registry parses it, its name and priority.
type refCatalog struct {
	name     string
	priority int32
	cfg      *declcfg.DeclarativeConfig
}

// refVR is a bundle's version and release, read with operator-registry's
// types: a release in build metadata is taken as the release.
func refVR(version string) (*model.VersionRelease, bool) {
	v, err := semver.Parse(version)
	if err != nil {
		return nil, false
	}
	vr := &model.VersionRelease{Version: v}
	if len(v.Build) > 0 {
		if rel, err := model.NewRelease(strings.Join(v.Build, ".")); err == nil {
			vr.Release = rel
			vr.Version.Build = nil
		}
	}
	return vr, true
}

func refVersion(b declcfg.Bundle) string {
	for _, p := range b.Properties {
		if p.Type == property.TypePackage {
			var pp property.Package
			_ = json.Unmarshal(p.Value, &pp)
			return pp.Version
		}
	}
	return ""
}

// refOutcome is what the reference resolver says of one catalog: each
// bundle's rejections, and the candidates best first.
type refOutcome struct {
	found      bool
	rejections map[string][]string
	accepted   []string
	deprecated map[string]bool
}

// refResolve applies the rules of resolution, as written in the task and
// operator-controller's documentation, to one catalog's FBC.
func refResolve(cfg *declcfg.DeclarativeConfig, pkg string, channels []string, rangeText, installed string, selfCertified bool) refOutcome {
	out := refOutcome{rejections: map[string][]string{}, deprecated: map[string]bool{}}
	for _, p := range cfg.Packages {
		out.found = out.found || p.Name == pkg
	}
	wanted := func(ch string) bool { return len(channels) == 0 || slices.Contains(channels, ch) }
	var constraint *mmsemver.Constraints
	if rangeText != "" {
		constraint, _ = mmsemver.NewConstraint(rangeText)
	}
	var inst *model.VersionRelease
	var instVersion semver.Version
	if installed != "" {
		instVersion = semver.MustParse(installed)
		inst, _ = refVR(installed)
	}
	for _, d := range cfg.Deprecations {
		if d.Package != pkg {
			continue
		}
		for _, e := range d.Entries {
			if e.Reference.Schema == declcfg.SchemaBundle {
				out.deprecated[e.Reference.Name] = true
			}
		}
	}
	var bundles []declcfg.Bundle
	for _, b := range cfg.Bundles {
		if b.Package == pkg {
			bundles = append(bundles, b)
		}
	}
	installedNames := map[string]bool{}
	for _, b := range bundles {
		if vr, ok := refVR(refVersion(b)); ok && inst != nil && vr.Compare(inst) == 0 {
			installedNames[b.Name] = true
		}
	}
	for _, b := range bundles {
		var rejections []string
		inChannel, successor := false, false
		for _, c := range cfg.Channels {
			if c.Package != pkg || !wanted(c.Name) {
				continue
			}
			for _, e := range c.Entries {
				if e.Name != b.Name {
					continue
				}
				inChannel = true
				if installedNames[e.Replaces] {
					successor = true
				}
				for _, s := range e.Skips {
					successor = successor || installedNames[s]
				}
				if r, err := semver.ParseRange(e.SkipRange); e.SkipRange != "" && err == nil && inst != nil && r(instVersion) {
					successor = true
				}
			}
		}
		if !inChannel {
			rejections = append(rejections, "NotInChannel")
		}
		if constraint != nil {
			v, err := mmsemver.StrictNewVersion(refVersion(b))
			if err != nil || !constraint.Check(v) {
				rejections = append(rejections, "OutsideVersionRange")
			}
		}
		if inst != nil && !selfCertified && !successor && !installedNames[b.Name] {
			rejections = append(rejections, "NotSuccessor")
		}
		out.rejections[b.Name] = rejections
		if len(rejections) == 0 {
			out.accepted = append(out.accepted, b.Name)
		}
	}
	vrs := map[string]*model.VersionRelease{}
	for _, b := range bundles {
		vrs[b.Name], _ = refVR(refVersion(b))
	}
	sort.Slice(out.accepted, func(i, j int) bool {
		a, b := out.accepted[i], out.accepted[j]
		if out.deprecated[a] != out.deprecated[b] {
			return !out.deprecated[a]
		}
		if c := vrs[a].Compare(vrs[b]); c != 0 {
			return c > 0
		}
		return a < b
	})
	return out
}

// refChoose picks across catalogs: non-deprecated choices beat deprecated
// ones, then the highest priority; a tie there is an error.
func refChoose(outcomes map[string]refOutcome, cats []refCatalog) (string, []string) {
	var withChoice []refCatalog
	anyCurrent := false
	for _, c := range cats {
		if o := outcomes[c.name]; len(o.accepted) > 0 {
			withChoice = append(withChoice, c)
			anyCurrent = anyCurrent || !o.deprecated[o.accepted[0]]
		}
	}
	var running []refCatalog
	for _, c := range withChoice {
		o := outcomes[c.name]
		if !anyCurrent || !o.deprecated[o.accepted[0]] {
			running = append(running, c)
		}
	}
	if len(running) == 0 {
		return "", nil
	}
	sort.SliceStable(running, func(i, j int) bool { return running[i].priority > running[j].priority })
	if len(running) == 1 || running[0].priority != running[1].priority {
		return running[0].name, nil
	}
	var tied []string
	for _, c := range running {
		tied = append(tied, c.name)
	}
	sort.Strings(tied)
	return "", tied
}

// TestResolveDifferential compares resolution with refResolve and
// refChoose over two random catalogs: every package, channel set,
// installed version, range and policy, under three priority
// orders. It compares the answer, each bundle's rejections, and the order
// of each catalog's candidates.
func TestResolveDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 3))
	dirs := []string{t.TempDir(), t.TempDir()}
	writeRandomCatalog(t, rng, dirs[0], []string{"p0", "p1", "p2", "p3"}, nil)
	writeRandomCatalog(t, rng, dirs[1], []string{"p0", "p1", "p2", "p4"}, []string{"p2"})
	var cats []*query.Catalog
	var cfgs []*declcfg.DeclarativeConfig
	for _, dir := range dirs {
		c, _, _ := openIndex(t, os.DirFS(dir))
		cats = append(cats, c)
		cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(dir))
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	priorities := [][2]int32{{0, 0}, {1, 0}, {0, 2}}
	channelSets := [][]string{nil, {"stable"}, {"fast", "candidate"}, {"nosuch"}}
	ranges := []string{"", ">=1.0.0", "<1.0.0", "~1.1", ">=0.1.0 <2.0.0", "1.x || >=2.1.0-0"}
	type tally struct{ cases, answered, ambiguous int }
	count := &tally{}
	for _, prio := range priorities {
		for _, pkg := range []string{"p0", "p1", "p2", "p4", "p9"} {
			installs := []string{"", "9.9.9"}
			for _, cfg := range cfgs {
				for _, b := range cfg.Bundles {
					if b.Package == pkg && rng.IntN(2) == 0 {
						installs = append(installs, refVersion(b))
					}
				}
			}
			for _, channels := range channelSets {
				for _, installed := range installs {
					for _, rangeText := range ranges {
						for _, self := range []bool{false, true} {
							{
								count.cases++
								req, err := query.NewResolveRequest(query.ResolveParams{Package: pkg, Channels: channels, Version: rangeText, Installed: installed, SelfCertified: self})
								if err != nil {
									t.Fatal(err)
								}
								refCats := []refCatalog{{"a", prio[0], cfgs[0]}, {"b", prio[1], cfgs[1]}}
								got := resolveAcross(t, req, []resolveCatalog{{"a", prio[0], cats[0]}, {"b", prio[1], cats[1]}})
								name := fmt.Sprintf("%s channels=%v range=%q installed=%q self=%v prio=%v", pkg, channels, rangeText, installed, self, prio)
								outcomes := map[string]refOutcome{}
								for i, rc := range refCats {
									want := refResolve(rc.cfg, pkg, channels, rangeText, installed, self)
									outcomes[rc.name] = want
									gc := got.Catalogs[i]
									if gc.Found != (want.found || len(want.rejections) > 0) {
										t.Errorf("%s: catalog %s found %v, want %v", name, rc.name, gc.Found, want.found)
									}
									var accepted []string
									for _, c := range gc.Candidates {
										if len(c.Rejections) == 0 {
											accepted = append(accepted, c.Name)
										}
										var rej []string
										for _, r := range c.Rejections {
											rej = append(rej, string(r))
										}
										if !slices.Equal(rej, want.rejections[c.Name]) {
											t.Errorf("%s: %s in %s rejected for %v, want %v", name, c.Name, rc.name, rej, want.rejections[c.Name])
										}
									}
									if len(gc.Candidates) != len(want.rejections) {
										t.Errorf("%s: %d bundles in %s, want %d", name, len(gc.Candidates), rc.name, len(want.rejections))
									}
									if !slices.Equal(accepted, want.accepted) {
										t.Errorf("%s: candidates in %s %v, want %v", name, rc.name, accepted, want.accepted)
									}
								}
								wantCatalog, tied := refChoose(outcomes, refCats)
								bundle, catalog := got.Bundle()
								switch {
								case wantCatalog != "":
									count.answered++
									if bundle == nil || catalog != wantCatalog || bundle.Name != outcomes[wantCatalog].accepted[0] {
										t.Errorf("%s: got %v from %q (%s), want %s from %s", name, bundle, catalog, got.Error, outcomes[wantCatalog].accepted[0], wantCatalog)
									}
								case tied != nil:
									count.ambiguous++
									if !got.Ambiguous || !strings.Contains(got.Error, fmt.Sprintf("in multiple catalogs with the same priority %v", tied)) {
										t.Errorf("%s: got %q (ambiguous %v), want a tie between %v", name, got.Error, got.Ambiguous, tied)
									}
								default:
									if bundle != nil || !strings.Contains(got.Error, fmt.Sprintf("no bundles found for package %q", pkg)) {
										t.Errorf("%s: got %v from %q, error %q; want no bundles", name, bundle, catalog, got.Error)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	c := count
	t.Logf("%d cases: %d answered, %d ambiguous, %d without a bundle", c.cases, c.answered, c.ambiguous, c.cases-c.answered-c.ambiguous)
	if c.cases < 1000 || c.answered < c.cases/10 || c.ambiguous == 0 || c.cases-c.answered-c.ambiguous < c.cases/10 {
		t.Errorf("the generated cases do not cover each outcome well enough: %d cases, %d answered, %d ambiguous", c.cases, c.answered, c.ambiguous)
	}
}
