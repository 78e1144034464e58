package fbcgen

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// Random streams, one per purpose, so that changing how one part is drawn
// doesn't reshuffle the others.
const (
	streamPlan = iota
	streamGraph
	streamText
	streamBundles
	streamIcon
	streamWide
	streamCRD
)

// requirement is an olm.gvk.required or olm.package.required that bundles of
// a package carry from bundle index `from` on: dependencies are added as an
// operator grows, not removed.
type requirement struct {
	from  int
	gvk   gvk
	pkg   string
	rng   string
	isPkg bool
}

// packageGen generates one package. It holds the package's versions, graph
// and text, never its bundles: those are built and written one at a time.
type packageGen struct {
	g    *generator
	plan *pkgPlan
	idx  int

	versions []version
	channels []declcfg.Channel
	defChan  string

	display, short, long string
	pkgDesc              string // the olm.package description
	org, provider        string
	category, capability string
	keywords             []string
	maintainers          []v1alpha1.Maintainer
	links                []v1alpha1.AppLink
	installModes         []v1alpha1.InstallMode
	minKube              string
	shared               []gvk
	apiBase              int
	kindIntro            []int // bundle index from which each of plan.kinds is served
	reqs                 []requirement
	extraImages          []string
	created              time.Time
	fillerKinds          []string
	yamlBuf              []byte
	// crds holds the olm.bundle.object value of each CRD made so far: a
	// kind's CRD is the same in every bundle that serves its version.
	crds map[gvk][]byte
}

