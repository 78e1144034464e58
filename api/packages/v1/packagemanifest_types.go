package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageManifest is one package of one catalog: its channels, the head
// of each with the description a console shows, and the catalog it comes
// from.
//
// +kubebuilder:object:root=true
type PackageManifest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageManifestSpec   `json:"spec,omitempty"`
	Status PackageManifestStatus `json:"status,omitempty"`
}

// PackageManifestList is a list of PackageManifests.
//
// +kubebuilder:object:root=true
type PackageManifestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// +listType=atomic
	Items []PackageManifest `json:"items"`
}

// PackageManifestSpec is empty: a package manifest only reports.
type PackageManifestSpec struct{}

// PackageManifestStatus is what the catalog says of the package.
type PackageManifestStatus struct {
	// CatalogSource names the catalog the package comes from (a
	// ClusterCatalog here, a CatalogSource in OLM v0).
	CatalogSource            string `json:"catalogSource"`
	CatalogSourceDisplayName string `json:"catalogSourceDisplayName"`
	CatalogSourcePublisher   string `json:"catalogSourcePublisher"`
	// CatalogSourceNamespace is the catalog's namespace; empty for a
	// ClusterCatalog, which has none.
	CatalogSourceNamespace string `json:"catalogSourceNamespace"`

	// Provider is the provider of the default channel's head.
	Provider AppLink `json:"provider,omitempty"`

	// PackageName is the package's name, as a Subscription names it.
	PackageName string `json:"packageName"`

	// Deprecation is set when the catalog deprecates the package.
	Deprecation *Deprecation `json:"deprecation,omitempty"`

	// Channels are the package's channels that have a head, by name.
	// +listType=atomic
	Channels []PackageChannel `json:"channels"`

	// DefaultChannel is the channel installed when none is named.
	DefaultChannel string `json:"defaultChannel"`
}

// Deprecation says that a package, channel or bundle is deprecated.
type Deprecation struct {
	// Message is the catalog's human-readable deprecation message.
	Message string `json:"message"`
}

// PackageChannel is a channel of a package with its head.
type PackageChannel struct {
	// Name of the channel, such as `stable`.
	Name string `json:"name"`

	// CurrentCSV is the channel's head: the bundle the channel installs.
	CurrentCSV string `json:"currentCSV"`

	// CurrentCSVDesc describes the head as its ClusterServiceVersion does.
	CurrentCSVDesc CSVDescription `json:"currentCSVDesc,omitempty"`

	// Deprecation is set when the catalog deprecates the channel.
	Deprecation *Deprecation `json:"deprecation,omitempty"`

	// Entries are the channel's bundles, highest version first.
	// +listType=atomic
	Entries []ChannelEntry `json:"entries"`
}

// ChannelEntry is a bundle of a channel.
type ChannelEntry struct {
	// Name of the bundle.
	Name string `json:"name"`
	// Version of the bundle.
	Version string `json:"version,omitempty"`
	// Deprecation is set when the catalog deprecates the bundle.
	Deprecation *Deprecation `json:"deprecation,omitempty"`
}

// CSVDescription is what a console shows of a ClusterServiceVersion.
type CSVDescription struct {
	DisplayName string `json:"displayName,omitempty"`
	// Icon is the CSV's icons, base64-encoded; get and list send none
	// (the icon subresource serves the image), as packageserver does.
	// +listType=atomic
	Icon []Icon `json:"icon,omitempty"`
	// Version is the CSV's semantic version.
	Version     string            `json:"version,omitempty"`
	Provider    AppLink           `json:"provider,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// +listType=atomic
	Keywords []string `json:"keywords,omitempty"`
	// +listType=atomic
	Links []AppLink `json:"links,omitempty"`
	// +listType=atomic
	Maintainers []Maintainer `json:"maintainers,omitempty"`
	Maturity    string       `json:"maturity,omitempty"`
	// LongDescription is the CSV's description (Markdown).
	LongDescription string `json:"description,omitempty"`
	// InstallModes are the operator group modes the operator supports.
	// +listType=atomic
	InstallModes []InstallMode `json:"installModes,omitempty"`

	CustomResourceDefinitions CustomResourceDefinitions `json:"customresourcedefinitions,omitempty"`
	APIServiceDefinitions     APIServiceDefinitions     `json:"apiservicedefinitions,omitempty"`
	// +listType=atomic
	NativeAPIs []metav1.GroupVersionKind `json:"nativeApis,omitempty"`

	// MinKubeVersion is the lowest Kubernetes version the operator needs.
	MinKubeVersion string `json:"minKubeVersion,omitempty"`
	// RelatedImages are the images the bundle names, sorted.
	// +listType=atomic
	RelatedImages []string `json:"relatedImages,omitempty"`
}

// AppLink is a named link.
type AppLink struct {
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Maintainer is a maintainer of the operator.
type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// Icon is an image, base64-encoded, with its media type.
type Icon struct {
	Base64Data string `json:"base64data,omitempty"`
	Mediatype  string `json:"mediatype,omitempty"`
}

// InstallMode says whether the operator supports an install mode
// (OwnNamespace, SingleNamespace, MultiNamespace, AllNamespaces).
type InstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// CustomResourceDefinitions are the CRDs the operator owns and requires.
type CustomResourceDefinitions struct {
	// +listType=atomic
	Owned []CRDDescription `json:"owned,omitempty"`
	// +listType=atomic
	Required []CRDDescription `json:"required,omitempty"`
}

// CRDDescription names a CRD and describes it; packageserver sends no
// more of a CSV's CRD description than this.
type CRDDescription struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Kind        string `json:"kind"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
}

// APIServiceDefinitions are the aggregated APIs the operator owns and
// requires.
type APIServiceDefinitions struct {
	// +listType=atomic
	Owned []APIServiceDescription `json:"owned,omitempty"`
	// +listType=atomic
	Required []APIServiceDescription `json:"required,omitempty"`
}

// APIServiceDescription names an aggregated API and describes it, trimmed
// as CRDDescription is.
type APIServiceDescription struct {
	Name        string `json:"name"`
	Group       string `json:"group"`
	Version     string `json:"version"`
	Kind        string `json:"kind"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
}
