package index

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"
	"k8s.io/apimachinery/pkg/util/validation"
)

// convertAndValidate converts a package to operator-registry's model and
// validates it, with the checks and reports of declcfg.ConvertToModel and
// model.Validate, in memory linear in the package: ConvertToModel ends in
// Model.Validate, whose replaces-chain check is quadratic (see
// validateModel). Only what validation reads of a bundle is converted.
func convertAndValidate(cfg declcfg.DeclarativeConfig) error {
	m := model.Model{}
	defaults := map[string]string{}
	for _, p := range cfg.Packages {
		if p.Name == "" {
			return errors.New("config contains package with no name")
		}
		if _, ok := m[p.Name]; ok {
			return fmt.Errorf("duplicate package %q", p.Name)
		}
		if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
			return fmt.Errorf("invalid package name %q: %v", p.Name, errs)
		}
		pkg := &model.Package{Name: p.Name, Description: p.Description, Channels: map[string]*model.Channel{}}
		if p.Icon != nil {
			pkg.Icon = &model.Icon{Data: p.Icon.Data, MediaType: p.Icon.MediaType}
		}
		m[p.Name] = pkg
		defaults[p.Name] = p.DefaultChannel
	}

	// unlisted holds, per package, the entries of its last channel that no
	// bundle has yet matched: operator-registry checks those alone.
	unlisted := map[string]map[string]bool{}
	for _, c := range cfg.Channels {
		pkg, ok := m[c.Package]
		switch {
		case !ok:
			return fmt.Errorf("unknown package %q for channel %q", c.Package, c.Name)
		case c.Name == "":
			return fmt.Errorf("package %q contains channel with no name", c.Package)
		case pkg.Channels[c.Name] != nil:
			return fmt.Errorf("package %q has duplicate channel %q", c.Package, c.Name)
		}
		ch := &model.Channel{Package: pkg, Name: c.Name, Bundles: map[string]*model.Bundle{}, Properties: c.Properties}
		entries := map[string]bool{}
		for _, e := range c.Entries {
			if ch.Bundles[e.Name] != nil {
				return fmt.Errorf("invalid package %q, channel %q: duplicate entry %q", c.Package, c.Name, e.Name)
			}
			entries[e.Name] = true
			ch.Bundles[e.Name] = &model.Bundle{Package: pkg, Channel: ch, Name: e.Name, Replaces: e.Replaces, Skips: e.Skips, SkipRange: e.SkipRange}
		}
		unlisted[c.Package] = entries
		pkg.Channels[c.Name] = ch
		if defaults[c.Package] == c.Name {
			pkg.DefaultChannel = ch
		}
	}

	bundleNames := map[string]map[string]bool{}
	for _, b := range cfg.Bundles {
		if b.Package == "" {
			return fmt.Errorf("package name must be set for bundle %q", b.Name)
		}
		pkg, ok := m[b.Package]
		if !ok {
			return fmt.Errorf("unknown package %q for bundle %q", b.Package, b.Name)
		}
		if bundleNames[b.Package] == nil {
			bundleNames[b.Package] = map[string]bool{}
		}
		if bundleNames[b.Package][b.Name] {
			return fmt.Errorf("package %q has duplicate bundle %q", b.Package, b.Name)
		}
		bundleNames[b.Package][b.Name] = true
		props, err := property.Parse(b.Properties)
		if err != nil {
			return fmt.Errorf("parse properties for bundle %q: %v", b.Name, err)
		}
		if len(props.Packages) != 1 {
			return fmt.Errorf("package %q bundle %q must have exactly 1 %q property, found %d", b.Package, b.Name, property.TypePackage, len(props.Packages))
		}
		if b.Package != props.Packages[0].PackageName {
			return fmt.Errorf("package %q does not match %q property %q", b.Package, property.TypePackage, props.Packages[0].PackageName)
		}
		if err := validPullSpec(b.Image, "package %q bundle %q image", b.Package, b.Name); err != nil {
			return err
		}
		for i, rel := range b.RelatedImages {
			if err := validPullSpec(rel.Image, "package %q bundle %q relatedImages[%d].image", b.Package, b.Name, i); err != nil {
				return err
			}
		}
		version, err := semver.Parse(props.Packages[0].Version)
		if err != nil {
			return fmt.Errorf("error parsing bundle %q version %q: %v", b.Name, props.Packages[0].Version, err)
		}
		delete(unlisted[b.Package], b.Name)
		found := false
		for _, ch := range pkg.Channels {
			if mb := ch.Bundles[b.Name]; mb != nil {
				found = true
				mb.Image, mb.Properties, mb.Objects, mb.PropertiesP, mb.Version = b.Image, b.Properties, b.Objects, props, version
			}
		}
		if !found {
			return fmt.Errorf("package %q, bundle %q not found in any channel entries", b.Package, b.Name)
		}
	}
	for pkg, entries := range unlisted {
		if len(entries) > 0 {
			return fmt.Errorf("no olm.bundle blobs found in package %q for olm.channel entries %s", pkg, slices.Sorted(maps.Keys(entries)))
		}
	}
	for _, pkg := range m {
		if name := defaults[pkg.Name]; name != "" && pkg.DefaultChannel == nil {
			ch := &model.Channel{Package: pkg, Name: name, Bundles: map[string]*model.Bundle{}}
			pkg.DefaultChannel = ch
			pkg.Channels[name] = ch
		}
	}
	if err := applyDeprecations(m, cfg.Deprecations, bundleNames); err != nil {
		return err
	}
	return validateModel(m)
}

