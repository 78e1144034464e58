package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// Resolution answers "if I created this ClusterExtension, what would I
// get?" the way operator-controller's catalog resolver does, so that the
// question can be asked without installing anything. The rules (as of
// operator-controller's internal/operator-controller/resolve/catalog.go
// and catalogmetadata/filter/successors.go, v1.5 / main of 2025):
//
//   - In each catalog, a bundle of the package is a candidate when it is
//     listed by one of the requested channels (any channel if none), its
//     version is in the requested range (Masterminds constraints), and,
//     when an installed version is given and the policy is CatalogProvided,
//     it is the installed version itself or a successor of it: an entry of
//     a considered channel that replaces or skips the installed bundle, or
//     whose skipRange (blang ranges, as OLM v0) holds the installed version.
//     These are the only upgrade edges operator-controller has followed
//     since it removed its ForceSemverUpgradeConstraints gate (#1638,
//     January 2025).
//     The installed bundle is matched by name in replaces and skips when
//     its name is given, as operator-controller matches the name its
//     ClusterExtension's status records; without one, every bundle of the
//     installed version and release counts as installed.
//   - A bundle's release is its version's build metadata when that parses
//     as one (registry+v1 bundles write it so), operator-controller's
//     default; with its BundleReleaseSupport gate on, the explicit release
//     of the olm.package property comes first (bundleutil's
//     GetVersionAndRelease). The installed bundle's release is the one its
//     status records apart, if given, else its version's build metadata
//     (filter.SuccessorsOf).
//   - Within a catalog, candidates that are not deprecated come first, then
//     higher version and release, then catalog order (operator-controller
//     sorts stably); the first is the catalog's choice.
//   - Across catalogs, catalogs offering a non-deprecated choice beat those
//     offering only deprecated ones; then the highest priority wins, and a
//     tie at the top is an error.
//   - The bundle chosen is then refused if it declares a dependency
//     (resolve/validation.go's NoDependencyValidation), with no fallback to
//     the next candidate: operator-controller does not resolve
//     dependencies, and falling back would make the answer depend on a rule
//     the request cannot see.

// ResolveRequest is a ClusterExtension's catalog source, as resolution
// reads it.
type ResolveRequest struct {
	Package string
	// Channels restrict candidates to bundles these channels list; none
	// means every channel.
	Channels []string
	// VersionRange, if set, keeps only versions it accepts; VersionRangeText
	// is how it was written, for messages.
	VersionRange     *mmsemver.Constraints
	VersionRangeText string
	// Installed, if set, is the installed version; InstalledText is how it
	// was written. Under the CatalogProvided policy only that version and
	// its successors are candidates.
	Installed     *semver.Version
	InstalledText string
	// InstalledRelease, if set, is the installed bundle's release as a
	// ClusterExtension's status records it apart from the version (with
	// BundleReleaseSupport on), even empty; then the version's build
	// metadata is not read as the release. NewResolveRequest checked that
	// it parses.
	InstalledRelease *string
	// SelfCertified lifts the successor rule (policy SelfCertified).
	SelfCertified bool
	// InstalledBundle, if set, is the installed bundle's name, which
	// replaces and skips must name; "" lets them name any bundle of the
	// installed version and release, for a caller that knows only the
	// version.
	InstalledBundle string
	// BundleRelease reads releases as operator-controller with its
	// BundleReleaseSupport gate on: an explicit release of the olm.package
	// property first. Off, the gate's default, the build metadata of the
	// version alone.
	BundleRelease bool
}

// Rejection says why a bundle of the package is not a candidate.
type Rejection string

// The reasons a bundle is not a candidate, each a rule of resolution.
const (
	// NotInChannel: channels were requested and none lists the bundle.
	NotInChannel Rejection = "NotInChannel"
	// OutsideVersionRange: its version is not in the requested range, or
	// does not parse.
	OutsideVersionRange Rejection = "OutsideVersionRange"
	// NotSuccessor: it is neither the installed version nor an upgrade of it
	// by replaces, skips or skipRange in a considered channel.
	NotSuccessor Rejection = "NotSuccessor"
)

// Ranking says why a candidate was not its catalog's choice.
type Ranking string