func newPackageGen(g *generator, idx int) *packageGen {
	plan := &g.plans[idx]
	p := &packageGen{g: g, plan: plan, idx: idx}
	seed := g.opts.Seed

	// Graph: channel count first, since pre-releases need a candidate channel.
	gr := rngFor(seed, streamGraph, idx)
	n := plan.bundles
	most := min(g.opts.ChannelsPerPackage, 1+n/2)
	nch := most
	if gr.Float64() < 0.5 {
		nch = 1 + gr.IntN(most)
	}
	p.versions = makeVersions(gr, n, plan.startMajor, nch >= 2)
	for _, cp := range planChannels(gr, p.versions, nch) {
		p.channels = append(p.channels, declcfg.Channel{
			Schema:  declcfg.SchemaChannel,
			Name:    cp.name,
			Package: plan.name,
			Entries: channelEntries(gr, plan.name, p.versions, cp.members),
		})
	}
	p.defChan = "stable"
	if len(p.channels) > 1 && gr.Float64() < 0.3 {
		p.defChan = p.channels[1+gr.IntN(len(p.channels)-1)].Name
	}

	// Text and metadata shared by all bundles of the package, as in real
	// catalogs where most CSV fields change rarely between versions.
	tr := rngFor(seed, streamText, idx)
	words := strings.Split(plan.name, "-")
	p.display = title(words[0] + " " + words[1])
	if len(words) > 2 {
		if _, err := strconv.Atoi(words[2]); err != nil {
			p.display += " " + title(words[2])
		}
	}
	p.org = words[1] + "-" + pick(tr, []string{"labs", "systems", "project", "io", "works", "team"})
	p.provider = title(strings.ReplaceAll(p.org, "-", " "))
	p.category = pick(tr, categories)
	p.capability = pick(tr, capabilityLevels)
	p.short = fmt.Sprintf("%s %s %s.", p.display, pick(tr, verbs), pick(tr, objects))
	p.long = longDescription(tr, p.display, plan)
	p.pkgDesc = p.short + " " + sentence(tr, p.display)
	p.keywords = pickN(tr, keywordPool, 2+tr.IntN(4))
	for range 1 + tr.IntN(3) {
		first, last := pick(tr, firstNames), pick(tr, lastNames)
		p.maintainers = append(p.maintainers, v1alpha1.Maintainer{
			Name:  first + " " + last,
			Email: strings.ToLower(first) + "@" + p.org + ".example.io",
		})
	}
	p.links = []v1alpha1.AppLink{{Name: p.display + " documentation", URL: "https://docs." + p.org + ".example.io/" + plan.name}}
	if tr.IntN(2) == 0 {
		p.links = append(p.links, v1alpha1.AppLink{Name: "Source code", URL: "https://git.example.io/" + p.org + "/" + plan.name})
	}
	for _, t := range []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeSingleNamespace,
		v1alpha1.InstallModeTypeMultiNamespace, v1alpha1.InstallModeTypeAllNamespaces} {
		p.installModes = append(p.installModes, v1alpha1.InstallMode{Type: t, Supported: tr.IntN(3) > 0})
	}
	p.minKube = "1." + strconv.Itoa(20+tr.IntN(12)) + ".0"
	p.extraImages = []string{"kube-rbac-proxy", "agent", "webhook", "must-gather", "console-plugin"}[:tr.IntN(4)]
	p.created = time.Date(2020, 1, 6, 9, 0, 0, 0, time.UTC).Add(time.Duration(tr.IntN(700)) * 24 * time.Hour)
	p.fillerKinds = []string{"feature", "compat", "annotation", "support", "tier"}

	// APIs: two own kinds from the first version, more appear over the
	// package's life; about a third of the packages also serve some shared
	// GVKs.
	p.apiBase = tr.IntN(3)
	p.kindIntro = make([]int, len(plan.kinds))
	for k := 2; k < len(plan.kinds); k++ {
		p.kindIntro[k] = tr.IntN(n)
	}
	if tr.Float64() < 0.35 {
		p.shared = pickN(tr, sharedGVKs, 1+tr.IntN(2))
	}
	if len(g.plans) > 1 {
		seen := map[int]bool{idx: true}
		for range tr.IntN(3) {
			if o := tr.IntN(len(g.plans)); !seen[o] {
				seen[o] = true
				other := &g.plans[o]
				p.reqs = append(p.reqs, requirement{from: tr.IntN(n), gvk: gvk{other.group, "v1", other.kinds[0]}})
			}
		}
		if tr.Float64() < 0.2 {
			other := &g.plans[tr.IntN(len(g.plans))]
			if other != plan {
				p.reqs = append(p.reqs, requirement{
					from: tr.IntN(n), isPkg: true, pkg: other.name,
					rng: fmt.Sprintf(">=%d.0.0 <%d.0.0", other.startMajor, other.startMajor+2),
				})
			}
		}
		if s := pick(tr, sharedGVKs); tr.Float64() < 0.1 && !slices.Contains(p.shared, s) {
			p.reqs = append(p.reqs, requirement{from: tr.IntN(n), gvk: s})
		}
	}
	return p
}

func longDescription(r *rand.Rand, display string, plan *pkgPlan) string {
	var b strings.Builder
	b.WriteString("## About " + display + "\n\n")
	b.WriteString(paragraph(r, display, 3+r.IntN(4)))
	b.WriteString("\n\n## Features\n\n")
	perm := r.Perm(len(featureLines))
	for _, f := range perm[:3+r.IntN(4)] {
		b.WriteString("* " + featureLines[f] + "\n")
	}
	b.WriteString("\n## Custom resources\n\n")
	for _, k := range plan.kinds {
		b.WriteString("* `" + k + "`: " + sentence(r, display) + "\n")
	}
	b.WriteString("\n## Before you install\n\n")
	b.WriteString(paragraph(r, display, 2+r.IntN(3)))
	b.WriteString("\n")
	return b.String()
}

func paragraph(r *rand.Rand, display string, sentences int) string {
	s := make([]string, sentences)
	for i := range s {
		s[i] = sentence(r, display)
	}
	return strings.Join(s, " ")
}

// plural makes the resource name of a kind, as kubebuilder does for the
// common cases.
func plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "y"):
		return k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"):
		return k + "es"
	}
	return k + "s"
}