// applyDeprecations checks olm.deprecations blobs and marks what they
// deprecate, as ConvertToModel does.
func applyDeprecations(m model.Model, deprecations []declcfg.Deprecation, bundleNames map[string]map[string]bool) error {
	seen := map[string]bool{}
	for i, d := range deprecations {
		if d.Package == "" {
			return fmt.Errorf("package name must be set for deprecation item %v", i)
		}
		pkg, ok := m[d.Package]
		if !ok {
			return fmt.Errorf("cannot apply deprecations to an unknown package %q", d.Package)
		}
		if seen[d.Package] {
			return fmt.Errorf("expected a maximum of one deprecation per package: %q", d.Package)
		}
		seen[d.Package] = true
		refs := map[declcfg.PackageScopedReference]bool{}
		for j, e := range d.Entries {
			if e.Reference.Schema == "" {
				// operator-registry's message gives package and index the
				// wrong way round, and so quotes the index as a rune.
				return fmt.Errorf("schema must be set for deprecation entry [%v] for package %s", d.Package, strconv.QuoteRune(rune(j)))
			}
			if refs[e.Reference] {
				return fmt.Errorf("duplicate deprecation entry %#v for package %q", e.Reference, d.Package)
			}
			refs[e.Reference] = true
			deprecation := &model.Deprecation{Message: e.Message}
			switch e.Reference.Schema {
			case declcfg.SchemaBundle:
				if !bundleNames[d.Package][e.Reference.Name] {
					return fmt.Errorf("cannot deprecate bundle %q for package %q: bundle not found", e.Reference.Name, d.Package)
				}
				for _, ch := range pkg.Channels {
					if b := ch.Bundles[e.Reference.Name]; b != nil {
						b.Deprecation = deprecation
					}
				}
			case declcfg.SchemaChannel:
				ch, ok := pkg.Channels[e.Reference.Name]
				if !ok {
					return fmt.Errorf("cannot deprecate channel %q for package %q: channel not found", e.Reference.Name, d.Package)
				}
				ch.Deprecation = deprecation
			case declcfg.SchemaPackage:
				if e.Reference.Name != "" {
					return fmt.Errorf("package name must be empty for deprecated package %q (specified %q)", d.Package, e.Reference.Name)
				}
				pkg.Deprecation = deprecation
			default:
				return fmt.Errorf("cannot deprecate object %#v referenced by entry %v for package %q: object schema unknown", e.Reference, j, d.Package)
			}
		}
	}
	return nil
}

