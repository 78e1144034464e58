package index

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/internal/fbc"
)

// Validation gives each package operator-registry's verdict: a package has
// problems exactly when declcfg.ConvertToModel (which ends in
// model.Validate) rejects that package's blobs. It does not call it:
// ConvertToModel stops at the first problem and reports it in its own
// terms, often an artefact of the model it builds (an entry without a
// bundle reads "must be exactly one property with type olm.package"), and
// model.Validate's replaces-chain check takes memory quadratic in a
// channel's length. Here every problem of a package is reported, each
// naming the blob, entry or property concerned and what to do, in memory
// linear in the package. TestVerdictsMatchOperatorRegistry and
// FuzzVerdicts check the verdicts against operator-registry's.
//
// What can be checked from a bundle alone is checked as the bundle is
// loaded (checkBundle), where its properties are at hand; the rest when its
// package is complete (validatePackage).

// bundleCheck is what loading a bundle found: its properties' values
// decoded (nil where one does not decode), the version and release of its
// olm.package property, and its problems.
type bundleCheck struct {
	values           []any
	version, release string
	problems         []string
	// spans are where its properties stand in its blob
	// (fbc.PropertySpans), found beside the check; nil when the scanner
	// declines the blob.
	spans []byte
}

// checkBundle checks a bundle as ConvertToModel and model.Bundle.Validate
// do, for what needs no other blob: that its properties decode, that it
// has one olm.package property of its own package with a semver version
// and a valid release, and valid image references.
func checkBundle(b *declcfg.Bundle) bundleCheck {
	c := bundleCheck{values: make([]any, len(b.Properties))}
	problem := func(format string, args ...any) {
		c.problems = append(c.problems, fmt.Sprintf("bundle %q: ", b.Name)+fmt.Sprintf(format, args...))
	}
	var pkgProps []property.Package
	objects := false
	for i, p := range b.Properties {
		v, err := decodeProperty(p)
		if err != nil {
			problem("properties[%d] (%s): the value %s: correct it or remove the property", i, p.Type, err)
			continue
		}
		c.values[i] = v
		switch v := v.(type) {
		case *property.Package:
			pkgProps = append(pkgProps, *v)
		case *property.BundleObject:
			objects = true
		}
	}
	if b.Image == "" && !objects {
		problem(`no image: set "image" to the bundle image's reference`)
	}
	if err := checkPullSpec(b.Image); err != nil {
		problem("image %q is not a valid image reference (%v): %s", b.Image, err, pullSpecHint)
	}
	for i, ri := range b.RelatedImages {
		if err := checkPullSpec(ri.Image); err != nil {
			problem("relatedImages[%d] image %q is not a valid image reference (%v): %s", i, ri.Image, err, pullSpecHint)
		}
	}
	switch len(pkgProps) {
	case 0:
		problem(`no olm.package property: add {"type":"olm.package","value":{"packageName":%q,"version":"X.Y.Z"}}`, b.Package)
		return c
	case 1:
	default:
		problem("%d olm.package properties: keep one", len(pkgProps))
	}
	pp := pkgProps[0]
	c.version, c.release = pp.Version, pp.Release
	if pp.PackageName != b.Package {
		problem(`its olm.package property names package %q, but the bundle is in package %q: make packageName and "package" agree`, pp.PackageName, b.Package)
	}
	version, versionErr := semver.Parse(pp.Version)
	if versionErr != nil {
		problem(`version %q of its olm.package property is not a semantic version (%v): write MAJOR.MINOR.PATCH, such as "1.2.3", without a "v"`, pp.Version, versionErr)
	}
	if pp.Release == "" {
		return c
	}
	release, err := model.NewRelease(pp.Release)
	if err != nil {
		problem("release %q of its olm.package property is not valid (%v): use dot-separated alphanumeric segments, numbers without leading zeros", pp.Release, err)
		return c
	}
	if versionErr != nil {
		return c
	}
	if len(version.Build) > 0 {
		problem("version %q has build metadata and a release: drop one of them", pp.Version)
	}
	mb := model.Bundle{Version: version, Release: semver.Version{Pre: release}}
	if want := b.Package + "-v" + mb.VersionString(); b.Name != want {
		problem("a bundle with a release must be named <package>-v<version>-<release>: rename it %q, in its channels too", want)
	}
	return c
}