func (p *packageGen) write(ctx context.Context, enc *json.Encoder) error {
	st := p.g.stats
	pkg := declcfg.Package{
		Schema:         declcfg.SchemaPackage,
		Name:           p.plan.name,
		DefaultChannel: p.defChan,
		Description:    p.pkgDesc,
	}
	if p.g.opts.Icons {
		pkg.Icon = &declcfg.Icon{Data: makeIcon(rngFor(p.g.opts.Seed, streamIcon, p.idx)), MediaType: "image/svg+xml"}
		st.Icons++
	}
	if err := enc.Encode(pkg); err != nil {
		return err
	}
	st.Packages++
	for _, ch := range p.channels {
		if err := enc.Encode(ch); err != nil {
			return err
		}
		st.Channels++
		st.ChannelEntries += len(ch.Entries)
	}

	br := rngFor(p.g.opts.Seed, streamBundles, p.idx)
	for i := range p.versions {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := p.bundle(br, i)
		if err != nil {
			return err
		}
		if err := enc.Encode(b); err != nil {
			return err
		}
	}

	if d := p.deprecations(br); d != nil {
		if err := enc.Encode(d); err != nil {
			return err
		}
		st.Deprecations++
		st.DeprecationEntries += len(d.Entries)
	}
	return nil
}

// deprecations deprecates, in about one package in ten, its oldest bundle and
// the oldest per-minor channel if it has one; about one in fifty packages is
// deprecated as a whole.
func (p *packageGen) deprecations(r *rand.Rand) *declcfg.Deprecation {
	if len(p.versions) < 3 || r.Float64() >= 0.1 {
		return nil
	}
	d := &declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: p.plan.name}
	oldest := p.bundleName(0)
	d.Entries = append(d.Entries, declcfg.DeprecationEntry{
		Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: oldest},
		Message:   oldest + " is no longer supported. Upgrade to a newer version.",
	})
	if len(p.channels) > 3 {
		ch := p.channels[len(p.channels)-1].Name
		if ch != p.defChan {
			d.Entries = append(d.Entries, declcfg.DeprecationEntry{
				Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: ch},
				Message:   "The " + ch + " channel receives no more updates. Move to " + p.defChan + ".",
			})
		}
	}
	if r.Float64() < 0.2 {
		d.Entries = append(d.Entries, declcfg.DeprecationEntry{
			Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage},
			Message:   p.display + " has reached end of life.",
		})
	}
	return d
}

func (p *packageGen) bundleName(i int) string {
	return p.plan.name + ".v" + p.versions[i].String()
}