// validateModel judges a model as operator-registry's Model.Validate does,
// with the same checks and the same report, in memory linear in the model.
// Model.Validate's replaces-chain check copies the chain walked so far for
// every bundle on it, so a channel of N bundles each replacing the last
// took O(N²) memory: 1.4 GiB for 10,000 bundles. Everything else is
// delegated to operator-registry where it is exported (Channel.Head,
// Bundle.Validate, Icon.Validate, Deprecation.Validate).
//
// The one difference: operator-registry lists a package's channels and a
// channel's bundles in map order, which varies from run to run; here they
// are in name order, so a package's problem reads the same in every build.
func validateModel(m model.Model) error {
	root := &problemTree{message: "invalid index"}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		pkg := m[name]
		if name != pkg.Name {
			root.add(fmt.Errorf("package key %q does not match package name %q", name, pkg.Name))
		}
		root.add(validatePackage(pkg))
	}
	return root.orNil()
}

func validatePackage(p *model.Package) error {
	t := &problemTree{message: fmt.Sprintf("invalid package %q", p.Name)}
	if p.Name == "" {
		t.add(errors.New("package name must not be empty"))
	}
	t.add(subtree(p.Icon.Validate()))
	if p.DefaultChannel == nil {
		t.add(errors.New("default channel must be set"))
	}
	if len(p.Channels) == 0 {
		t.add(errors.New("package must contain at least one channel"))
	}
	foundDefault := false
	for _, name := range slices.Sorted(maps.Keys(p.Channels)) {
		ch := p.Channels[name]
		if name != ch.Name {
			t.add(fmt.Errorf("channel key %q does not match channel name %q", name, ch.Name))
		}
		t.add(validateChannel(ch))
		if ch == p.DefaultChannel {
			foundDefault = true
		}
		if ch.Package != p {
			t.add(fmt.Errorf("channel %q not correctly linked to parent package", ch.Name))
		}
	}
	t.add(uniqueBundleVersions(p))
	if p.DefaultChannel != nil && !foundDefault {
		t.add(fmt.Errorf("default channel %q not found in channels list", p.DefaultChannel.Name))
	}
	if err := p.Deprecation.Validate(); err != nil {
		t.add(fmt.Errorf("invalid deprecation: %v", err))
	}
	return t.orNil()
}

func validateChannel(c *model.Channel) error {
	t := &problemTree{message: fmt.Sprintf("invalid channel %q", c.Name)}
	if c.Name == "" {
		t.add(errors.New("channel name must not be empty"))
	}
	if c.Package == nil {
		t.add(errors.New("package must be set"))
	}
	if len(c.Bundles) == 0 {
		t.add(errors.New("channel must contain at least one bundle"))
	} else {
		t.add(replacesChain(c))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Bundles)) {
		b := c.Bundles[name]
		if name != b.Name {
			t.add(fmt.Errorf("bundle key %q does not match bundle name %q", name, b.Name))
		}
		t.add(subtree(b.Validate()))
		if b.Channel != c {
			t.add(fmt.Errorf("bundle %q not correctly linked to parent channel", b.Name))
		}
	}
	if err := c.Deprecation.Validate(); err != nil {
		t.add(fmt.Errorf("invalid deprecation: %v", err))
	}
	return t.orNil()
}

// replacesChain checks a channel's replaces chain by operator-registry's
// rules: one head; from it, the chain of replaces reaches every entry that
// no entry skips; no cycles; the tail may replace an entry that does not
// exist; a replaces edge to a skipped entry ends the chain. A cycle is
// reported as the chain from the entry it returns to, back to that entry.
func replacesChain(c *model.Channel) error {
	head, err := c.Head()
	if err != nil {
		return err
	}
	skipped := map[string]bool{}
	for _, b := range c.Bundles {
		for _, s := range b.Skips {
			skipped[s] = true
		}
	}
	// chain holds the bundles walked, and position where each name (the
	// name replaced last included, which may be no bundle's) joined it.
	chain := []string{head.Name}
	position := map[string]int{head.Name: 0}
	for cur := head; cur != nil; {
		next := cur.Replaces
		if skipped[next] {
			break
		}
		if at, ok := position[next]; ok {
			return fmt.Errorf("detected cycle in replaces chain of upgrade graph: %s", strings.Join(append(chain[at:], next), " -> "))
		}
		position[next] = len(chain)
		if cur = c.Bundles[next]; cur != nil {
			chain = append(chain, cur.Name)
		}
	}
	var stranded []string
	for name := range c.Bundles {
		if _, ok := position[name]; !ok && !skipped[name] {
			stranded = append(stranded, name)
		}
	}
	if len(stranded) > 0 {
		slices.Sort(stranded)
		return fmt.Errorf("channel contains one or more stranded bundles: %s", strings.Join(stranded, ", "))
	}
	return nil
}

