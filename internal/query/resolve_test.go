package query_test

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/query"
)

const resolveDir = "testdata/resolve"

// resolveCatalog is a test catalog with its name and priority.
type resolveCatalog struct {
	name     string
	priority int32
	cat      *query.Catalog
}

// resolveAcross resolves req over the catalogs, in the order given.
func resolveAcross(t *testing.T, req query.ResolveRequest, cats []resolveCatalog) query.Resolution {
	t.Helper()
	var offers []query.CatalogCandidates
	for _, c := range cats {
		pc, err := c.cat.ResolvePackage(context.Background(), req)
		if err != nil {
			t.Fatalf("resolve in %s: %v", c.name, err)
		}
		offers = append(offers, query.CatalogCandidates{Catalog: c.name, Priority: c.priority, PackageCandidates: pc})
	}
	return query.Choose(req, offers)
}

// verdict words what resolution made of a bundle: its ranking, or its
// rejections joined by "+".
func verdict(c query.ResolveCandidate) string {
	if len(c.Rejections) == 0 {
		return string(c.Ranking)
	}
	parts := make([]string, len(c.Rejections))
	for i, r := range c.Rejections {
		parts[i] = string(r)
	}
	return strings.Join(parts, "+")
}

// TestResolve checks every rule of resolution on the hand-written catalogs
// of testdata/resolve (see its README): the expected answers were worked
// out from those files by hand.
func TestResolve(t *testing.T) {
	a, _, _ := openIndex(t, os.DirFS(resolveDir+"/a"))
	b, _, _ := openIndex(t, os.DirFS(resolveDir+"/b"))
	onlyA := []resolveCatalog{{"a", 0, a}}
	tests := []struct {
		name      string
		cats      []resolveCatalog
		pkg       string
		channels  []string
		version   string
		installed string
		self      bool
		// installedBundle is the installed bundle's name; release turns
		// BundleReleaseSupport on.
		installedBundle string
		release         bool
		// installedRelease is the installed release recorded apart.
		installedRelease *string
		// wantCatalog and wantBundle are the answer; wantError the message
		// when there is none, and wantRefused the bundle of wantCatalog
		// chosen and refused for a dependency.
		wantCatalog, wantBundle, wantError, wantRefused string
		// verdicts are what resolution says of some bundles, in wantCatalog
		// (or the first catalog).
		verdicts map[string]string
		// outcomes are what became of each catalog.
		outcomes map[string]query.CatalogOutcome
		// order is the order of the first candidates, if checked.
		order []string
		// successors are how some bundles follow the installed version,
		// joined by "+", in wantCatalog (or the first catalog).
		successors map[string]string
		// dependencies are the dependency property some bundles declare
		// first, in wantCatalog (or the first catalog).
		dependencies map[string]string
	}{
		{name: "no constraint: highest version, pre-releases included", cats: onlyA, pkg: "ferry",
			wantCatalog: "a", wantBundle: "ferry.v2.1.0-rc.1",
			verdicts: map[string]string{"ferry.v2.1.0-rc.1": "Chosen", "ferry.v2.0.0": "LowerVersion", "ferry.v1.3.0": "Deprecated"},
			order:    []string{"ferry.v2.1.0-rc.1", "ferry.v2.0.0", "ferry.v1.2.0", "ferry.v1.1.0", "ferry.v1.0.0", "ferry.v1.3.0"}},
		{name: "channel: deprecated head ranks below older", cats: onlyA, pkg: "ferry", channels: []string{"stable"},
			wantCatalog: "a", wantBundle: "ferry.v1.2.0",
			verdicts: map[string]string{"ferry.v1.3.0": "Deprecated", "ferry.v1.0.0": "LowerVersion", "ferry.v2.0.0": "NotInChannel", "ferry.v2.1.0-rc.1": "NotInChannel"}},
		{name: "two channels", cats: onlyA, pkg: "ferry", channels: []string{"stable", "fast"},
			wantCatalog: "a", wantBundle: "ferry.v2.0.0",
			verdicts: map[string]string{"ferry.v2.1.0-rc.1": "NotInChannel", "ferry.v1.3.0": "Deprecated"}},
		{name: "only a deprecated bundle left is chosen", cats: onlyA, pkg: "ferry", channels: []string{"stable"}, version: "1.3.0",
			wantCatalog: "a", wantBundle: "ferry.v1.3.0",
			verdicts: map[string]string{"ferry.v1.3.0": "Chosen", "ferry.v1.2.0": "OutsideVersionRange"}},
		{name: "range", cats: onlyA, pkg: "ferry", version: ">=1.0.0 <2.0.0",
			wantCatalog: "a", wantBundle: "ferry.v1.2.0",
			verdicts: map[string]string{"ferry.v2.0.0": "OutsideVersionRange", "ferry.v2.1.0-rc.1": "OutsideVersionRange", "ferry.v1.3.0": "Deprecated"}},
		{name: "a range without pre-release leaves pre-releases out", cats: onlyA, pkg: "ferry", version: ">=2.0.0",
			wantCatalog: "a", wantBundle: "ferry.v2.0.0",
			verdicts: map[string]string{"ferry.v2.1.0-rc.1": "OutsideVersionRange"}},
		{name: "channel and range both fail", cats: onlyA, pkg: "ferry", channels: []string{"candidate"}, version: ">=1.5.0 <2.0.0",
			wantError: `no bundles found for package "ferry" matching version ">=1.5.0 <2.0.0" in channels [candidate]`,
			verdicts:  map[string]string{"ferry.v1.0.0": "NotInChannel+OutsideVersionRange", "ferry.v2.1.0-rc.1": "OutsideVersionRange", "ferry.v2.0.0": "OutsideVersionRange"},
			outcomes:  map[string]query.CatalogOutcome{"a": query.CatalogNoCandidate}},
		{name: "installed: replaces, skipRange and staying", cats: onlyA, pkg: "ferry", installed: "1.0.0",
			wantCatalog: "a", wantBundle: "ferry.v1.2.0",
			verdicts: map[string]string{"ferry.v1.0.0": "LowerVersion", "ferry.v1.1.0": "LowerVersion",
				"ferry.v1.3.0": "NotSuccessor", "ferry.v2.0.0": "NotSuccessor", "ferry.v2.1.0-rc.1": "NotSuccessor"}},
		{name: "installed: skips beats a deprecated replacement", cats: onlyA, pkg: "ferry", installed: "1.2.0",
			wantCatalog: "a", wantBundle: "ferry.v2.0.0",
			verdicts: map[string]string{"ferry.v1.3.0": "Deprecated", "ferry.v1.2.0": "LowerVersion", "ferry.v1.1.0": "NotSuccessor"}},
		{name: "installed: successors only in the channels asked", cats: onlyA, pkg: "ferry", installed: "1.2.0", channels: []string{"stable"},
			wantCatalog: "a", wantBundle: "ferry.v1.2.0",
			verdicts: map[string]string{"ferry.v1.3.0": "Deprecated", "ferry.v2.0.0": "NotInChannel+NotSuccessor"}},
		{name: "installed: a successor outside the range", cats: onlyA, pkg: "ferry", installed: "1.1.0", version: "<1.2.0",
			wantCatalog: "a", wantBundle: "ferry.v1.1.0",
			verdicts: map[string]string{"ferry.v1.2.0": "OutsideVersionRange", "ferry.v1.0.0": "NotSuccessor"}},
		{name: "SelfCertified ignores successors", cats: onlyA, pkg: "ferry", installed: "1.2.0", self: true,
			wantCatalog: "a", wantBundle: "ferry.v2.1.0-rc.1",
			verdicts: map[string]string{"ferry.v1.0.0": "LowerVersion"}},
		{name: "installed version without successors", cats: onlyA, pkg: "ferry", installed: "9.9.9",
			wantError: `error upgrading from currently installed version "9.9.9": no bundles found for package "ferry"`,
			verdicts:  map[string]string{"ferry.v2.0.0": "NotSuccessor"}},
		{name: "unknown package", cats: onlyA, pkg: "nope",
			wantError: `no bundles found for package "nope"`,
			outcomes:  map[string]query.CatalogOutcome{"a": query.CatalogPackageNotFound}},
		{name: "unknown channel", cats: onlyA, pkg: "ferry", channels: []string{"nosuch"},
			wantError: `no bundles found for package "ferry" in channels [nosuch]`},
		{name: "deprecation ranking within a package", cats: onlyA, pkg: "skiff",
			wantCatalog: "a", wantBundle: "skiff.v0.1.0",
			verdicts: map[string]string{"skiff.v0.2.0": "Deprecated"}},
		{name: "gate on: the explicit release orders one version", cats: onlyA, pkg: "raft", channels: []string{"stable"}, release: true,
			wantCatalog: "a", wantBundle: "raft-v1.0.0-2",
			order: []string{"raft-v1.0.0-2", "raft-v1.0.0-1", "raft.v1.0.0", "raft.v1.0.0+3"}},
		{name: "gate off: explicit releases are not read, ties keep catalog order", cats: onlyA, pkg: "raft", channels: []string{"stable"},
			wantCatalog: "a", wantBundle: "raft.v1.0.0",
			order: []string{"raft.v1.0.0", "raft-v1.0.0-1", "raft-v1.0.0-2", "raft.v1.0.0+3"}},
		{name: "gate on: build metadata is a release", cats: onlyA, pkg: "raft", release: true,
			wantCatalog: "a", wantBundle: "raft.v1.0.0+3",
			order: []string{"raft.v1.0.0+3", "raft-v1.0.0-2", "raft-v1.0.0-1", "raft.v1.0.0"}},
		{name: "gate off: build metadata is the only release", cats: onlyA, pkg: "raft",
			wantCatalog: "a", wantBundle: "raft.v1.0.0+3",
			order: []string{"raft.v1.0.0+3", "raft.v1.0.0", "raft-v1.0.0-1", "raft-v1.0.0-2"}},
		{name: "gate on: installed with a release in build metadata", cats: onlyA, pkg: "raft", installed: "1.0.0+1", release: true,
			wantCatalog: "a", wantBundle: "raft-v1.0.0-2",
			verdicts: map[string]string{"raft-v1.0.0-1": "LowerVersion", "raft.v1.0.0": "NotSuccessor", "raft.v1.0.0+3": "NotSuccessor"}},
		{name: "gate off: no bundle has the installed release 1", cats: onlyA, pkg: "raft", installed: "1.0.0+1",
			wantError: `error upgrading from currently installed version "1.0.0+1": no bundles found for package "raft"`,
			verdicts:  map[string]string{"raft-v1.0.0-1": "NotSuccessor", "raft-v1.0.0-2": "NotSuccessor"}},

		// kayak: the chosen bundle is refused for its dependency, with no
		// fallback to the next candidate or catalog.
		{name: "dependency: the chosen bundle is refused, the first dependency property named", cats: onlyA, pkg: "kayak", channels: []string{"stable"},
			wantCatalog: "a", wantRefused: "kayak.v1.2.0",
			wantError:    `validating bundle "kayak.v1.2.0": bundle "kayak.v1.2.0" has a dependency declared via property "olm.constraint" which is currently not supported`,
			verdicts:     map[string]string{"kayak.v1.2.0": "Chosen", "kayak.v1.0.0": "LowerVersion"},
			dependencies: map[string]string{"kayak.v1.2.0": "olm.constraint", "kayak.v1.1.0": "olm.gvk.required", "kayak.v1.0.0": "", "kayak.v1.3.0": ""},
			outcomes:     map[string]query.CatalogOutcome{"a": query.CatalogChosen}},
		{name: "dependency: olm.gvk.required, not the next candidate", cats: onlyA, pkg: "kayak", version: "<1.2.0",
			wantCatalog: "a", wantRefused: "kayak.v1.1.0",
			wantError: `validating bundle "kayak.v1.1.0": bundle "kayak.v1.1.0" has a dependency declared via property "olm.gvk.required" which is currently not supported`,
			verdicts:  map[string]string{"kayak.v1.1.0": "Chosen", "kayak.v1.0.0": "LowerVersion"}},
		{name: "dependency: a range leaving it out resolves", cats: onlyA, pkg: "kayak", version: "<1.1.0",
			wantCatalog: "a", wantBundle: "kayak.v1.0.0"},
		{name: "dependency: lower candidates' dependencies do not matter", cats: onlyA, pkg: "kayak",
			wantCatalog: "a", wantBundle: "kayak.v1.3.0",
			verdicts: map[string]string{"kayak.v1.2.0": "LowerVersion", "kayak.v1.1.0": "LowerVersion"}},
		{name: "dependency: no fallback to another catalog", cats: []resolveCatalog{{"a", 1, a}, {"b", 0, b}}, pkg: "kayak", channels: []string{"stable"},
			wantCatalog: "a", wantRefused: "kayak.v1.2.0",
			wantError: `validating bundle "kayak.v1.2.0": bundle "kayak.v1.2.0" has a dependency declared via property "olm.constraint" which is currently not supported`,
			outcomes:  map[string]query.CatalogOutcome{"a": query.CatalogChosen, "b": query.CatalogLowerPriority}},
		{name: "dependency: a catalog of higher priority without one wins", cats: []resolveCatalog{{"a", 0, a}, {"b", 1, b}}, pkg: "kayak", channels: []string{"stable"},
			wantCatalog: "b", wantBundle: "kayak.v0.9.0"},
		{name: "dependency: a tie is ambiguous before any bundle is validated", cats: []resolveCatalog{{"a", 0, a}, {"b", 0, b}}, pkg: "kayak", channels: []string{"stable"},
			wantError: `found bundles for package "kayak" in channels [stable] in multiple catalogs with the same priority [a b]`},

		// oar: releases written every way (see testdata/resolve/README.md).
		{name: "gate off: releases from build metadata only", cats: onlyA, pkg: "oar",
			wantCatalog: "a", wantBundle: "oar.both",
			order: []string{"oar.both", "oar.empty-release", "oar.build", "oar.neither", "oar.explicit", "oar.long-build"}},
		{name: "gate on: explicit releases first, an empty one keeps build metadata from being one", cats: onlyA, pkg: "oar", release: true,
			wantCatalog: "a", wantBundle: "oar.build",
			order: []string{"oar.build", "oar.both", "oar.explicit", "oar.neither", "oar.empty-release", "oar.long-build"}},
		{name: "gate off, installed by version: every bundle of it is installed", cats: onlyA, pkg: "oar", installed: "2.0.0",
			wantCatalog: "a", wantBundle: "oar.both",
			successors: map[string]string{"oar.neither": "Installed", "oar.explicit": "Installed", "oar.long-build": "Installed",
				"oar.build": "replaces", "oar.both": "replaces", "oar.empty-release": ""},
			verdicts: map[string]string{"oar.empty-release": "NotSuccessor"}},
		{name: "gate off, installed by name: only its successors", cats: onlyA, pkg: "oar", installed: "2.0.0", installedBundle: "oar.neither",
			wantCatalog: "a", wantBundle: "oar.build",
			successors: map[string]string{"oar.neither": "Installed", "oar.explicit": "Installed", "oar.long-build": "Installed",
				"oar.build": "replaces", "oar.both": ""},
			verdicts: map[string]string{"oar.both": "NotSuccessor", "oar.empty-release": "NotSuccessor"}},
		{name: "gate off, installed by another name of the same version", cats: onlyA, pkg: "oar", installed: "2.0.0", installedBundle: "oar.explicit",
			wantCatalog: "a", wantBundle: "oar.both",
			verdicts: map[string]string{"oar.build": "NotSuccessor", "oar.empty-release": "NotSuccessor"}},
		{name: "gate on, installed by version: the bundles without a release", cats: onlyA, pkg: "oar", installed: "2.0.0", release: true,
			wantCatalog: "a", wantBundle: "oar.build",
			successors: map[string]string{"oar.neither": "Installed", "oar.empty-release": "Installed", "oar.long-build": "Installed+replaces",
				"oar.build": "replaces", "oar.explicit": ""},
			verdicts: map[string]string{"oar.explicit": "NotSuccessor", "oar.both": "NotSuccessor"}},
		{name: "gate on, installed with its explicit release in build metadata", cats: onlyA, pkg: "oar", installed: "2.0.0+3", release: true,
			wantCatalog: "a", wantBundle: "oar.both",
			successors: map[string]string{"oar.explicit": "Installed", "oar.both": "replaces"},
			verdicts:   map[string]string{"oar.explicit": "LowerVersion", "oar.build": "NotSuccessor", "oar.neither": "NotSuccessor"}},
		{name: "gate on, installed with its release recorded apart", cats: onlyA, pkg: "oar", installed: "2.0.0", installedRelease: ptr("3"), release: true,
			wantCatalog: "a", wantBundle: "oar.both",
			successors: map[string]string{"oar.explicit": "Installed", "oar.both": "replaces"}},
		{name: "gate on, an empty release recorded apart keeps build metadata from being one", cats: onlyA, pkg: "oar", installed: "2.0.0+7",
			installedRelease: ptr(""), release: true,
			wantCatalog: "a", wantBundle: "oar.build",
			successors: map[string]string{"oar.neither": "Installed", "oar.empty-release": "Installed", "oar.build": "replaces"}},
		{name: "gate on, the same version without a release recorded apart", cats: onlyA, pkg: "oar", installed: "2.0.0+7", release: true,
			wantError: `error upgrading from currently installed version "2.0.0+7": no bundles found for package "oar"`},
		{name: "same priority is ambiguous", cats: []resolveCatalog{{"a", 0, a}, {"b", 0, b}}, pkg: "ferry", channels: []string{"stable"},
			wantError: `found bundles for package "ferry" in channels [stable] in multiple catalogs with the same priority [a b]`,
			outcomes:  map[string]query.CatalogOutcome{"a": query.CatalogSamePriority, "b": query.CatalogSamePriority}},
		{name: "higher priority wins", cats: []resolveCatalog{{"b", 1, b}, {"a", 0, a}}, pkg: "ferry", channels: []string{"stable"},
			wantCatalog: "b", wantBundle: "ferry.v1.4.0",
			outcomes: map[string]query.CatalogOutcome{"a": query.CatalogLowerPriority, "b": query.CatalogChosen}},
		{name: "higher priority wins with a lower version", cats: []resolveCatalog{{"a", 5, a}, {"b", -1, b}}, pkg: "ferry", channels: []string{"stable"},
			wantCatalog: "a", wantBundle: "ferry.v1.2.0",
			outcomes: map[string]query.CatalogOutcome{"a": query.CatalogChosen, "b": query.CatalogLowerPriority}},
		{name: "a catalog offering only deprecated bundles loses whatever its priority", cats: []resolveCatalog{{"b", 9, b}, {"a", 0, a}}, pkg: "skiff",
			wantCatalog: "a", wantBundle: "skiff.v0.1.0",
			outcomes: map[string]query.CatalogOutcome{"a": query.CatalogChosen, "b": query.CatalogDeprecated}},
		{name: "installed across catalogs", cats: []resolveCatalog{{"a", 0, a}, {"b", 0, b}}, pkg: "ferry", installed: "1.1.0", channels: []string{"stable"},
			wantCatalog: "a", wantBundle: "ferry.v1.2.0",
			outcomes: map[string]query.CatalogOutcome{"a": query.CatalogChosen, "b": query.CatalogNoCandidate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := query.NewResolveRequest(query.ResolveParams{Package: tt.pkg, Channels: tt.channels, Version: tt.version, Installed: tt.installed, SelfCertified: tt.self,
				InstalledBundle: tt.installedBundle, InstalledRelease: tt.installedRelease, BundleRelease: tt.release})
			if err != nil {
				t.Fatal(err)
			}
			res := resolveAcross(t, req, tt.cats)
			got, catalog := res.Bundle()
			var refused, refusedIn, wantRefusedIn string
			if b, in := res.RefusedBundle(); b != nil {
				refused, refusedIn = b.Name, in
			}
			if tt.wantRefused != "" {
				wantRefusedIn = tt.wantCatalog
			}
			if refused != tt.wantRefused || refusedIn != wantRefusedIn {
				t.Errorf("refused %q in %q, want %q in %q", refused, refusedIn, tt.wantRefused, wantRefusedIn)
			}
			switch {
			case tt.wantError != "":
				if got != nil || res.Error != tt.wantError {
					t.Errorf("got %v from %q, error %q; want error %q", got, catalog, res.Error, tt.wantError)
				}
			case got == nil:
				t.Fatalf("no answer (%s); want %s from %s", res.Error, tt.wantBundle, tt.wantCatalog)
			case got.Name != tt.wantBundle || catalog != tt.wantCatalog:
				t.Errorf("got %s from %s, want %s from %s", got.Name, catalog, tt.wantBundle, tt.wantCatalog)
			}
			for _, c := range res.Catalogs {
				if want, ok := tt.outcomes[c.Catalog]; ok && c.Outcome != want {
					t.Errorf("catalog %s: outcome %s, want %s", c.Catalog, c.Outcome, want)
				}
			}
			in := res.Catalogs[0]
			for _, c := range res.Catalogs {
				if c.Catalog == tt.wantCatalog {
					in = c
				}
			}
			seen := map[string]string{}
			successors := map[string]string{}
			var order []string
			for _, c := range in.Candidates {
				seen[c.Name] = verdict(c)
				order = append(order, c.Name)
				rules := make([]string, len(c.Successor))
				for i, r := range c.Successor {
					rules[i] = string(r)
				}
				successors[c.Name] = strings.Join(rules, "+")
			}
			for _, c := range in.Candidates {
				if want, ok := tt.dependencies[c.Name]; ok && c.Dependency != want {
					t.Errorf("%s in %s: dependency %q, want %q", c.Name, in.Catalog, c.Dependency, want)
				}
			}
			for name, want := range tt.successors {
				if successors[name] != want {
					t.Errorf("%s in %s: successor %q, want %q", name, in.Catalog, successors[name], want)
				}
			}
			for name, want := range tt.verdicts {
				if seen[name] != want {
					t.Errorf("%s in %s: %q, want %q", name, in.Catalog, seen[name], want)
				}
			}
			if tt.order != nil && !slices.Equal(order[:min(len(order), len(tt.order))], tt.order) {
				t.Errorf("order %v, want %v", order, tt.order)
			}
		})
	}
}