// pullSpecHint says how to write an image reference.
const pullSpecHint = `write registry/repository:tag or registry/repository@sha256:digest, lowercase, without a transport prefix such as "oci://" or "docker://"`

// checkPullSpec checks a non-empty image reference as ConvertToModel does.
func checkPullSpec(pullSpec string) error {
	if pullSpec == "" {
		return nil
	}
	_, err := reference.ParseNormalizedNamed(pullSpec)
	return err
}

// decodeProperty decodes a property's value into the type operator-registry's
// property.Parse gives it, and fails where Parse fails.
func decodeProperty(p property.Property) (any, error) {
	var v any
	switch p.Type {
	case property.TypePackage:
		v = &property.Package{}
	case property.TypePackageRequired:
		v = &property.PackageRequired{}
	case property.TypeGVK:
		v = &property.GVK{}
	case property.TypeGVKRequired:
		v = &property.GVKRequired{}
	case property.TypeBundleObject:
		// Only the type of the value is read (checkBundle), so a value
		// the plain shape proves valid is not decoded: decoding is most
		// of the CPU and of the garbage of building a catalog whose
		// bundles carry megabytes of objects (BenchmarkBuildIncremental).
		if plainBundleObject(p.Value) {
			return &property.BundleObject{}, nil
		}
		v = &property.BundleObject{}
	case property.TypeCSVMetadata:
		// Only whether it decodes matters (nothing reads the value), and
		// the shape of its type tells that of a plain value without
		// decoding it (shape).
		if csvMetadataShape != nil && csvMetadataShape.fits(p.Value) {
			return &property.CSVMetadata{}, nil
		}
		v = &property.CSVMetadata{}
	case property.TypeChannel:
		v = &property.Channel{}
	default:
		// Parse takes any value of another type as it is. p.Value is a
		// piece of a blob fbc decoded, so it is valid JSON already, and
		// decoding it again into a json.RawMessage (a validating copy)
		// was a tenth of a build's validation.
		if len(p.Value) == 0 {
			return nil, fmt.Errorf("is missing")
		}
		return json.RawMessage(p.Value), nil
	}
	if len(p.Value) == 0 {
		return nil, fmt.Errorf("is missing")
	}
	if err := json.Unmarshal(p.Value, v); err != nil {
		return nil, fmt.Errorf("does not decode (%v)", fbc.InAuthorsWords(err))
	}
	return v, nil
}

// csvMetadataShape is the shape of property.CSVMetadata, nil should a
// version of the type have a field whose decoding shapeOf does not follow
// (then every value is decoded; TestCSVMetadataShape fails).
var csvMetadataShape = func() *shape {
	s, ok := shapeOf(reflect.TypeFor[property.CSVMetadata]())
	if !ok {
		return nil
	}
	return s
}()

// base64Chunk is how many characters of a bundle object's data
// plainBundleObject decodes at a time: a multiple of 4, base64's quantum.
const base64Chunk = 16 << 10

// plainBundleObject says whether value is {"data":"..."} with data in
// standard base64, without escapes, padding only at its end, and no line
// breaks: a value json.Unmarshal decodes into a property.BundleObject
// without error. It decodes the data a chunk at a time into a buffer it
// throws away. Any other value, valid or not, is left to json.Unmarshal,
// whose errors are the ones reported.
func plainBundleObject(value []byte) bool {
	data, ok := bytes.CutPrefix(value, []byte(`{"data":"`))
	if !ok {
		return false
	}
	if data, ok = bytes.CutSuffix(data, []byte(`"}`)); !ok {
		return false
	}
	// A quote or backslash would end the string or escape; base64 skips
	// line breaks, which a JSON string cannot hold raw.
	for _, c := range []byte{'"', '\\', '\r', '\n'} {
		if bytes.IndexByte(data, c) >= 0 {
			return false
		}
	}
	var buf [base64Chunk / 4 * 3]byte
	for len(data) > base64Chunk {
		// Padding before the last chunk ends the data early, which
		// decoding the whole string rejects and a chunk alone would not.
		if bytes.IndexByte(data[:base64Chunk], '=') >= 0 {
			return false
		}
		if _, err := base64.StdEncoding.Decode(buf[:], data[:base64Chunk]); err != nil {
			return false
		}
		data = data[base64Chunk:]
	}
	_, err := base64.StdEncoding.Decode(buf[:], data)
	return err == nil
}

