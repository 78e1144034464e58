package packageapi

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
	"github.com/catalogd/catalogd/internal/query"
)

// The labels every manifest carries, as packageserver sets them.
const (
	labelCatalog          = "catalog"
	labelCatalogNamespace = "catalog-namespace"
	labelProvider         = "provider"
	labelProviderURL      = "provider-url"
	osLabelPrefix         = "operatorframework.io/os."
	archLabelPrefix       = "operatorframework.io/arch."
	// A manifest whose head's CSV names no OS (architecture) is taken to
	// support linux (amd64), as OLM does.
	defaultOSLabel   = osLabelPrefix + "linux"
	defaultArchLabel = archLabelPrefix + "amd64"
	supported        = "supported"
)

// catalogMeta is what a manifest shows of its catalog.
type catalogMeta struct {
	Name   string
	Labels map[string]string
	// Created is when the catalog's live index was built: the age a
	// listing shows.
	Created time.Time
}

// toManifest converts a package as the index answers it into the
// PackageManifest packageserver would serve for it: channels by name, each
// with its head described as the head's ClusterServiceVersion describes
// it; a channel with no head, or whose head carries neither a CSV nor
// olm.csv.metadata, is left out, and a package left with no channel has no
// manifest (ok is false). Icons are left out: get and list never send
// them, the icon subresource does.
func toManifest(cat catalogMeta, d packageData) (m *pkgv1.PackageManifest, ok bool) {
	m = &pkgv1.PackageManifest{
		TypeMeta: metav1.TypeMeta{Kind: "PackageManifest", APIVersion: pkgv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{
			Name:              d.Package.Name,
			CreationTimestamp: metav1.NewTime(cat.Created.Truncate(time.Second)),
		},
		Status: pkgv1.PackageManifestStatus{
			CatalogSource:            cat.Name,
			CatalogSourceDisplayName: cat.Name,
			PackageName:              d.Package.Name,
			DefaultChannel:           d.Package.DefaultChannel,
			Deprecation:              deprecation(d.Summary.Deprecation),
		},
	}
	labels := maps.Clone(cat.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[labelCatalog] = cat.Name
	labels[labelCatalogNamespace] = ""

	bundleDeprecations := map[string]string{}
	for _, dep := range d.Deprecations {
		if dep.Schema == "olm.bundle" {
			bundleDeprecations[dep.Name] = dep.Message
		}
	}
	var (
		providerSet, defaultElided bool
		defaultCSV                 *csv
		// Channels often share their head: each head is described once
		// and its description shared, as the cache keeps every manifest
		// for as long as its package is unchanged.
		described = map[*query.BundleDetail]*csv{}
	)
	for _, ch := range d.Channels {
		var c *csv
		if ch.Head != nil {
			var seen bool
			if c, seen = described[ch.Head]; !seen {
				c = csvOf(*ch.Head, d.Package.Description)
				described[ch.Head] = c
			}
		}
		if c == nil {
			defaultElided = defaultElided || ch.Summary.Name == m.Status.DefaultChannel
			continue
		}
		if defaultCSV == nil || ch.Summary.Name == m.Status.DefaultChannel {
			defaultCSV = c
		}
		m.Status.Channels = append(m.Status.Channels, pkgv1.PackageChannel{
			Name:           ch.Summary.Name,
			CurrentCSV:     ch.Head.Name,
			CurrentCSVDesc: c.desc,
			Deprecation:    deprecation(ch.Summary.Deprecation),
			Entries:        entries(d, ch.Summary.Name, bundleDeprecations),
		})
		// The provider is the default channel's head's, or the first
		// channel's when the default has no head.
		if !providerSet || ch.Summary.Name == m.Status.DefaultChannel {
			m.Status.Provider = c.desc.Provider
			labels[labelProvider] = c.desc.Provider.Name
			labels[labelProviderURL] = c.desc.Provider.URL
			providerSet = true
		}
	}
	if len(m.Status.Channels) == 0 {
		return nil, false
	}
	if defaultElided {
		m.Status.DefaultChannel = m.Status.Channels[0].Name
	}
	maps.Copy(labels, defaultCSV.labels)
	setDefaultPlatformLabels(labels)
	m.Labels = labels
	return m, true
}

// entries lists the bundles of a channel highest version first (by the
// index's version rank, then name), each with its own deprecation.
func entries(d packageData, channel string, deprecations map[string]string) []pkgv1.ChannelEntry {
	var in []query.BundleSummary
	for _, b := range d.Bundles {
		if slices.Contains(b.Channels, channel) {
			in = append(in, b)
		}
	}
	slices.SortFunc(in, func(a, b query.BundleSummary) int {
		return cmp.Or(cmp.Compare(d.Ranks[b.Name], d.Ranks[a.Name]), strings.Compare(a.Name, b.Name))
	})
	out := make([]pkgv1.ChannelEntry, 0, len(in))
	for _, b := range in {
		out = append(out, pkgv1.ChannelEntry{Name: b.Name, Version: b.Version, Deprecation: deprecation(deprecations[b.Name])})
	}
	return out
}

func deprecation(msg string) *pkgv1.Deprecation {
	if msg == "" {
		return nil
	}
	return &pkgv1.Deprecation{Message: msg}
}

// setDefaultPlatformLabels marks a manifest whose labels name no OS
// (architecture) as supporting linux (amd64).
func setDefaultPlatformLabels(labels map[string]string) {
	hasOS, hasArch := false, false
	for k := range labels {
		hasOS = hasOS || strings.HasPrefix(k, osLabelPrefix)
		hasArch = hasArch || strings.HasPrefix(k, archLabelPrefix)
	}
	if !hasOS {
		labels[defaultOSLabel] = supported
	}
	if !hasArch {
		labels[defaultArchLabel] = supported
	}
}

// csv is what a manifest shows of a channel head's ClusterServiceVersion:
// its description and its labels (the default channel's head's labels are
// the manifest's).
type csv struct {
	desc   pkgv1.CSVDescription
	labels map[string]string
}

// csvFields are the fields of a CSV's spec, and of olm.csv.metadata, that a
// CSVDescription shows. Both spell them alike except the CRD and API
// service descriptions and native APIs, which csvSpec and csvMetadata add.
// Decoding into the trimmed description types drops what packageserver
// drops (descriptors, resources, deployment names).
type csvFields struct {
	DisplayName    string                    `json:"displayName"`
	Description    string                    `json:"description"`
	Keywords       []string                  `json:"keywords"`
	Links          []pkgv1.AppLink           `json:"links"`
	Maintainers    []pkgv1.Maintainer        `json:"maintainers"`
	Maturity       string                    `json:"maturity"`
	Provider       pkgv1.AppLink             `json:"provider"`
	InstallModes   []pkgv1.InstallMode       `json:"installModes"`
	MinKubeVersion string                    `json:"minKubeVersion"`
	NativeAPIs     []metav1.GroupVersionKind `json:"nativeAPIs"`
}

// csvMetadata is the value of an olm.csv.metadata property.
type csvMetadata struct {
	csvFields
	Annotations           map[string]string               `json:"annotations"`
	Labels                map[string]string               `json:"labels"`
	CRDDescriptions       pkgv1.CustomResourceDefinitions `json:"crdDescriptions"`
	APIServiceDefinitions pkgv1.APIServiceDefinitions     `json:"apiServiceDefinitions"`
}

// csvObject is a ClusterServiceVersion as an olm.bundle.object carries it.
type csvObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
		Labels      map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		csvFields
		CustomResourceDefinitions pkgv1.CustomResourceDefinitions `json:"customresourcedefinitions"`
		APIServiceDefinitions     pkgv1.APIServiceDefinitions     `json:"apiservicedefinitions"`
		RelatedImages             []struct {
			Image string `json:"image"`
		} `json:"relatedImages"`
		Install struct {
			Spec struct {
				Deployments []struct {
					Spec struct {
						Template struct {
							Spec struct {
								Containers     []struct{ Image string } `json:"containers"`
								InitContainers []struct{ Image string } `json:"initContainers"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				} `json:"deployments"`
			} `json:"spec"`
		} `json:"install"`
	} `json:"spec"`
}

// images are the images a CSV names: its related images and its
// deployments' containers, as packageserver lists them.
func (o csvObject) images() []string {
	var out []string
	for _, ri := range o.Spec.RelatedImages {
		out = append(out, ri.Image)
	}
	for _, d := range o.Spec.Install.Spec.Deployments {
		for _, c := range append(d.Spec.Template.Spec.Containers, d.Spec.Template.Spec.InitContainers...) {
			out = append(out, c.Image)
		}
	}
	return out
}

// csvOf describes a bundle as its CSV does: the CSV among its
// olm.bundle.object properties if it has one, as operator-registry's
// registry server prefers, otherwise its olm.csv.metadata, completed as
// that server completes it (the package's description when the metadata
// has none, the bundle's related images). nil when the bundle carries
// neither: packageserver leaves such a channel out.
func csvOf(b query.BundleDetail, pkgDescription string) *csv {
	var (
		out    *csv
		images []string
	)
	for _, p := range b.Properties {
		if p.Type != "olm.bundle.object" {
			continue
		}
		obj, ok := decodeCSVObject(p.Value)
		if !ok {
			continue
		}
		images = obj.images()
		out = &csv{desc: describe(obj.Spec.csvFields), labels: obj.Metadata.Labels}
		out.desc.Annotations = obj.Metadata.Annotations
		out.desc.CustomResourceDefinitions = obj.Spec.CustomResourceDefinitions
		out.desc.APIServiceDefinitions = obj.Spec.APIServiceDefinitions
		break
	}
	if out == nil {
		for _, p := range b.Properties {
			if p.Type != "olm.csv.metadata" {
				continue
			}
			var md csvMetadata
			if err := json.Unmarshal(p.Value, &md); err != nil {
				continue
			}
			if md.Description == "" {
				md.Description = pkgDescription
			}
			for _, ri := range b.RelatedImages {
				images = append(images, ri.Image)
			}
			out = &csv{desc: describe(md.csvFields), labels: md.Labels}
			out.desc.Annotations = md.Annotations
			out.desc.CustomResourceDefinitions = md.CRDDescriptions
			out.desc.APIServiceDefinitions = md.APIServiceDefinitions
			break
		}
	}
	if out == nil {
		return nil
	}
	out.desc.Version = b.Version
	images = slices.DeleteFunc(images, func(s string) bool { return s == "" })
	slices.Sort(images)
	if images = slices.Compact(images); len(images) > 0 {
		out.desc.RelatedImages = images
	}
	return out
}

func describe(f csvFields) pkgv1.CSVDescription {
	return pkgv1.CSVDescription{
		DisplayName:     f.DisplayName,
		Provider:        f.Provider,
		Keywords:        f.Keywords,
		Links:           f.Links,
		Maintainers:     f.Maintainers,
		Maturity:        f.Maturity,
		LongDescription: f.Description,
		InstallModes:    f.InstallModes,
		NativeAPIs:      f.NativeAPIs,
		MinKubeVersion:  f.MinKubeVersion,
	}
}

// decodeCSVObject decodes an olm.bundle.object value ({"data": base64 of a
// JSON or YAML object}) when the object is a ClusterServiceVersion.
func decodeCSVObject(value json.RawMessage) (csvObject, bool) {
	var prop struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(value, &prop); err != nil {
		return csvObject{}, false
	}
	raw, err := base64.StdEncoding.DecodeString(prop.Data)
	if err != nil {
		return csvObject{}, false
	}
	var obj csvObject
	if err := yaml.Unmarshal(raw, &obj); err != nil || obj.Kind != "ClusterServiceVersion" {
		return csvObject{}, false
	}
	return obj, true
}