// The reasons a candidate ranks below the choice.
const (
	// Chosen: the catalog's choice.
	Chosen Ranking = "Chosen"
	// RankedDeprecated: deprecated, while a candidate that is not exists.
	RankedDeprecated Ranking = "Deprecated"
	// RankedLowerVersion: a higher version (or release) is a candidate.
	RankedLowerVersion Ranking = "LowerVersion"
)

// SuccessorRule is how a candidate follows the installed version.
type SuccessorRule string

// The successor rules; the upgrade rules are those of UpgradeRule.
const (
	// SuccessorInstalled: it is the installed version (staying is allowed).
	SuccessorInstalled SuccessorRule = "Installed"
	SuccessorReplaces  SuccessorRule = SuccessorRule(RuleReplaces)
	SuccessorSkips     SuccessorRule = SuccessorRule(RuleSkips)
	SuccessorSkipRange SuccessorRule = SuccessorRule(RuleSkipRange)
)

// ResolveCandidate is a bundle of the package as resolution saw it.
type ResolveCandidate struct {
	Name, Version, Release, Image string
	// Channels are the channels that list the bundle, by name.
	Channels []string
	// Deprecation is the bundle's own deprecation message: only a bundle's
	// own deprecation ranks it lower, not its channel's or package's.
	Deprecation string
	// Dependency is the type of its first property declaring a dependency
	// (olm.package.required, olm.gvk.required or olm.constraint), "" when it declares none.
	Dependency string
	// Rejections are the rules the bundle fails, empty for a candidate.
	Rejections []Rejection
	// Ranking is set for candidates: Chosen, or why it ranks lower.
	Ranking Ranking
	// Successor lists how it follows the installed version, when one is given.
	Successor []SuccessorRule
}

// PackageCandidates is one catalog's part of a resolution.
type PackageCandidates struct {
	// Found says the catalog has the package.
	Found bool
	// Candidates are every bundle of the package: the candidates first,
	// best first, then the rejected ones, newest first.
	Candidates []ResolveCandidate
	// Accepted counts the candidates at the head of Candidates.
	Accepted int
}

// Choice is the catalog's chosen bundle, nil when it has no candidate.
func (p PackageCandidates) Choice() *ResolveCandidate {
	if p.Accepted == 0 {
		return nil
	}
	return &p.Candidates[0]
}

// resolveEntry is a channel entry, as successors need it, its skipRange
// parsed (nil when it has none or it does not parse).
type resolveEntry struct {
	channel, replaces string
	skips             []string
	skipRange         semver.Range
}

// resolveBundle is a bundle of the package with its parsed version.
type resolveBundle struct {
	name, version, release, image string
	channels                      []string
	// vr is the version and release with BundleReleaseSupport off,
	// vrRelease with it on.
	vr, vrRelease versionRelease
	// mm is the version as version ranges read it, nil when it does not parse.
	mm *mmsemver.Version
	// entries are the channel entries that list the bundle.
	entries []resolveEntry
	// deprecation is the bundle's own deprecation message.
	deprecation string
	// dependency is its first dependency property's type, "" if none.
	dependency string
}

// resolvePackage is a package's bundles, parsed for resolution.
type resolvePackage struct {
	// bundles are in the order judge lists them with BundleReleaseSupport
	// off: higher version and release first, then catalog order.
	bundles []resolveBundle
	// releaseOrder indexes bundles in that order with BundleReleaseSupport
	// on; nil when it is the same order.
	releaseOrder []int
}

// ResolvePackage lists the bundles of req.Package in this catalog with the
// verdict of each rule on them. Resolution judges every bundle of the
// package, so it reads the package whole and keeps it parsed, within a
// budget (see resolveCache): a live file never changes. A package the
// catalog does not have is not kept, so asking for made-up names does not
// grow memory.
func (c *Catalog) ResolvePackage(ctx context.Context, req ResolveRequest) (PackageCandidates, error) {
	pkg := req.Package
	if p, ok := c.resolved.get(pkg); ok {
		return judge(req, p), nil
	}
	_, err := c.Package(ctx, pkg)
	if errors.Is(err, ErrNotFound) {
		var any bool
		if err := c.get(ctx, &any, `SELECT count(*) > 0 FROM (SELECT 1 FROM bundles WHERE package = ? LIMIT 1)`, pkg); err != nil {
			return PackageCandidates{}, fmt.Errorf("read bundles of package %q: %w", pkg, err)
		}
		if !any {
			return PackageCandidates{}, nil
		}
	} else if err != nil {
		return PackageCandidates{}, err
	}
	p, err := c.resolveBundles(ctx, pkg)
	if err != nil {
		return PackageCandidates{}, err
	}
	c.resolved.put(pkg, p)
	return judge(req, p), nil
}