// problem is a problem of a package: where the blob concerned starts (see
// fbc.Position), and what is wrong.
type problem struct{ pos, message string }

// problemList collects problems.
type problemList []problem

func (l *problemList) add(pos, format string, args ...any) {
	*l = append(*l, problem{pos, fmt.Sprintf(format, args...)})
}

// addAll adds messages found in the blob at pos.
func (l *problemList) addAll(pos string, messages []string) {
	for _, m := range messages {
		*l = append(*l, problem{pos, m})
	}
}

// validatePackage returns every problem of a package that checkBundle does
// not find, and the problems checkBundle found in its bundles, in the
// order: package, channels, bundles, deprecations. A problem of several
// blobs of one name is placed at the second; one of a blob that is missing,
// at the package's first blob.
func validatePackage(pkg *pkgData, heads []channelHead) []problem {
	var out problemList
	if pkg.name == "" {
		return unnamedBlobs(pkg)
	}

	// The olm.package blob.
	switch n := len(pkg.cfg.Packages); {
	case n == 0:
		out.add(pkg.first, `there is no olm.package blob named %q, which the "package" field of its channels, bundles or deprecations names: add one, or correct that field`, pkg.name)
	case n > 1:
		out.add(pkg.at.packages[1], "olm.package %q is defined %d times: keep one", pkg.name, n)
	}
	channels := map[string]int{}
	// second holds where the second channel of each name starts.
	second := map[string]string{}
	for i, c := range pkg.cfg.Channels {
		if channels[c.Name]++; channels[c.Name] == 2 {
			second[c.Name] = pkg.at.channels[i]
		}
	}
	channelList := quotedList(slices.Sorted(maps.Keys(channels)))
	if len(pkg.cfg.Packages) > 0 {
		at := pkg.at.packages[0]
		if errs := validation.IsDNS1123Label(pkg.name); len(errs) > 0 {
			out.add(at, "package name %q is not valid: %s: rename the package", pkg.name, strings.Join(errs, "; "))
		}
		switch def := pkg.cfg.Packages[0].DefaultChannel; {
		case def == "" && len(channels) > 0:
			out.add(at, "olm.package %q has no defaultChannel: set it to one of its channels (%s)", pkg.name, channelList)
		case def == "":
			out.add(at, "olm.package %q has no defaultChannel: add a channel and name it as the default", pkg.name)
		case len(channels) == 0:
			out.add(at, "defaultChannel %q is not a channel of the package, which has none: add an olm.channel named %q", def, def)
		case channels[def] == 0:
			out.add(at, "defaultChannel %q is not a channel of the package: set it to one of %s, or add an olm.channel named %q", def, channelList, def)
		}
	}

	// Channels.
	if len(pkg.cfg.Channels) == 0 {
		out.add(pkg.first, "the package has no olm.channel blob: add a channel that lists its bundles")
	}
	for _, name := range slices.Sorted(maps.Keys(channels)) {
		if n := channels[name]; n > 1 {
			out.add(second[name], "channel %q is defined %d times: merge its olm.channel blobs into one", name, n)
		}
	}
	bundles := pkg.bundleCounts()
	listed := map[string]bool{}
	for _, h := range heads {
		out.addAll(h.channel.pos, h.channel.problems(bundles))
		for _, e := range h.channel.Entries {
			listed[e.Name] = true
		}
		if problem := h.graphProblem(); problem != "" {
			out.add(h.channel.pos, "%s", problem)
		}
		if h.versionless {
			out.add(h.channel.pos, "channel %q: its head %q has no version, so the channel offers no head: give bundle %q an olm.package property with its version",
				h.channel.Name, h.heads[0], h.heads[0])
		}
	}

	// Bundles.
	// repeats holds where the second bundle of each name starts.
	repeats := map[string]string{}
	for _, b := range pkg.bundles {
		if _, ok := repeats[b.name]; b.repeat && !ok {
			repeats[b.name] = b.pos
		}
	}
	versions := map[string][]bundleRow{}
	for _, b := range pkg.bundles {
		if b.repeat {
			continue
		}
		if n := bundles[b.name]; n > 1 {
			out.add(repeats[b.name], "bundle %q is defined %d times: keep one", b.name, n)
		}
		if b.name == "" {
			out.add(b.pos, `an olm.bundle of the package has no name: set "name"`)
		}
		if !listed[b.name] {
			out.add(b.pos, "bundle %q is in no channel: add it to the entries of a channel, or remove it", b.name)
			continue
		}
		out.addAll(b.pos, b.problems)
		if v, ok := versionString(b); ok {
			versions[v] = append(versions[v], b)
		}
	}
	// Only shared versions are sorted: sorting them all parsed each
	// version at every comparison, a tenth of a build's time.
	var shared []string
	for v, same := range versions {
		if len(same) > 1 {
			shared = append(shared, v)
		}
	}
	slices.SortFunc(shared, compareVersions)
	for _, v := range shared {
		same := versions[v]
		names := make([]string, len(same))
		for i, b := range same {
			names[i] = b.name
		}
		slices.Sort(names)
		out.add(same[1].pos, "bundles %s have the same version %s: give each bundle of a package its own version", quotedList(names), v)
	}

	// Deprecations.
	return append(out, deprecationProblems(pkg, channels, bundles)...)
}