// TestNewResolveRequest checks that malformed parameters name themselves.
func TestNewResolveRequest(t *testing.T) {
	for _, tt := range []struct {
		version, installed, installedBundle string
		installedRelease                    *string
		param                               string
	}{
		{version: ">=1.0.0 <<2", param: "version"},
		{installedRelease: ptr("1"), param: "installedRelease"},
		{installed: "1.0.0", installedRelease: ptr("01"), param: "installedRelease"},
		{installed: "1.0.0", installedRelease: ptr("abcdefghij.klmnopqrst"), param: "installedRelease"},
		{installed: "1.0.0", installedRelease: ptr("")},
		{installed: "1.0.0", installedRelease: ptr("rc.1")},
		{installedBundle: "p.v1.0.0", param: "installedBundle"},
		{installed: "1.0.0", installedBundle: "p.v1.0.0"},
		{installed: "1.0.0-rc.1+build.5"},
		{version: "banana", param: "version"},
		{installed: "1.0", param: "installed"},
		{installed: "v1.0.0", param: "installed"},
		{version: ">=1.0.0, <2.0.0 || 3.x", installed: "1.0.0-rc.1+build.5"},
	} {
		_, err := query.NewResolveRequest(query.ResolveParams{Package: "p", Version: tt.version, Installed: tt.installed, InstalledBundle: tt.installedBundle,
			InstalledRelease: tt.installedRelease})
		var perr *query.ResolveParamError
		switch {
		case tt.param == "" && err != nil:
			t.Errorf("%q %q: %v", tt.version, tt.installed, err)
		case tt.param != "" && (!asParamError(err, &perr) || perr.Param != tt.param):
			t.Errorf("%q %q: error %v, want one naming %s", tt.version, tt.installed, err, tt.param)
		}
	}
}