// resolveBundles reads every bundle of a package with the entries that
// list it and its deprecation, in both orders judge lists them.
func (c *Catalog) resolveBundles(ctx context.Context, pkg string) (resolvePackage, error) {
	var bundleRows []struct {
		Name     string `db:"name"`
		Version  string `db:"version"`
		Release  string `db:"release"`
		Image    string `db:"image"`
		Channels string `db:"channels"`
	}
	// Blob order is catalog order, which breaks ties of version and
	// release as operator-controller's stable sort of the catalog's
	// bundles does.
	if err := c.sel(ctx, &bundleRows, `SELECT name, version, release, image, channels FROM bundles
		WHERE package = ? ORDER BY blob_id`, pkg); err != nil {
		return resolvePackage{}, fmt.Errorf("read bundles of package %q: %w", pkg, err)
	}
	entries, err := c.resolveEntries(ctx, pkg)
	if err != nil {
		return resolvePackage{}, err
	}
	deprecations, err := c.bundleDeprecations(ctx, pkg)
	if err != nil {
		return resolvePackage{}, err
	}
	emptyRelease, err := c.emptyReleases(ctx, pkg)
	if err != nil {
		return resolvePackage{}, err
	}
	dependencies, err := c.bundleDependencies(ctx, pkg)
	if err != nil {
		return resolvePackage{}, err
	}
	bundles := make([]resolveBundle, 0, len(bundleRows))
	for _, r := range bundleRows {
		channels := []string{}
		if err := json.Unmarshal([]byte(r.Channels), &channels); err != nil {
			return resolvePackage{}, fmt.Errorf("read channels of bundle %q: %w", r.Name, err)
		}
		b := resolveBundle{name: r.Name, version: r.Version, release: r.Release, image: r.Image,
			channels: channels, entries: entries[r.Name], deprecation: deprecations[r.Name], dependency: dependencies[r.Name]}
		b.vr, b.vrRelease = parseVersionRelease(r.Version, r.Release, r.Release != "" || emptyRelease[r.Name])
		if b.vr.valid {
			b.mm = b.vr.masterminds()
		}
		bundles = append(bundles, b)
	}
	return orderBundles(bundles), nil
}

// orderBundles sorts bundles given in catalog order by version and
// release, higher first, as each gate setting reads them, ties staying in
// catalog order.
func orderBundles(bundles []resolveBundle) resolvePackage {
	sorted := func(vr func(*resolveBundle) versionRelease) []int {
		order := make([]int, len(bundles))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int { return vr(&bundles[j]).compare(vr(&bundles[i])) })
		return order
	}
	legacy := sorted(func(b *resolveBundle) versionRelease { return b.vr })
	release := sorted(func(b *resolveBundle) versionRelease { return b.vrRelease })
	out := resolvePackage{bundles: make([]resolveBundle, len(bundles))}
	at := make([]int, len(bundles)) // where each bundle of the catalog order went
	for k, i := range legacy {
		out.bundles[k] = bundles[i]
		at[i] = k
	}
	if !slices.Equal(legacy, release) {
		out.releaseOrder = make([]int, len(bundles))
		for k, i := range release {
			out.releaseOrder[k] = at[i]
		}
	}
	return out
}

// dependencyProperties are the property types by which a bundle declares
// a dependency, which operator-controller refuses to install (its
// NoDependencyValidation).
var dependencyProperties = []string{property.TypePackageRequired, property.TypeGVKRequired, property.TypeConstraint}

// bundleDependencies gives the type of each bundle's first property that
// declares a dependency, by bundle name, in property order, as
// operator-controller names the first it finds.
func (c *Catalog) bundleDependencies(ctx context.Context, pkg string) (map[string]string, error) {
	var rows []struct {
		Name string `db:"name"`
		Type string `db:"type"`
	}
	if err := c.sel(ctx, &rows, `SELECT b.name, p.type FROM bundles b JOIN properties p ON p.bundle_id = b.id
		WHERE b.package = ? AND p.type IN (?, ?, ?) ORDER BY b.id, p.position`,
		pkg, dependencyProperties[0], dependencyProperties[1], dependencyProperties[2]); err != nil {
		return nil, fmt.Errorf("read dependency properties of package %q: %w", pkg, err)
	}
	out := map[string]string{}
	for _, r := range rows {
		if _, ok := out[r.Name]; !ok {
			out[r.Name] = r.Type
		}
	}
	return out, nil
}