// uniqueBundleVersions reports versions that more than one bundle of the
// package has, in version order.
func uniqueBundleVersions(p *model.Package) error {
	versions := map[string]semver.Version{}
	names := map[string]map[string]bool{}
	for _, ch := range p.Channels {
		for _, b := range ch.Bundles {
			v := b.Version.String()
			versions[v] = b.Version
			if names[v] == nil {
				names[v] = map[string]bool{}
			}
			names[v][b.Name] = true
		}
	}
	sorted := slices.SortedFunc(maps.Values(versions), func(a, b semver.Version) int {
		return cmp.Or(a.Compare(b), strings.Compare(a.String(), b.String()))
	})
	var dups []error
	for _, v := range sorted {
		if bundles := names[v.String()]; len(bundles) > 1 {
			dups = append(dups, fmt.Errorf("{%s: [%s]}", v, strings.Join(slices.Sorted(maps.Keys(bundles)), ", ")))
		}
	}
	if len(dups) > 0 {
		return fmt.Errorf("duplicate versions found in bundles: %v", dups)
	}
	return nil
}

// problemTree is a validation report laid out as operator-registry lays out
// its own: a message, then each sub-problem on its own line under it,
// drawn as a tree.
type problemTree struct {
	message string
	subs    []error
}

// renderedTree is a report operator-registry built (by Bundle.Validate or
// Icon.Validate), whose text is placed as a subtree.
type renderedTree struct{ err error }

func (r renderedTree) Error() string { return r.err.Error() }

func subtree(err error) error {
	if err == nil {
		return nil
	}
	return renderedTree{err}
}

func (t *problemTree) add(err error) {
	if err != nil {
		t.subs = append(t.subs, err)
	}
}

func (t *problemTree) orNil() error {
	if len(t.subs) == 0 {
		return nil
	}
	return t
}

func (t *problemTree) Error() string {
	var b strings.Builder
	t.render(&b, "", "")
	return strings.TrimSpace(b.String())
}

// render writes the tree: its message after first, and each line below
// after rest followed by the branch drawn for it.
func (t *problemTree) render(b *strings.Builder, first, rest string) {
	b.WriteString(first + t.message)
	if len(t.subs) > 0 {
		b.WriteString(":")
	}
	b.WriteString("\n")
	for i, sub := range t.subs {
		branch, under := "├── ", "│   "
		if i == len(t.subs)-1 {
			branch, under = "└── ", "    "
		}
		var tree *problemTree
		var rendered renderedTree
		switch {
		case errors.As(sub, &tree):
			tree.render(b, rest+branch, rest+under)
		case errors.As(sub, &rendered):
			for j, line := range strings.Split(rendered.Error(), "\n") {
				if j == 0 {
					b.WriteString(rest + branch + line + "\n")
				} else {
					b.WriteString(rest + under + line + "\n")
				}
			}
		default:
			b.WriteString(rest + branch + sub.Error() + "\n")
		}
	}
}

// validPullSpec checks a non-empty image reference as operator-registry's
// conversion does (since v1.62), with the same message.
func validPullSpec(pullSpec, format string, args ...any) error {
	if pullSpec == "" {
		return nil
	}
	if _, err := reference.ParseNormalizedNamed(pullSpec); err != nil {
		return fmt.Errorf(format+": invalid image pull spec %q: %w", append(args, pullSpec, err)...)
	}
	return nil
}