func hexDigest(r *rand.Rand) string {
	return fmt.Sprintf("sha256:%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
}

// apiVersion is the version a package serves its kinds at for a major
// version: APIs mature as the operator does.
func (p *packageGen) apiVersion(major int) string {
	levels := []string{"v1alpha1", "v1beta1", "v1", "v2"}
	return levels[min(len(levels)-1, p.apiBase+major-p.plan.startMajor)]
}

func (p *packageGen) bundle(r *rand.Rand, i int) (*declcfg.Bundle, error) {
	st := p.g.stats
	v := p.versions[i]
	name := p.bundleName(i)
	registry := "quay.example.io/" + p.org
	bundleImage := registry + "/" + p.plan.name + "-bundle@" + hexDigest(r)
	operatorImage := registry + "/" + p.plan.name + "@" + hexDigest(r)
	b := &declcfg.Bundle{
		Schema:  declcfg.SchemaBundle,
		Name:    name,
		Package: p.plan.name,
		Image:   bundleImage,
		RelatedImages: []declcfg.RelatedImage{
			{Name: "", Image: bundleImage},
			{Name: "manager", Image: operatorImage},
		},
	}
	for _, extra := range p.extraImages {
		b.RelatedImages = append(b.RelatedImages, declcfg.RelatedImage{Name: extra, Image: registry + "/" + extra + "@" + hexDigest(r)})
	}
	st.RelatedImages += len(b.RelatedImages)
	if v.pre != "" {
		st.PrereleaseBundles++
	}

	add := func(p any) error {
		prop, err := property.Build(p)
		if err != nil {
			return err
		}
		b.Properties = append(b.Properties, *prop)
		return nil
	}
	if err := add(&property.Package{PackageName: p.plan.name, Version: v.String()}); err != nil {
		return nil, err
	}

	// Own kinds served at this version; after a major bump the previous
	// API version stays served alongside the new one.
	var owned []gvk
	for k, kind := range p.plan.kinds {
		if p.kindIntro[k] > i {
			continue
		}
		owned = append(owned, gvk{p.plan.group, p.apiVersion(v.major), kind})
		if v.major > p.plan.startMajor && k == 0 {
			owned = append(owned, gvk{p.plan.group, p.apiVersion(v.major - 1), kind})
		}
	}
	provided := append(owned, p.shared...)
	if i >= len(p.versions)-p.plan.wide {
		provided = append(provided, gvk{WideGVK.Group, WideGVK.Version, WideGVK.Kind})
	}
	for _, g := range provided {
		if err := add(&property.GVK{Group: g.group, Version: g.version, Kind: g.kind}); err != nil {
			return nil, err
		}
		st.GVKs++
	}
	for _, req := range p.reqs {
		if req.from > i {
			continue
		}
		var err error
		if req.isPkg {
			err = add(&property.PackageRequired{PackageName: req.pkg, VersionRange: req.rng})
			st.RequiredPackages++
		} else {
			err = add(&property.GVKRequired{Group: req.gvk.group, Version: req.gvk.version, Kind: req.gvk.kind})
			st.RequiredGVKs++
		}
		if err != nil {
			return nil, err
		}
	}

	created := p.created.Add(time.Duration(i*(7+r.IntN(30))) * 24 * time.Hour)
	if err := add(p.csvMetadata(v, owned, operatorImage, created)); err != nil {
		return nil, err
	}
	st.CSVMetadata++

	if n := p.g.opts.BundleObjectBytes; n > 0 {
		doc := p.csvDocument(r, name, v, i, owned, operatorImage, n*3/4)
		data := make([]byte, 0, base64.StdEncoding.EncodedLen(len(doc))+12)
		data = append(data, `{"data":"`...)
		data = base64.StdEncoding.AppendEncode(data, doc)
		data = append(data, `"}`...)
		b.Properties = append(b.Properties, property.Property{Type: property.TypeBundleObject, Value: data})
		st.BundleObjects++
		st.BundleObjectBytes += int64(base64.StdEncoding.EncodedLen(len(doc)))
	}

	if n := p.g.opts.CRDObjectBytes; n > 0 {
		for _, g := range owned {
			data := p.crdObject(g, n)
			b.Properties = append(b.Properties, property.Property{Type: property.TypeBundleObject, Value: data})
			st.CRDObjects++
			st.CRDObjectBytes += int64(len(data) - len(`{"data":""}`))
		}
	}

	for k := 0; len(b.Properties) < p.g.opts.PropertiesPerBundle; k++ {
		b.Properties = append(b.Properties, p.filler(r, k))
		st.FillerProperties++
	}
	st.Properties += len(b.Properties)
	st.Bundles++
	return b, nil
}

// filler returns a property of a custom type. Real bundles carry such
// properties (constraints, platform compatibility, support tiers) that a
// server must store and return but doesn't interpret.
func (p *packageGen) filler(r *rand.Rand, k int) property.Property {
	kind := p.fillerKinds[k%len(p.fillerKinds)]
	var v string
	switch kind {
	case "feature":
		v = fmt.Sprintf(`{"name":"%s-%s","enabled":%t}`, pick(r, nameNouns), pick(r, keywordPool), r.IntN(2) == 0)
	case "compat":
		v = fmt.Sprintf(`{"platform":"kubernetes","minVersion":"1.%d","maxVersion":"1.%d"}`, 20+r.IntN(5), 28+r.IntN(6))
	case "annotation":
		v = fmt.Sprintf(`{"key":"example.io/%s","value":%q}`, pick(r, keywordPool), pick(r, featureLines))
	case "support":
		v = fmt.Sprintf(`{"contact":"support@%s.example.io","hours":"%s"}`, p.org, pick(r, []string{"24x7", "business", "community"}))
	default:
		v = fmt.Sprintf(`{"tier":%d,"name":"%s"}`, 1+r.IntN(3), pick(r, nameAdjectives))
	}
	return property.Property{Type: "fbcgen.example.io/" + kind, Value: json.RawMessage(v)}
}

func (p *packageGen) csvMetadata(v version, owned []gvk, image string, created time.Time) *property.CSVMetadata {
	maturity := "stable"
	switch {
	case v.pre != "":
		maturity = "alpha"
	case v.major == 0:
		maturity = "beta"
	}
	var examples []string
	var crds []v1alpha1.CRDDescription
	for _, g := range owned {
		examples = append(examples, fmt.Sprintf(`{"apiVersion":"%s/%s","kind":"%s","metadata":{"name":"example-%s"},"spec":{"replicas":%d}}`,
			g.group, g.version, g.kind, strings.ToLower(g.kind), 1+len(g.kind)%3))
		crds = append(crds, v1alpha1.CRDDescription{
			Name: plural(g.kind) + "." + g.group, Version: g.version, Kind: g.kind,
			DisplayName: g.kind, Description: g.kind + " resources are managed by " + p.display + ".",
		})
	}
	return &property.CSVMetadata{
		Annotations: map[string]string{
			"alm-examples":   "[" + strings.Join(examples, ",") + "]",
			"capabilities":   p.capability,
			"categories":     p.category,
			"certified":      "false",
			"containerImage": image,
			"createdAt":      created.Format(time.RFC3339),
			"description":    p.short,
			"operatorframework.io/suggested-namespace": p.plan.name,
			"operators.operatorframework.io/builder":   "operator-sdk-v1." + strconv.Itoa(30+v.minor%9) + ".0",
			"repository":                               "https://git.example.io/" + p.org + "/" + p.plan.name,
			"support":                                  p.provider,
		},
		CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: crds},
		Description:               p.long,
		DisplayName:               p.display,
		InstallModes:              p.installModes,
		Keywords:                  p.keywords,
		Links:                     p.links,
		Maintainers:               p.maintainers,
		Maturity:                  maturity,
		MinKubeVersion:            p.minKube,
		Provider:                  v1alpha1.AppLink{Name: p.provider, URL: "https://" + p.org + ".example.io"},
	}
}