// emptyReleases names the bundles of a package whose olm.package property
// has an explicit empty release and whose version has build metadata: the
// one case in which an empty release differs from none, as with
// BundleReleaseSupport on an explicit one, even empty, keeps the build
// metadata from being read as the release. The index keeps no release as
// "", so the property itself is read, for those bundles only.
func (c *Catalog) emptyReleases(ctx context.Context, pkg string) (map[string]bool, error) {
	var rows []struct {
		Name   string         `db:"name"`
		Value  sql.NullString `db:"value"`
		Offset sql.NullInt64  `db:"value_offset"`
		Length sql.NullInt64  `db:"value_length"`
	}
	if err := c.sel(ctx, &rows, `SELECT b.name, p.value, bl.offset + p.value_start AS value_offset, p.value_length
		FROM bundles b JOIN properties p ON p.bundle_id = b.id JOIN blobs bl ON bl.id = b.blob_id
		WHERE b.package = ? AND b.release = '' AND instr(b.version, '+') > 0 AND p.type = 'olm.package'
		ORDER BY b.id, p.position`, pkg); err != nil {
		return nil, fmt.Errorf("read olm.package properties of package %q: %w", pkg, err)
	}
	out := map[string]bool{}
	seen := map[string]bool{}
	for _, r := range rows {
		// The first olm.package property is the one read, as
		// operator-controller reads it.
		if seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		value := []byte(r.Value.String)
		if !r.Value.Valid {
			var err error
			if value, err = c.readContent(Range{Offset: r.Offset.Int64, Length: r.Length.Int64}); err != nil {
				return nil, fmt.Errorf("read olm.package property of bundle %q: %w", r.Name, err)
			}
		}
		var p struct {
			Release *string `json:"release"`
		}
		if err := json.Unmarshal(value, &p); err != nil {
			return nil, fmt.Errorf("read olm.package property of bundle %q: %w", r.Name, err)
		}
		out[r.Name] = p.Release != nil
	}
	return out, nil
}

// resolveEntries reads every channel entry of a package with its skips,
// by the bundle each lists.
func (c *Catalog) resolveEntries(ctx context.Context, pkg string) (map[string][]resolveEntry, error) {
	var rows []struct {
		ID        int64  `db:"id"`
		Channel   string `db:"channel"`
		Bundle    string `db:"bundle"`
		Replaces  string `db:"replaces"`
		SkipRange string `db:"skip_range"`
	}
	if err := c.sel(ctx, &rows, `SELECT id, channel, bundle, replaces, skip_range FROM channel_entries
		WHERE package = ? ORDER BY channel, position`, pkg); err != nil {
		return nil, fmt.Errorf("read channel entries of package %q: %w", pkg, err)
	}
	var skipRows []struct {
		EntryID int64  `db:"entry_id"`
		Skip    string `db:"skip"`
	}
	if err := c.sel(ctx, &skipRows, `SELECT entry_id, skip FROM channel_entry_skips WHERE package = ?`, pkg); err != nil {
		return nil, fmt.Errorf("read skips of package %q: %w", pkg, err)
	}
	skips := map[int64][]string{}
	for _, s := range skipRows {
		skips[s.EntryID] = append(skips[s.EntryID], s.Skip)
	}
	ranges := map[string]semver.Range{}
	out := map[string][]resolveEntry{}
	for _, r := range rows {
		e := resolveEntry{channel: r.Channel, replaces: r.Replaces, skips: skips[r.ID]}
		if r.SkipRange != "" {
			var ok bool
			if e.skipRange, ok = ranges[r.SkipRange]; !ok {
				e.skipRange, _ = semver.ParseRange(r.SkipRange)
				ranges[r.SkipRange] = e.skipRange
			}
		}
		out[r.Bundle] = append(out[r.Bundle], e)
	}
	return out, nil
}