// versionString is the version operator-registry tells a package's bundles
// apart by (model.Bundle.VersionString): the version, and the release as a
// pre-release part. ok is false when either does not parse, which
// checkBundle reports.
func versionString(b bundleRow) (string, bool) {
	version, err := semver.Parse(b.version)
	if err != nil {
		return "", false
	}
	release, err := model.NewRelease(b.release)
	if err != nil {
		return "", false
	}
	mb := model.Bundle{Version: version, Release: semver.Version{Pre: release}}
	return mb.VersionString(), true
}

// compareVersions orders versions by semver, those that do not parse by
// their text, after the others.
func compareVersions(a, b string) int {
	va, errA := semver.Parse(a)
	vb, errB := semver.Parse(b)
	switch {
	case errA == nil && errB == nil:
		if c := va.Compare(vb); c != 0 {
			return c
		}
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// unnamedBlobs reports the blobs that name no package.
func unnamedBlobs(pkg *pkgData) []problem {
	var out problemList
	for _, at := range pkg.at.packages {
		out.add(at, `an olm.package blob has no name: set "name"`)
	}
	for i, c := range pkg.cfg.Channels {
		out.add(pkg.at.channels[i], `olm.channel %q has no "package": set it to the package the channel belongs to`, c.Name)
	}
	for _, b := range pkg.bundles {
		out.add(b.pos, `olm.bundle %q has no "package": set it to the package the bundle belongs to`, b.name)
	}
	for _, at := range pkg.at.deprecations {
		out.add(at, `an olm.deprecations blob has no "package": set it to the package it deprecates parts of`)
	}
	return out
}

// indexedChannel is a channel with its entries by name.
type indexedChannel struct {
	*declcfg.Channel
	// pos is where the channel's blob starts.
	pos string
	// byName holds the first entry of each name.
	byName map[string]*declcfg.ChannelEntry
}

func newIndexedChannel(c *declcfg.Channel, pos string) *indexedChannel {
	ic := &indexedChannel{Channel: c, pos: pos, byName: make(map[string]*declcfg.ChannelEntry, len(c.Entries))}
	for i := range c.Entries {
		if _, ok := ic.byName[c.Entries[i].Name]; !ok {
			ic.byName[c.Entries[i].Name] = &c.Entries[i]
		}
	}
	return ic
}

// problems returns the problems of a channel's entries, each on its own:
// repeats, entries without a bundle, empty skips, invalid skipRanges.
// bundles counts the package's bundles by name.
func (c *indexedChannel) problems(bundles map[string]int) []string {
	where := fmt.Sprintf("channel %q", c.Name)
	if c.Name == "" {
		return []string{`an olm.channel of the package has no name: set "name"`}
	}
	if len(c.Entries) == 0 {
		return []string{where + " has no entries: list the bundles it offers, or remove it"}
	}
	var out []string
	problem := func(format string, args ...any) { out = append(out, where+fmt.Sprintf(format, args...)) }
	count := map[string]int{}
	for _, e := range c.Entries {
		count[e.Name]++
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		if c.byName[e.Name] != e {
			continue
		}
		if n := count[e.Name]; n > 1 {
			problem(" lists entry %q %d times: keep one", e.Name, n)
		}
		switch {
		case e.Name == "":
			problem(` has an entry without a name: set its "name" to a bundle of the package`)
		case bundles[e.Name] == 0:
			problem(": entry %q has no olm.bundle blob: add a bundle named %q to the package, or remove the entry", e.Name, e.Name)
		}
		if slices.Contains(e.Skips, "") {
			problem(": entry %q has an empty name in skips: remove it", e.Name)
		}
		if e.SkipRange != "" {
			if _, err := semver.ParseRange(e.SkipRange); err != nil {
				problem(`: entry %q has skipRange %q, which is not a semver range (%v): write it like ">=1.0.0 <1.2.0", versions without a "v"`, e.Name, e.SkipRange, err)
			}
		}
	}
	return out
}

// channelHead is the head of an indexed channel (the first channel of its
// name), or why it has none that can be answered.
type channelHead struct {
	channel *indexedChannel
	// heads are the entries no other entry replaces or skips, by name.
	heads []string
	// head names the channel's head, a bundle of the package; it is ""
	// when problem says why there is none.
	head, problem string
	// versionless says the single head is a bundle without a version.
	versionless bool
}

// newChannelHead finds a channel's head as operator-registry's
// model.Channel.Head does: the one entry that no other entry replaces or
// skips (skipRange does not count). A head is only answered if it is a
// bundle of the package (bundles counts them by name) with a version:
// whoever installs a head needs the version to compare it with what is
// installed, and versionless names the bundles that have none.
func newChannelHead(c *indexedChannel, bundles map[string]int, versionless map[string]bool) channelHead {
	incoming := map[string]bool{}
	for _, e := range c.byName {
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			incoming[s] = true
		}
	}
	h := channelHead{channel: c}
	for name := range c.byName {
		if !incoming[name] {
			h.heads = append(h.heads, name)
		}
	}
	slices.Sort(h.heads)
	switch {
	case len(h.heads) == 0:
		h.problem = "no channel head: every entry is replaced or skipped by another"
	case len(h.heads) > 1:
		h.problem = "multiple channel heads: " + strings.Join(h.heads, ", ")
	case bundles[h.heads[0]] == 0:
		h.problem = fmt.Sprintf("the head entry %q has no olm.bundle blob", h.heads[0])
	case versionless[h.heads[0]]:
		h.versionless = true
		h.problem = fmt.Sprintf("the head entry %q is a bundle without a version (no olm.package property gives one)", h.heads[0])
	default:
		h.head = h.heads[0]
	}
	return h
}

// graphProblem checks a channel's replaces chain by operator-registry's
// rules (model.Channel.validateReplacesChain): one head; from it, the chain
// of replaces reaches every entry that no entry skips; no cycles; the tail
// may replace an entry that does not exist; a replaces edge to a skipped
// entry ends the chain. It returns "" for a valid chain. Unlike
// operator-registry, it holds the chain once, not once per entry on it.
func (h channelHead) graphProblem() string {
	c := h.channel
	where := fmt.Sprintf("channel %q", c.Name)
	switch {
	case c.Name == "" || len(c.byName) == 0:
		return "" // reported by problems
	case len(h.heads) == 0:
		return where + " has no head: every entry is replaced or skipped by another, so none is the newest: " +
			"break the cycle so that exactly one entry, the newest, is neither replaced nor skipped" + c.danglingNames("")
	case len(h.heads) > 1:
		return fmt.Sprintf("%s has %d heads, entries that no other entry replaces or skips: %s: a channel needs exactly one; make the newest replace or skip the others",
			where, len(h.heads), quotedList(h.heads)) + c.danglingNames("")
	}
	skipped := map[string]bool{}
	for _, e := range c.byName {
		for _, s := range e.Skips {
			skipped[s] = true
		}
	}
	// chain holds the entries walked, and position where each name (the
	// name replaced last included, which may be no entry's) joined it.
	chain := []string{h.heads[0]}
	position := map[string]int{h.heads[0]: 0}
	var end string
	cur := c.byName[h.heads[0]]
	for {
		next := cur.Replaces
		if skipped[next] {
			end = fmt.Sprintf("the chain stops at %q, whose replaces %q is skipped by an entry", cur.Name, next)
			break
		}
		if at, ok := position[next]; ok {
			return fmt.Sprintf("%s: the replaces chain from the head loops: %s: make the oldest entry replace nothing, or a bundle outside the channel",
				where, strings.Join(append(chain[at:], next), " -> "))
		}
		position[next] = len(chain)
		e := c.byName[next]
		if e == nil {
			end = fmt.Sprintf("the chain ends at %q, which replaces %q, not an entry of the channel%s", cur.Name, next, c.didYouMean(next, cur.Name))
			if next == "" {
				end = fmt.Sprintf("the chain ends at %q, which replaces nothing", cur.Name)
			}
			break
		}
		chain = append(chain, e.Name)
		cur = e
	}
	var stranded []string
	for name := range c.byName {
		if _, ok := position[name]; !ok && !skipped[name] {
			stranded = append(stranded, name)
		}
	}
	if len(stranded) == 0 {
		return ""
	}
	slices.Sort(stranded)
	return fmt.Sprintf("%s: entries %s cannot be reached from the head %q by following replaces, and no entry skips them (%s): link them into the replaces chain, skip them, or remove them",
		where, quotedList(stranded), h.heads[0], end) + c.danglingNames(cur.Name)
}

// maxDangling is how many names danglingNames explains: finding the entry
// one edit away costs a pass over the channel for each.
const maxDangling = 5

// danglingNames explains a broken replaces chain by the names its entries
// replace or skip that are no entry of the channel, or the entry itself,
// since such a name (often a typo) is what leaves a channel with several
// heads, none, or entries out of reach. Each is named with its entry and,
// when an entry of the channel is one edit away, that entry. Replacing a
// missing name is only how a chain ends, and skipping one is common (an
// older channel's bundle), so those are named only where they may be
// typos: a replaces by an entry other than except (the end of the chain,
// which the caller already explains), and a skip one edit from an entry.
// It returns "" when there is nothing to explain, else a clause starting
// with "; ".
func (c *indexedChannel) danglingNames(except string) string {
	var found []string
	full := false
	note := func(format string, args ...any) {
		found = append(found, fmt.Sprintf(format, args...))
		full = len(found) == maxDangling
	}
	for i := 0; i < len(c.Entries) && !full; i++ {
		e := &c.Entries[i]
		if c.byName[e.Name] != e {
			continue
		}
		switch r := e.Replaces; {
		case r == e.Name:
			note("entry %q replaces itself", e.Name)
		case r != "" && c.byName[r] == nil && e.Name != except:
			note("entry %q replaces %q, which is not an entry of the channel%s", e.Name, r, c.didYouMean(r, e.Name))
		}
		for _, s := range e.Skips {
			switch {
			case full:
			case s == e.Name:
				note("entry %q skips itself", e.Name)
			case s != "" && c.byName[s] == nil:
				if hint := c.didYouMean(s, e.Name); hint != "" {
					note("entry %q skips %q, which is not an entry of the channel%s", e.Name, s, hint)
				}
			}
		}
	}
	if len(found) == 0 {
		return ""
	}
	out := "; " + strings.Join(found, "; ")
	if full {
		out += fmt.Sprintf(" (the first %d such names)", maxDangling)
	}
	return out
}

// didYouMean returns ` (did you mean "x"?)` for the first entry x of the
// channel, other than self, one edit away from name, preferring an entry
// that no entry replaces or skips (the one a typo leaves without its
// link); "" when there is none.
func (c *indexedChannel) didYouMean(name, self string) string {
	var named map[string]bool
	best := ""
	for i := range c.Entries {
		n := c.Entries[i].Name
		if n == self || !oneEdit(name, n) {
			continue
		}
		if named == nil {
			named = c.linked()
		}
		if !named[n] {
			best = n
			break
		}
		if best == "" {
			best = n
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// linked returns the names the channel's entries replace or skip.
func (c *indexedChannel) linked() map[string]bool {
	out := map[string]bool{}
	for _, e := range c.byName {
		out[e.Replaces] = true
		for _, s := range e.Skips {
			out[s] = true
		}
	}
	return out
}

// oneEdit reports whether a and b differ by exactly one inserted, removed
// or replaced byte, other than a digit replaced by a digit: bundle names
// carry versions, and names one digit apart are most often two versions
// (a chain's tail replacing an older bundle), not a typo.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b)-len(a) > 1 || a == b {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if len(a) == len(b) {
		return a[i+1:] == b[i+1:] && !(isDigit(a[i]) && isDigit(b[i]))
	}
	return a[i:] == b[i+1:]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// deprecationProblems checks a package's olm.deprecations blobs as
// ConvertToModel does: one blob at most, and entries that reference the
// package, or a channel or bundle it has, each once, with a message.
func deprecationProblems(pkg *pkgData, channels, bundles map[string]int) []problem {
	var out problemList
	if n := len(pkg.cfg.Deprecations); n > 1 {
		out.add(pkg.at.deprecations[1], "the package has %d olm.deprecations blobs: merge them into one", n)
	}
	for i, d := range pkg.cfg.Deprecations {
		seen := map[declcfg.PackageScopedReference]bool{}
		for j, e := range d.Entries {
			where := fmt.Sprintf("olm.deprecations entries[%d]", j)
			problem := func(format string, args ...any) {
				out.add(pkg.at.deprecations[i], "%s", where+fmt.Sprintf(format, args...))
			}
			ref := e.Reference
			if ref.Schema == "" {
				problem(" has no reference schema: set reference.schema to olm.package, olm.channel or olm.bundle")
				continue
			}
			if seen[ref] {
				problem(" repeats the reference to %s %q: keep one", ref.Schema, ref.Name)
				continue
			}
			seen[ref] = true
			switch ref.Schema {
			case declcfg.SchemaBundle:
				if bundles[ref.Name] == 0 {
					problem(" deprecates bundle %q, which the package does not have: correct the name or remove the entry", ref.Name)
				}
			case declcfg.SchemaChannel:
				if channels[ref.Name] == 0 {
					problem(" deprecates channel %q, which the package does not have: correct the name or remove the entry", ref.Name)
				}
			case declcfg.SchemaPackage:
				if ref.Name != "" {
					problem(" deprecates the package but names %q: leave reference.name empty for olm.package", ref.Name)
				}
			default:
				problem(" references schema %q: only olm.package, olm.channel and olm.bundle can be deprecated", ref.Schema)
				continue
			}
			if e.Message == "" {
				problem(" (%s %q) has no message: say why it is deprecated and what to use instead", ref.Schema, ref.Name)
			}
		}
	}
	return out
}

// quotedList is names quoted and separated by commas.
func quotedList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(quoted, ", ")
}