// csvDocument returns a ClusterServiceVersion in YAML of about size bytes:
// the usual metadata, spec and deployment, RBAC rules until the size is
// nearly reached (permissions are what makes real CSVs long), then the long
// description, cut short if it doesn't fit. The fixed part is about 1.8 KB
// (2.4 KB of base64), so smaller sizes come out at that. All scalars are plain words, quoted
// empty strings or block literals, so the document is always valid YAML.
func (p *packageGen) csvDocument(r *rand.Rand, name string, v version, i int, owned []gvk, image string, size int) []byte {
	b := p.yamlBuf[:0]
	w := func(s ...string) {
		for _, x := range s {
			b = append(b, x...)
		}
	}
	w("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: ", name,
		"\n  annotations:\n    capabilities: ", p.capability, "\n    containerImage: ", image,
		"\n    categories: ", strings.ReplaceAll(p.category, "&", "and"), "\nspec:\n  displayName: ", p.display,
		"\n  version: ", v.String(), "\n")
	if i > 0 {
		w("  replaces: ", p.bundleName(i-1), "\n")
	}
	w("  maturity: stable\n  provider:\n    name: ", p.provider, "\n")
	w("  customresourcedefinitions:\n    owned:\n")
	for _, g := range owned {
		w("    - name: ", plural(g.kind), ".", g.group, "\n      version: ", g.version, "\n      kind: ", g.kind, "\n")
	}
	deploy := p.plan.name + "-controller-manager"
	w("  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: ", deploy,
		"\n        spec:\n          replicas: 1\n          selector:\n            matchLabels:\n              control-plane: ", deploy,
		"\n          template:\n            metadata:\n              labels:\n                control-plane: ", deploy,
		"\n            spec:\n              serviceAccountName: ", deploy,
		"\n              containers:\n              - name: manager\n                image: ", image,
		"\n                args:\n                - --leader-elect\n                - --metrics-bind-address=:8443\n",
		"      clusterPermissions:\n      - serviceAccountName: ", deploy, "\n        rules:\n")
	resources := []string{"pods", "services", "configmaps", "secrets", "events", "persistentvolumeclaims",
		"deployments", "statefulsets", "jobs", "leases", "serviceaccounts", "roles", "rolebindings"}
	groups := []string{"", "apps", "batch", "coordination.k8s.io", "rbac.authorization.k8s.io", "policy"}
	// The description goes last, after the rules, so that it can be cut
	// short when the requested size is small.
	lines := strings.Split(strings.TrimRight(p.long, "\n"), "\n")
	descLen := len("  description: |\n")
	for _, line := range lines {
		descLen += len(line) + 5
	}
	for k := 0; len(b)+descLen < size; k++ {
		var group, res string
		if len(owned) > 0 && k%3 == 0 {
			g := owned[r.IntN(len(owned))]
			group, res = g.group, plural(g.kind)
			if k%2 == 0 {
				res += "/status"
			}
		} else {
			group, res = pick(r, groups), pick(r, resources)
		}
		w("        - apiGroups:\n          - \"", group, "\"\n          resources:\n          - ", res, "\n          verbs:\n")
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"}[:3+r.IntN(5)] {
			w("          - ", verb, "\n")
		}
	}
	w("  description: |\n")
	for k, line := range lines {
		if k > 0 && len(b)+len(line)+5 > size {
			break
		}
		w("    ", line, "\n")
	}
	p.yamlBuf = b
	return b
}