// judge applies the rules to a package's bundles, in the order
// resolveBundles sorts them for the request's gate setting, which it only
// reads: they are shared by every request. The answer lists the candidates
// that are not deprecated, then the deprecated ones, then the rejected
// bundles, each group in the bundles' order, so it needs no sort of its own.
func judge(req ResolveRequest, p resolvePackage) PackageCandidates {
	considered := func(channel string) bool {
		return len(req.Channels) == 0 || slices.Contains(req.Channels, channel)
	}
	vrOf := func(b *resolveBundle) versionRelease { return b.vr }
	bundles := make([]*resolveBundle, len(p.bundles))
	for k := range p.bundles {
		bundles[k] = &p.bundles[k]
	}
	if req.BundleRelease {
		vrOf = func(b *resolveBundle) versionRelease { return b.vrRelease }
		for k, i := range p.releaseOrder {
			bundles[k] = &p.bundles[i]
		}
	}
	var installed *versionRelease
	var installedNames map[string]bool
	if req.Installed != nil {
		vr := req.installedVersionRelease()
		installed = &vr
		installedNames = map[string]bool{}
		if req.InstalledBundle != "" {
			installedNames[req.InstalledBundle] = true
		} else {
			// Only the version is known: every bundle of the installed
			// version and release counts as the one installed.
			for _, b := range bundles {
				if v := vrOf(b); v.valid && v.compare(vr) == 0 {
					installedNames[b.name] = true
				}
			}
		}
	}
	// Each candidate's reasons are slices of one array per request, as
	// allocating two small slices per bundle is most of judging's garbage.
	reasons := make([]Rejection, 0, 2*len(bundles))
	var successors []SuccessorRule
	if installed != nil {
		successors = make([]SuccessorRule, 0, len(bundles))
	}
	current := make([]ResolveCandidate, 0, len(bundles))
	var deprecated, rejected []ResolveCandidate
	for _, b := range bundles {
		cand := ResolveCandidate{Name: b.name, Version: b.version, Release: b.release, Image: b.image,
			Channels: b.channels, Deprecation: b.deprecation, Dependency: b.dependency}
		start := len(reasons)
		// Without channels asked, operator-controller does not filter by
		// channel, so a bundle no channel lists is a candidate too.
		if len(req.Channels) > 0 && !slices.ContainsFunc(b.channels, considered) {
			reasons = append(reasons, NotInChannel)
		}
		vr := vrOf(b)
		if req.VersionRange != nil && (b.mm == nil || !vr.valid || !req.VersionRange.Check(b.mm)) {
			reasons = append(reasons, OutsideVersionRange)
		}
		if installed != nil {
			first := len(successors)
			has := func(rule SuccessorRule) bool { return slices.Contains(successors[first:], rule) }
			isInstalled := vr.valid && vr.compare(*installed) == 0
			if isInstalled {
				successors = append(successors, SuccessorInstalled)
			}
			for _, e := range b.entries {
				if !considered(e.channel) {
					continue
				}
				if installedNames[e.replaces] && !has(SuccessorReplaces) {
					successors = append(successors, SuccessorReplaces)
				}
				if !has(SuccessorSkips) && slices.ContainsFunc(e.skips, func(s string) bool { return installedNames[s] }) {
					successors = append(successors, SuccessorSkips)
				}
				if e.skipRange != nil && !has(SuccessorSkipRange) && e.skipRange(*req.Installed) {
					successors = append(successors, SuccessorSkipRange)
				}
			}
			if len(successors) > first {
				cand.Successor = successors[first:len(successors):len(successors)]
			}
			if !req.SelfCertified && cand.Successor == nil {
				reasons = append(reasons, NotSuccessor)
			}
		}
		switch {
		case len(reasons) > start:
			cand.Rejections = reasons[start:len(reasons):len(reasons)]
			rejected = append(rejected, cand)
		case cand.Deprecation != "":
			deprecated = append(deprecated, cand)
		default:
			current = append(current, cand)
		}
	}
	out := PackageCandidates{Found: true, Candidates: append(append(current, deprecated...), rejected...),
		Accepted: len(current) + len(deprecated)}
	for i := range out.Accepted {
		cand := &out.Candidates[i]
		switch {
		case i == 0:
			cand.Ranking = Chosen
		case cand.Deprecation != "" && out.Candidates[0].Deprecation == "":
			cand.Ranking = RankedDeprecated
		default:
			cand.Ranking = RankedLowerVersion
		}
	}
	return out
}