func asParamError(err error, target **query.ResolveParamError) bool {
	p, ok := err.(*query.ResolveParamError)
	*target = p
	return ok
}

// TestResolveKeepsWithinBudget checks that the parsed packages a catalog
// keeps for resolution stay within its budget, the least recently used
// going first, and that answers are the same whether a package was kept or
// read again.
func TestResolveKeepsWithinBudget(t *testing.T) {
	ctx := context.Background()
	packages := []string{"ferry", "skiff", "raft"}
	// Each package's size as kept, measured alone.
	sizes := map[string]int{}
	for _, pkg := range packages {
		c, _, _ := openIndex(t, os.DirFS(resolveDir+"/a"))
		if _, err := c.ResolvePackage(ctx, query.ResolveRequest{Package: pkg}); err != nil {
			t.Fatal(err)
		}
		n, bytes := query.ResolveKept(c)
		if n != 1 || bytes <= 0 {
			t.Fatalf("%s alone: %d packages kept, %d bytes", pkg, n, bytes)
		}
		sizes[pkg] = bytes
	}
	unbounded, _, _ := openIndex(t, os.DirFS(resolveDir+"/a"))
	bounded, _, _ := openIndex(t, os.DirFS(resolveDir+"/a"))
	// Room for any two packages, not for all three.
	budget := sizes["ferry"] + sizes["skiff"] + sizes["raft"] - 1
	query.SetResolveBudget(bounded, budget)
	req := func(pkg string) query.ResolveRequest {
		r, err := query.NewResolveRequest(query.ResolveParams{Package: pkg, Installed: "1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i, step := range []struct {
		pkg  string
		kept []string
	}{
		{"ferry", []string{"ferry"}},
		{"skiff", []string{"ferry", "skiff"}},
		{"ferry", []string{"ferry", "skiff"}},
		// raft evicts skiff, the least recently used, not ferry.
		{"raft", []string{"ferry", "raft"}},
		// skiff, read again, evicts ferry.
		{"skiff", []string{"raft", "skiff"}},
		{"nope", []string{"raft", "skiff"}},
	} {
		got, err := bounded.ResolvePackage(ctx, req(step.pkg))
		if err != nil {
			t.Fatal(err)
		}
		want, err := unbounded.ResolvePackage(ctx, req(step.pkg))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("step %d, %s: answer %+v, want %+v", i, step.pkg, got, want)
		}
		kept := query.ResolveKeptPackages(bounded)
		if !slices.Equal(kept, step.kept) {
			t.Errorf("step %d, %s: kept %v, want %v", i, step.pkg, kept, step.kept)
		}
		if _, bytes := query.ResolveKept(bounded); bytes > budget {
			t.Errorf("step %d, %s: %d bytes kept, budget %d", i, step.pkg, bytes, budget)
		}
	}
	// A package larger than the whole budget is answered, not kept.
	tiny, _, _ := openIndex(t, os.DirFS(resolveDir+"/a"))
	query.SetResolveBudget(tiny, sizes["ferry"]-1)
	got, err := tiny.ResolvePackage(ctx, req("ferry"))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := unbounded.ResolvePackage(ctx, req("ferry")); !reflect.DeepEqual(got, want) {
		t.Errorf("ferry over budget: answer %+v, want %+v", got, want)
	}
	if n, _ := query.ResolveKept(tiny); n != 0 {
		t.Errorf("ferry over budget: %d packages kept, want 0", n)
	}
}

func ptr[T any](v T) *T { return &v }