// crdObject returns the olm.bundle.object value holding the CRD of g, with
// base64 data of about size bytes: an openAPIV3Schema whose spec has
// fields, some nested, each with a description, as generated CRDs have.
func (p *packageGen) crdObject(g gvk, size int) []byte {
	if v, ok := p.crds[g]; ok {
		return v
	}
	r := rngFor(p.g.opts.Seed, streamCRD, p.idx<<8|len(p.crds))
	type schema struct {
		Type        string             `json:"type"`
		Description string             `json:"description,omitempty"`
		Properties  map[string]*schema `json:"properties,omitempty"`
	}
	spec := &schema{Type: "object", Properties: map[string]*schema{}}
	// The fields are added a group at a time until the CRD's raw size,
	// estimated from the descriptions and names, reaches the size asked
	// for (base64 is 4/3 of the raw size).
	raw := 0
	for k := 0; raw < size*3/4; k++ {
		field := &schema{Type: pick(r, []string{"string", "integer", "boolean", "object"}), Description: paragraph(r, p.display, 1+r.IntN(3))}
		raw += len(field.Description) + 60
		if field.Type == "object" {
			field.Properties = map[string]*schema{}
			for j := range 2 + r.IntN(4) {
				sub := &schema{Type: pick(r, []string{"string", "integer", "boolean"}), Description: paragraph(r, p.display, 1)}
				field.Properties[pick(r, objects)+strconv.Itoa(j)] = sub
				raw += len(sub.Description) + 60
			}
		}
		spec.Properties[pick(r, objects)+strconv.Itoa(k)] = field
	}
	name := plural(g.kind) + "." + g.group
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"group": g.group,
			"names": map[string]any{"kind": g.kind, "listKind": g.kind + "List", "plural": plural(g.kind), "singular": strings.ToLower(g.kind)},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": g.version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": &schema{Type: "object", Properties: map[string]*schema{
					"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "metadata": {Type: "object"}, "spec": spec,
				}}},
			}},
		},
	}
	doc, err := json.Marshal(crd)
	if err != nil {
		panic(err) // maps of strings and schemas always encode
	}
	v := make([]byte, 0, base64.StdEncoding.EncodedLen(len(doc))+len(`{"data":""}`))
	v = append(v, `{"data":"`...)
	v = base64.StdEncoding.AppendEncode(v, doc)
	v = append(v, `"}`...)
	if p.crds == nil {
		p.crds = map[gvk][]byte{}
	}
	p.crds[g] = v
	return v
}