// installedVersionRelease is the installed version and release, read as
// operator-controller's SuccessorsOf reads a ClusterExtension's status: a
// release recorded apart is the release, else the version's build metadata.
func (r ResolveRequest) installedVersionRelease() versionRelease {
	if r.InstalledRelease == nil {
		return legacyVersionRelease(*r.Installed)
	}
	_, vr := parseVersionRelease(r.Installed.String(), *r.InstalledRelease, true)
	return vr
}

// versionRelease is a bundle's version and release in the order
// resolution compares them: the semantic version, then the release. An
// invalid one (the version does not parse) ranks below every valid one.
type versionRelease struct {
	valid   bool
	version semver.Version
	release []semver.PRVersion
}

// parseVersionRelease reads a bundle's version and release as
// operator-controller's bundleutil.GetVersionAndRelease does with its
// BundleReleaseSupport gate off (legacy) and on (gated): off, the release
// is the version's build metadata when that parses as one; on, an explicit
// release, even empty, is the release, and the version keeps its build
// metadata. An explicit release that does not parse makes the gated
// reading invalid, as it makes upstream's an error.
func parseVersionRelease(version, release string, explicit bool) (legacy, gated versionRelease) {
	v, err := semver.Parse(version)
	if err != nil {
		return versionRelease{}, versionRelease{}
	}
	legacy = legacyVersionRelease(v)
	if !explicit {
		return legacy, legacy
	}
	gated = versionRelease{valid: true, version: v}
	if release != "" {
		if gated.release, err = parseRelease(release); err != nil {
			return legacy, versionRelease{}
		}
	}
	return legacy, gated
}

// legacyVersionRelease splits a version's build metadata off as its
// release when it parses as one.
func legacyVersionRelease(v semver.Version) versionRelease {
	if len(v.Build) == 0 {
		return versionRelease{valid: true, version: v}
	}
	rel, err := parseRelease(strings.Join(v.Build, "."))
	if err != nil {
		return versionRelease{valid: true, version: v}
	}
	v.Build = nil
	return versionRelease{valid: true, version: v, release: rel}
}

// maxReleaseLength is the longest release operator-registry's NewRelease
// accepts (the ClusterServiceVersion CRD's limit): build metadata longer
// than it is no release, and an explicit release longer than it is invalid.
const maxReleaseLength = 20

