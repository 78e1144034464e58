package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
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
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// The reference resolver below follows operator-controller's (main of
// 2026-08-21) step by step: resolve/catalog.go's Resolve (filter, sort by
// deprecation then version and release, choose across catalogs by
// deprecation and priority, then validate the bundle chosen),
// catalogmetadata/filter's SuccessorsOf, InAnyChannel, InSemverRange and
// ExactVersionRelease, compare's ByVersionAndRelease and
// ByDeprecationFunc, bundleutil's GetVersionAndRelease and MetadataFor, and
// resolve/validation.go's NoDependencyValidation. Its packages are
// internal to operator-controller's module, so Go does not let them be
// linked; the reference is written against operator-registry's types,
// which upstream uses, from reading that code, and shares nothing with
// package query.

// refCatalog is a catalog for the reference: its FBC in catalog order (as
// operator-controller reads catalogd's stream), name and priority.
type refCatalog struct {
	name     string
	priority int32
	cfg      *declcfg.DeclarativeConfig
}

// loadRef reads a catalog's FBC in catalog order: files in lexical order,
// blobs in file order, which a stable sort keeps among equal bundles.
func loadRef(t *testing.T, fsys fs.FS) *declcfg.DeclarativeConfig {
	t.Helper()
	var metas []*declcfg.Meta
	if err := declcfg.WalkMetasFS(context.Background(), fsys, func(_ string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		metas = append(metas, m)
		return nil
	}, declcfg.WithConcurrency(1)); err != nil {
		t.Fatal(err)
	}
	cfg, err := declcfg.LoadSlice(metas)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// refStatus is a ClusterExtension's status.install.bundle.
type refStatus struct {
	name, version string
	release       *string
}

// refRequest is a ClusterExtension's catalog source and installed bundle,
// and the BundleReleaseSupport gate.
type refRequest struct {
	pkg           string
	channels      []string
	versionRange  string
	installed     *refStatus
	selfCertified bool
	gate          bool
	// byVersion asks as a caller knowing only the installed version does:
	// catalogd's documented extension (every bundle of that version and
	// release is the installed one), not upstream's.
	byVersion bool
}

// query is the request as /resolve takes it.
func (r refRequest) query(t *testing.T) query.ResolveRequest {
	t.Helper()
	p := query.ResolveParams{Package: r.pkg, Channels: r.channels, Version: r.versionRange, SelfCertified: r.selfCertified, BundleRelease: r.gate}
	if r.installed != nil {
		p.Installed, p.InstalledRelease = r.installed.version, r.installed.release
		if !r.byVersion {
			p.InstalledBundle = r.installed.name
		}
	}
	req, err := query.NewResolveRequest(p)
	if err != nil {
		t.Fatalf("%+v: %v", r, err)
	}
	return req
}

func (r refRequest) String() string {
	s := fmt.Sprintf("%s channels=%v range=%q self=%v gate=%v", r.pkg, r.channels, r.versionRange, r.selfCertified, r.gate)
	if r.installed != nil {
		rel := "<nil>"
		if r.installed.release != nil {
			rel = fmt.Sprintf("%q", *r.installed.release)
		}
		s += fmt.Sprintf(" installed=%s@%s release=%s byVersion=%v", r.installed.name, r.installed.version, rel, r.byVersion)
	}
	return s
}

// refVersionRelease is bundleutil.GetVersionAndRelease: with the gate on an
// explicit release (present in the JSON, even empty) is read apart from the
// version; otherwise the version's build metadata is the release when it
// parses as one.
func refVersionRelease(b declcfg.Bundle, gate bool) (*declcfg.VersionRelease, error) {
	for _, p := range b.Properties {
		if p.Type != property.TypePackage {
			continue
		}
		var pkg property.Package
		var rel struct {
			Release *string `json:"release"`
		}
		if err := json.Unmarshal(p.Value, &pkg); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(p.Value, &rel); err != nil {
			return nil, err
		}
		if gate && rel.Release != nil {
			return refExplicit(pkg.Version, *rel.Release)
		}
		return refLegacy(pkg.Version)
	}
	return nil, fmt.Errorf("no package property in bundle %q", b.Name)
}

func refLegacy(version string) (*declcfg.VersionRelease, error) {
	v, err := semver.Parse(version)
	if err != nil {
		return nil, err
	}
	vr := &declcfg.VersionRelease{Version: v}
	if rel, err := declcfg.NewRelease(strings.Join(v.Build, ".")); err == nil && len(rel) > 0 {
		vr.Release, vr.Version.Build = rel, nil
	}
	return vr, nil
}

func refExplicit(version, release string) (*declcfg.VersionRelease, error) {
	v, err := semver.Parse(version)
	if err != nil {
		return nil, err
	}
	rel := declcfg.Release{}
	if release != "" {
		if rel, err = declcfg.NewRelease(release); err != nil {
			return nil, err
		}
	}
	return &declcfg.VersionRelease{Version: v, Release: rel}, nil
}

// refStatusOf is bundleutil.MetadataFor: what a ClusterExtension's status
// records of an installed bundle, with the gate on (version and release
// apart) or off (the release folded into the version's build metadata).
func refStatusOf(b declcfg.Bundle, gate bool) (*refStatus, bool) {
	vr, err := refVersionRelease(b, gate)
	if err != nil {
		return nil, false
	}
	if gate {
		st := &refStatus{name: b.Name, version: vr.Version.String()}
		if vr.Release != nil {
			r := vr.Release.String()
			st.release = &r
		}
		return st, true
	}
	v := vr.Version
	if len(vr.Release) > 0 {
		v.Build = strings.Split(vr.Release.String(), ".")
	}
	return &refStatus{name: b.Name, version: v.String()}, true
}

// refInstalledVR is how SuccessorsOf reads the status: a release recorded
// apart, else the version's build metadata.
func refInstalledVR(st refStatus) (*declcfg.VersionRelease, error) {
	if st.release == nil {
		return refLegacy(st.version)
	}
	return refExplicit(st.version, *st.release)
}

// refOutcome is what the reference makes of one catalog: each bundle's
// rejections, and the candidates best first.
type refOutcome struct {
	found      bool
	rejections map[string][]string
	accepted   []declcfg.Bundle
	deprecated map[string]bool
}

// refJudge is the walk function of Resolve for one catalog, with each
// predicate's verdict kept apart so that rejections can be compared.
func refJudge(cfg *declcfg.DeclarativeConfig, req refRequest) refOutcome {
	out := refOutcome{rejections: map[string][]string{}, deprecated: map[string]bool{}}
	var bundles []declcfg.Bundle
	for _, b := range cfg.Bundles {
		if b.Package == req.pkg {
			bundles = append(bundles, b)
		}
	}
	for _, p := range cfg.Packages {
		out.found = out.found || p.Name == req.pkg
	}
	out.found = out.found || len(bundles) > 0
	var channels []declcfg.Channel
	for _, c := range cfg.Channels {
		if c.Package == req.pkg && (len(req.channels) == 0 || slices.Contains(req.channels, c.Name)) {
			channels = append(channels, c)
		}
	}
	for _, d := range cfg.Deprecations {
		if d.Package != req.pkg {
			continue
		}
		for _, e := range d.Entries {
			if e.Reference.Schema == declcfg.SchemaBundle {
				out.deprecated[e.Reference.Name] = true
			}
		}
	}
	inChannel := func(b declcfg.Bundle) bool {
		for _, c := range channels {
			for _, e := range c.Entries {
				if e.Name == b.Name {
					return true
				}
			}
		}
		return false
	}
	var inRange func(declcfg.Bundle) bool
	if req.versionRange != "" {
		constraint, err := mmsemver.NewConstraint(req.versionRange)
		if err != nil {
			panic(err)
		}
		inRange = func(b declcfg.Bundle) bool {
			vr, err := refVersionRelease(b, req.gate)
			if err != nil {
				return false
			}
			v := vr.Version
			pre := make([]string, len(v.Pre))
			for i, p := range v.Pre {
				pre[i] = p.String()
			}
			return constraint.Check(mmsemver.New(v.Major, v.Minor, v.Patch, strings.Join(pre, "."), strings.Join(v.Build, ".")))
		}
	}
	var successor func(declcfg.Bundle) bool
	if req.installed != nil && !req.selfCertified {
		installedVR, err := refInstalledVR(*req.installed)
		if err != nil {
			panic(err)
		}
		installedVersion := semver.MustParse(req.installed.version)
		names := map[string]bool{req.installed.name: true}
		if req.byVersion {
			names = map[string]bool{}
			for _, b := range bundles {
				if vr, err := refVersionRelease(b, req.gate); err == nil && vr.Compare(installedVR) == 0 {
					names[b.Name] = true
				}
			}
		}
		isSuccessor := func(e declcfg.ChannelEntry) bool {
			if names[e.Replaces] || slices.ContainsFunc(e.Skips, func(s string) bool { return names[s] }) {
				return true
			}
			if e.SkipRange != "" {
				r, err := semver.ParseRange(e.SkipRange)
				return err == nil && r(installedVersion)
			}
			return false
		}
		successor = func(b declcfg.Bundle) bool {
			for _, c := range channels {
				for _, e := range c.Entries {
					if e.Name == b.Name && isSuccessor(e) {
						return true
					}
				}
			}
			vr, err := refVersionRelease(b, req.gate)
			return err == nil && installedVR.Compare(vr) == 0
		}
	}
	for _, b := range bundles {
		rejections := []string{}
		if len(req.channels) > 0 && !inChannel(b) {
			rejections = append(rejections, "NotInChannel")
		}
		if inRange != nil && !inRange(b) {
			rejections = append(rejections, "OutsideVersionRange")
		}
		if successor != nil && !successor(b) {
			rejections = append(rejections, "NotSuccessor")
		}
		out.rejections[b.Name] = rejections
		if len(rejections) == 0 {
			out.accepted = append(out.accepted, b)
		}
	}
	slices.SortStableFunc(out.accepted, func(a, b declcfg.Bundle) int {
		if da, db := out.deprecated[a.Name], out.deprecated[b.Name]; da != db {
			if da {
				return 1
			}
			return -1
		}
		va, errA := refVersionRelease(a, req.gate)
		vb, errB := refVersionRelease(b, req.gate)
		switch {
		case errA != nil && errB != nil:
			return 0
		case errA != nil:
			return 1
		case errB != nil:
			return -1
		}
		return vb.Compare(va)
	})
	return out
}

// refAnswer is the reference's answer: the bundle and its catalog, or the
// error operator-controller returns.
type refAnswer struct {
	bundle, catalog, err string
	// refused says the error is the dependency validation's.
	refused bool
}

// refResolve is Resolve over the catalogs, in the order given.
func refResolve(cats []refCatalog, req refRequest) (refAnswer, map[string]refOutcome) {
	type found struct {
		bundle   declcfg.Bundle
		catalog  string
		priority int32
	}
	outcomes := map[string]refOutcome{}
	var resolved []found
	priorDeprecated := false
	for _, c := range cats {
		o := refJudge(c.cfg, req)
		outcomes[c.name] = o
		if !o.found || len(o.accepted) == 0 {
			continue
		}
		this := o.accepted[0]
		deprecated := o.deprecated[this.Name]
		if len(resolved) > 0 {
			if deprecated && !priorDeprecated {
				continue
			}
			if !deprecated && priorDeprecated {
				resolved = nil
			}
		}
		resolved = append(resolved, found{this, c.name, c.priority})
		priorDeprecated = deprecated
	}
	if len(resolved) > 1 {
		sort.Slice(resolved, func(i, j int) bool { return resolved[i].priority > resolved[j].priority })
		if resolved[0].priority != resolved[1].priority {
			resolved = resolved[:1]
		}
	}
	if len(resolved) != 1 {
		var sb strings.Builder
		if req.installed != nil {
			fmt.Fprintf(&sb, "error upgrading from currently installed version %q: ", req.installed.version)
		}
		if len(resolved) > 1 {
			fmt.Fprintf(&sb, "found bundles for package %q ", req.pkg)
		} else {
			fmt.Fprintf(&sb, "no bundles found for package %q ", req.pkg)
		}
		if req.versionRange != "" {
			fmt.Fprintf(&sb, "matching version %q ", req.versionRange)
		}
		if len(req.channels) > 0 {
			fmt.Fprintf(&sb, "in channels %v ", req.channels)
		}
		if len(resolved) > 1 {
			var names []string
			for _, r := range resolved {
				names = append(names, r.catalog)
			}
			slices.Sort(names)
			fmt.Fprintf(&sb, "in multiple catalogs with the same priority %v ", names)
		}
		return refAnswer{err: strings.TrimSpace(sb.String())}, outcomes
	}
	chosen := resolved[0]
	for _, p := range chosen.bundle.Properties {
		switch p.Type {
		case property.TypePackageRequired, property.TypeGVKRequired, property.TypeConstraint:
			return refAnswer{refused: true, catalog: chosen.catalog, bundle: chosen.bundle.Name,
				err: fmt.Sprintf("validating bundle %q: bundle %q has a dependency declared via property %q which is currently not supported",
					chosen.bundle.Name, chosen.bundle.Name, p.Type)}, outcomes
		}
	}
	return refAnswer{bundle: chosen.bundle.Name, catalog: chosen.catalog}, outcomes
}

// gotAnswer is resolution's answer in the reference's terms.
func gotAnswer(res query.Resolution) refAnswer {
	if b, catalog := res.Bundle(); b != nil {
		return refAnswer{bundle: b.Name, catalog: catalog}
	}
	out := refAnswer{err: res.Error, refused: res.Refused}
	if b, catalog := res.RefusedBundle(); b != nil {
		out.bundle, out.catalog = b.Name, catalog
	}
	return out
}

// diffTally counts a differential run's cases by the reference's answer.
type diffTally struct{ cases, answered, ambiguous, refused, none, disagreed int }

func (d *diffTally) add(want refAnswer) {
	d.cases++
	switch {
	case want.refused:
		d.refused++
	case want.bundle != "":
		d.answered++
	case strings.Contains(want.err, "in multiple catalogs with the same priority"):
		d.ambiguous++
	default:
		d.none++
	}
}

// compareAnswer reports a case where resolution and the reference differ.
func compareAnswer(t *testing.T, tally *diffTally, name string, got, want refAnswer) {
	t.Helper()
	if got != want {
		tally.disagreed++
		if tally.disagreed <= 20 {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// writeRandomCatalog writes a catalog of packages p0..p<n-1> with random
// versions (pre-releases; releases in build metadata, explicit, both, or
// explicitly empty; bundles of one version under other names), channels
// with replaces chains, random skips and skipRanges, deprecated bundles
// (every bundle of the packages in deprecated), and bundles declaring
// dependencies.
func writeRandomCatalog(t *testing.T, rng *rand.Rand, dir string, packages, deprecated []string) {
	t.Helper()
	var cfg declcfg.DeclarativeConfig
	dependencies := []property.Property{
		{Type: property.TypeGVKRequired, Value: json.RawMessage(`{"group":"example.com","kind":"Widget","version":"v1"}`)},
		{Type: property.TypePackageRequired, Value: json.RawMessage(`{"packageName":"widgets","versionRange":">=1.0.0"}`)},
		{Type: property.TypeConstraint, Value: json.RawMessage(`{"failureMessage":"no","cel":{"rule":"true"}}`)},
	}
	for _, pkg := range packages {
		cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: "stable"})
		type version struct{ name, version, release string }
		var versions []version
		seen := map[string]bool{}
		for len(versions) < 3+rng.IntN(7) {
			v := version{version: fmt.Sprintf("%d.%d.%d", rng.IntN(3), rng.IntN(4), rng.IntN(3))}
			if rng.IntN(8) == 0 {
				v.version += "-rc.1"
			}
			switch rng.IntN(10) {
			case 0, 1:
				v.version += fmt.Sprintf("+%d", 1+rng.IntN(2))
			case 2:
				v.release = fmt.Sprint(1 + rng.IntN(2))
			case 3:
				v.version += fmt.Sprintf("+%d", 1+rng.IntN(2))
				v.release = fmt.Sprint(1 + rng.IntN(2))
			case 4:
				v.version += "+7"
				v.release = "-" // explicitly empty
			case 5:
				v.version += "+abcdefghij.klmnopqrst" // too long to be a release
			}
			switch v.name = pkg + ".v" + v.version; v.release {
			case "":
			case "-":
				v.name += ".empty-release"
			default:
				v.name = pkg + "-v" + v.version + "-" + v.release
			}
			if !seen[v.name] {
				seen[v.name] = true
				versions = append(versions, v)
			}
		}
		sort.SliceStable(versions, func(i, j int) bool {
			return semver.MustParse(versions[i].version).LT(semver.MustParse(versions[j].version))
		})
		var deprecations []declcfg.DeprecationEntry
		for _, v := range versions {
			pp := map[string]any{"packageName": pkg, "version": v.version}
			if v.release == "-" {
				pp["release"] = ""
			} else if v.release != "" {
				pp["release"] = v.release
			}
			value, _ := json.Marshal(pp)
			props := []property.Property{{Type: property.TypePackage, Value: value}}
			if rng.IntN(4) == 0 {
				props = append(props, dependencies[rng.IntN(len(dependencies))], dependencies[rng.IntN(len(dependencies))])
			}
			cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: v.name, Package: pkg,
				Image: "registry.example.com/" + pkg + ":" + strings.NewReplacer("+", "_", ".", "-").Replace(v.name), Properties: props})
			if rng.IntN(6) == 0 || slices.Contains(deprecated, pkg) {
				deprecations = append(deprecations, declcfg.DeprecationEntry{
					Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: v.name}, Message: "withdrawn"})
			}
		}
		if len(deprecations) > 0 {
			cfg.Deprecations = append(cfg.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: pkg, Entries: deprecations})
		}
		for i, ch := range []string{"stable", "fast", "candidate"} {
			if i > 0 && rng.IntN(2) == 0 {
				continue
			}
			var listed []version
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
				e := declcfg.ChannelEntry{Name: v.name}
				if k > 0 {
					e.Replaces = listed[k-1].name
				}
				if k > 1 && rng.IntN(4) == 0 {
					e.Skips = []string{versions[rng.IntN(len(versions))].name}
				}
				if rng.IntN(3) == 0 {
					lo := semver.MustParse(versions[rng.IntN(len(versions))].version)
					lo.Build = nil
					e.SkipRange = fmt.Sprintf(">=%s <%s", lo, strings.SplitN(v.version, "+", 2)[0])
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

// TestResolveDifferential compares resolution with the reference over two
// random catalogs: every package, channel set, installed bundle (by name as
// a status records it under each gate setting, by version alone, and one
// the catalogs do not have), range and policy, with BundleReleaseSupport
// off and on, under three priority orders. It compares the answer and
// operator-controller's message, each bundle's rejections, and the order
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
		cfgs = append(cfgs, loadRef(t, os.DirFS(dir)))
	}
	priorities := [][2]int32{{0, 0}, {1, 0}, {0, 2}}
	channelSets := [][]string{nil, {"stable"}, {"fast", "candidate"}, {"nosuch"}}
	ranges := []string{"", ">=1.0.0", "<1.0.0", "~1.1", ">=0.1.0 <2.0.0", "1.x || >=2.1.0-0"}
	tally := &diffTally{}
	for _, prio := range priorities {
		refCats := []refCatalog{{"a", prio[0], cfgs[0]}, {"b", prio[1], cfgs[1]}}
		gotCats := []resolveCatalog{{"a", prio[0], cats[0]}, {"b", prio[1], cats[1]}}
		for _, pkg := range []string{"p0", "p1", "p2", "p4", "p9"} {
			for _, gate := range []bool{false, true} {
				installs := []*refStatus{nil, {name: pkg + ".v9.9.9", version: "9.9.9"}}
				for _, cfg := range cfgs {
					for _, b := range cfg.Bundles {
						if st, ok := refStatusOf(b, gate); ok && b.Package == pkg && rng.IntN(2) == 0 {
							installs = append(installs, st)
						}
					}
				}
				for _, channels := range channelSets {
					for _, installed := range installs {
						for _, byVersion := range []bool{false, true} {
							if byVersion && (installed == nil || installed.release != nil) {
								continue
							}
							for _, rangeText := range ranges {
								for _, self := range []bool{false, true} {
									req := refRequest{pkg: pkg, channels: channels, versionRange: rangeText, installed: installed,
										selfCertified: self, gate: gate, byVersion: byVersion}
									name := fmt.Sprintf("%s prio=%v", req, prio)
									want, outcomes := refResolve(refCats, req)
									tally.add(want)
									got := resolveAcross(t, req.query(t), gotCats)
									compareAnswer(t, tally, name, gotAnswer(got), want)
									for i, rc := range refCats {
										compareCandidates(t, name+" in "+rc.name, got.Catalogs[i], outcomes[rc.name])
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases: %d answered, %d refused for a dependency, %d ambiguous, %d without a bundle; %d disagree",
		tally.cases, tally.answered, tally.refused, tally.ambiguous, tally.none, tally.disagreed)
	if tally.cases < 1000 || tally.answered < tally.cases/10 || tally.refused < tally.cases/50 || tally.ambiguous == 0 || tally.none < tally.cases/10 {
		t.Errorf("the generated cases do not cover each outcome well enough: %+v", *tally)
	}
}

// compareCandidates compares a catalog's verdicts with the reference's:
// whether it has the package, each bundle's rejections, and the order of
// the candidates.
func compareCandidates(t *testing.T, name string, got query.CatalogResult, want refOutcome) {
	t.Helper()
	if got.Found != want.found {
		t.Errorf("%s: found %v, want %v", name, got.Found, want.found)
	}
	if len(got.Candidates) != len(want.rejections) {
		t.Errorf("%s: %d bundles, want %d", name, len(got.Candidates), len(want.rejections))
	}
	var accepted []string
	for _, c := range got.Candidates {
		if len(c.Rejections) == 0 {
			accepted = append(accepted, c.Name)
		}
		rej := []string{}
		for _, r := range c.Rejections {
			rej = append(rej, string(r))
		}
		if !slices.Equal(rej, want.rejections[c.Name]) {
			t.Errorf("%s: %s rejected for %v, want %v", name, c.Name, rej, want.rejections[c.Name])
		}
	}
	var wantAccepted []string
	for _, b := range want.accepted {
		wantAccepted = append(wantAccepted, b.Name)
	}
	if !slices.Equal(accepted, wantAccepted) {
		t.Errorf("%s: candidates %v, want %v", name, accepted, wantAccepted)
	}
}

// TestResolveDifferentialCommunity compares resolution with the reference
// on the real community catalog, as the measurement did: for every
// package, install; per channel; per pinned version; and an upgrade from
// every channel entry, the installed bundle as its status records it; each
// with BundleReleaseSupport off and on. The catalog declares dependencies
// (olm.gvk.required, olm.package.required), so some chosen bundles must be
// refused: the test fails if it meets none, so that it cannot pass on
// nothing.
func TestResolveDifferentialCommunity(t *testing.T) {
	dir := fbcfacts.SharedCommunity(t)
	c, _, _ := openIndex(t, os.DirFS(dir))
	cfg := loadRef(t, os.DirFS(dir))
	refCats := []refCatalog{{"community", 0, cfg}}
	gotCats := []resolveCatalog{{"community", 0, c}}
	byPackage := map[string][]declcfg.Bundle{}
	for _, b := range cfg.Bundles {
		byPackage[b.Package] = append(byPackage[b.Package], b)
	}
	channels := map[string][]declcfg.Channel{}
	for _, ch := range cfg.Channels {
		channels[ch.Package] = append(channels[ch.Package], ch)
	}
	tally := &diffTally{}
	for _, p := range cfg.Packages {
		for _, gate := range []bool{false, true} {
			reqs := []refRequest{{pkg: p.Name, gate: gate}}
			for _, ch := range channels[p.Name] {
				reqs = append(reqs, refRequest{pkg: p.Name, channels: []string{ch.Name}, gate: gate})
			}
			pinned := map[string]bool{}
			for _, b := range byPackage[p.Name] {
				vr, err := refVersionRelease(b, false)
				if err != nil {
					continue
				}
				v := vr.Version
				v.Build = nil
				if _, err := mmsemver.NewConstraint(v.String()); err == nil && !pinned[v.String()] {
					pinned[v.String()] = true
					reqs = append(reqs, refRequest{pkg: p.Name, versionRange: v.String(), gate: gate})
				}
			}
			bundles := map[string]declcfg.Bundle{}
			for _, b := range byPackage[p.Name] {
				bundles[b.Name] = b
			}
			for _, ch := range channels[p.Name] {
				for _, e := range ch.Entries {
					b, ok := bundles[e.Name]
					if !ok {
						continue
					}
					if st, ok := refStatusOf(b, gate); ok {
						reqs = append(reqs, refRequest{pkg: p.Name, channels: []string{ch.Name}, installed: st, gate: gate})
					}
				}
			}
			for _, req := range reqs {
				want, _ := refResolve(refCats, req)
				tally.add(want)
				compareAnswer(t, tally, req.String(), gotAnswer(resolveAcross(t, req.query(t), gotCats)), want)
			}
		}
	}
	t.Logf("community-v4.20, %d cases: %d answered, %d refused for a dependency, %d without a bundle; %d disagree",
		tally.cases, tally.answered, tally.refused, tally.none, tally.disagreed)
	if tally.refused == 0 {
		t.Error("no case met a bundle refused for a dependency: the comparison proves nothing about them")
	}
	if tally.cases < 2000 {
		t.Errorf("only %d cases: the catalog read is not the whole community catalog", tally.cases)
	}
}