// parseRelease parses dot-separated release segments, each as a semver
// pre-release identifier (numbers without leading zeros, or alphanumerics).
func parseRelease(s string) ([]semver.PRVersion, error) {
	if len(s) > maxReleaseLength {
		return nil, fmt.Errorf("release %q is longer than %d characters", s, maxReleaseLength)
	}
	var out []semver.PRVersion
	for _, part := range strings.Split(s, ".") {
		pr, err := semver.NewPRVersion(part)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// compare orders by validity, then version (build metadata ignored, as
// semver says; bundles equal but for it tie), then release: no release is below any release, and
// releases compare segment by segment as pre-release identifiers do.
func (a versionRelease) compare(b versionRelease) int {
	switch {
	case !a.valid && !b.valid:
		return 0
	case !a.valid:
		return -1
	case !b.valid:
		return 1
	}
	if c := a.version.Compare(b.version); c != 0 {
		return c
	}
	return compareRelease(a.release, b.release)
}

func compareRelease(a, b []semver.PRVersion) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := a[i].Compare(b[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// masterminds is the version as Masterminds/semver reads it, release
// included as build metadata, for the requested range.
func (a versionRelease) masterminds() *mmsemver.Version {
	pre := make([]string, len(a.version.Pre))
	for i, p := range a.version.Pre {
		pre[i] = p.String()
	}
	build := strings.Join(a.version.Build, ".")
	if len(a.release) > 0 {
		rel := make([]string, len(a.release))
		for i, p := range a.release {
			rel[i] = p.String()
		}
		build = strings.Join(rel, ".")
	}
	return mmsemver.New(a.version.Major, a.version.Minor, a.version.Patch, strings.Join(pre, "."), build)
}

// CatalogCandidates is one catalog's candidates, with what choosing
// between catalogs needs to know of it.
type CatalogCandidates struct {
	Catalog  string
	Priority int32
	PackageCandidates
}

// CatalogOutcome says what became of a catalog's choice.
type CatalogOutcome string

// The outcomes of a catalog in a resolution.
const (
	// CatalogChosen: its choice is the answer.
	CatalogChosen CatalogOutcome = "Chosen"
	// CatalogPackageNotFound: it does not have the package.
	CatalogPackageNotFound CatalogOutcome = "PackageNotFound"
	// CatalogNoCandidate: it has the package, but no bundle passes the rules.
	CatalogNoCandidate CatalogOutcome = "NoCandidate"
	// CatalogDeprecated: its choice is deprecated, and another catalog
	// offers one that is not.
	CatalogDeprecated CatalogOutcome = "Deprecated"
	// CatalogLowerPriority: another catalog of higher priority offers one.
	CatalogLowerPriority CatalogOutcome = "LowerPriority"
	// CatalogSamePriority: it ties with another catalog for the answer,
	// which makes resolution fail.
	CatalogSamePriority CatalogOutcome = "SamePriority"
)

// CatalogResult is a catalog's candidates and what became of its choice.
type CatalogResult struct {
	CatalogCandidates
	Outcome CatalogOutcome
}

// Resolution is the answer across catalogs.
type Resolution struct {
	// Catalogs are the catalogs considered, in the order given to Choose.
	Catalogs []CatalogResult
	// Chosen indexes Catalogs: the catalog whose choice is the answer, -1
	// when there is none, and then Error says why.
	Chosen int
	// Error is operator-controller's message when resolution fails.
	Error string
	// Ambiguous says it failed because catalogs of the same priority tie.
	Ambiguous bool
	// Refused says it failed because the chosen bundle declares a
	// dependency (its Dependency): Chosen still indexes its catalog.
	Refused bool
}

// Bundle is the bundle to install and its catalog, or nil and "".
func (r Resolution) Bundle() (*ResolveCandidate, string) {
	if r.Refused {
		return nil, ""
	}
	return r.choice()
}

// RefusedBundle is the chosen bundle refused for its dependency, and its
// catalog, or nil and "".
func (r Resolution) RefusedBundle() (*ResolveCandidate, string) {
	if !r.Refused {
		return nil, ""
	}
	return r.choice()
}

func (r Resolution) choice() (*ResolveCandidate, string) {
	if r.Chosen < 0 {
		return nil, ""
	}
	c := r.Catalogs[r.Chosen]
	return c.Choice(), c.Catalog
}

// Choose picks the answer among the catalogs' choices: catalogs whose
// choice is not deprecated beat those whose choice is; among the rest the
// highest priority wins, and a tie at the top fails with the message
// operator-controller gives, naming every catalog still in the running.
func Choose(req ResolveRequest, offers []CatalogCandidates) Resolution {
	out := Resolution{Catalogs: make([]CatalogResult, len(offers)), Chosen: -1}
	anyCurrent := false
	for i, o := range offers {
		out.Catalogs[i] = CatalogResult{CatalogCandidates: o}
		if ch := o.Choice(); ch != nil && ch.Deprecation == "" {
			anyCurrent = true
		}
	}
	var running []int
	for i := range out.Catalogs {
		c := &out.Catalogs[i]
		switch ch := c.Choice(); {
		case !c.Found:
			c.Outcome = CatalogPackageNotFound
		case ch == nil:
			c.Outcome = CatalogNoCandidate
		case anyCurrent && ch.Deprecation != "":
			c.Outcome = CatalogDeprecated
		default:
			running = append(running, i)
		}
	}
	top := int32(0)
	for k, i := range running {
		if p := out.Catalogs[i].Priority; k == 0 || p > top {
			top = p
		}
	}
	var best []int
	for _, i := range running {
		if out.Catalogs[i].Priority == top {
			best = append(best, i)
		}
	}
	switch {
	case len(best) == 1:
		out.Chosen = best[0]
		for _, i := range running {
			out.Catalogs[i].Outcome = CatalogLowerPriority
		}
		out.Catalogs[best[0]].Outcome = CatalogChosen
		if ch := out.Catalogs[best[0]].Choice(); ch.Dependency != "" {
			out.Refused = true
			out.Error = fmt.Sprintf("validating bundle %q: bundle %q has a dependency declared via property %q which is currently not supported",
				ch.Name, ch.Name, ch.Dependency)
		}
		return out
	case len(best) > 1:
		// operator-controller names every catalog still in the running,
		// those of lower priority too.
		names := make([]string, 0, len(running))
		for _, i := range running {
			names = append(names, out.Catalogs[i].Catalog)
			out.Catalogs[i].Outcome = CatalogLowerPriority
		}
		for _, i := range best {
			out.Catalogs[i].Outcome = CatalogSamePriority
		}
		slices.Sort(names)
		out.Ambiguous = true
		out.Error = resolutionMessage(req, names)
		return out
	}
	out.Error = resolutionMessage(req, nil)
	return out
}

// resolutionMessage words a failed resolution as operator-controller does,
// so that what a user reads here is what the ClusterExtension would say.
func resolutionMessage(req ResolveRequest, tied []string) string {
	var sb strings.Builder
	if req.Installed != nil {
		fmt.Fprintf(&sb, "error upgrading from currently installed version %q: ", req.InstalledText)
	}
	if len(tied) > 1 {
		fmt.Fprintf(&sb, "found bundles for package %q ", req.Package)
	} else {
		fmt.Fprintf(&sb, "no bundles found for package %q ", req.Package)
	}
	if req.VersionRangeText != "" {
		fmt.Fprintf(&sb, "matching version %q ", req.VersionRangeText)
	}
	if len(req.Channels) > 0 {
		fmt.Fprintf(&sb, "in channels %v ", req.Channels)
	}
	if len(tied) > 1 {
		fmt.Fprintf(&sb, "in multiple catalogs with the same priority %v ", tied)
	}
	return strings.TrimSpace(sb.String())
}

// ResolveParamError says which part of a resolve request is malformed.
type ResolveParamError struct {
	// Param is the request field: "version", "installed",
	// "installedBundle" or "installedRelease".
	Param string
	Err   error
}

func (e *ResolveParamError) Error() string { return e.Err.Error() }
func (e *ResolveParamError) Unwrap() error { return e.Err }

// ResolveParams are a resolve request as written, before parsing.
type ResolveParams struct {
	Package  string
	Channels []string
	// Version is a version range (Masterminds constraints, as a
	// ClusterExtension's version field); "" is any version.
	Version string
	// Installed is the installed version (a semantic version, as
	// operator-controller records it); "" is none.
	Installed     string
	SelfCertified bool
	// InstalledBundle is the installed bundle's name, "" if unknown, and
	// InstalledRelease its release when recorded apart from the version
	// (nil if not); both need Installed, as a ClusterExtension's status
	// records them with it.
	InstalledBundle  string
	InstalledRelease *string
	// BundleRelease is operator-controller's BundleReleaseSupport gate.
	BundleRelease bool
}

// NewResolveRequest parses a resolve request's version range and installed
// version, so that a malformed one is refused before any catalog is read.
func NewResolveRequest(p ResolveParams) (ResolveRequest, error) {
	req := ResolveRequest{Package: p.Package, Channels: p.Channels, VersionRangeText: p.Version, InstalledText: p.Installed,
		SelfCertified: p.SelfCertified, InstalledBundle: p.InstalledBundle, InstalledRelease: p.InstalledRelease, BundleRelease: p.BundleRelease}
	if p.InstalledBundle != "" && p.Installed == "" {
		return req, &ResolveParamError{Param: "installedBundle", Err: fmt.Errorf("installed bundle %q needs the installed version too, "+
			"as a ClusterExtension's status records both", p.InstalledBundle)}
	}
	if p.InstalledRelease != nil {
		if p.Installed == "" {
			return req, &ResolveParamError{Param: "installedRelease", Err: fmt.Errorf("installed release %q needs the installed version too, "+
				"as a ClusterExtension's status records both", *p.InstalledRelease)}
		}
		if _, err := parseRelease(*p.InstalledRelease); err != nil && *p.InstalledRelease != "" {
			return req, &ResolveParamError{Param: "installedRelease", Err: fmt.Errorf("installed release %q is invalid: %w", *p.InstalledRelease, err)}
		}
	}
	if p.Version != "" {
		r, err := mmsemver.NewConstraint(p.Version)
		if err != nil {
			return req, &ResolveParamError{Param: "version", Err: fmt.Errorf("version range %q is invalid: %w", p.Version, err)}
		}
		req.VersionRange = r
	}
	if p.Installed != "" {
		v, err := semver.Parse(p.Installed)
		if err != nil {
			return req, &ResolveParamError{Param: "installed", Err: fmt.Errorf("installed version %q is not a semantic version: %w", p.Installed, err)}
		}
		req.Installed = &v
	}
	return req, nil
}
