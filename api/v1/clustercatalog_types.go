package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SourceType names the kind of source a catalog's content comes from.
// +enum
type SourceType string

// AvailabilityMode says whether a ClusterCatalog's content is offered to
// clients.
// +enum
type AvailabilityMode string

const (
	// SourceTypeImage: the catalog content is the file-based catalog inside
	// an OCI image.
	SourceTypeImage SourceType = "Image"

	// AvailabilityModeAvailable: unpack and serve the catalog (the default).
	AvailabilityModeAvailable AvailabilityMode = "Available"
	// AvailabilityModeUnavailable: keep the object but serve nothing, as if
	// the catalog did not exist.
	AvailabilityModeUnavailable AvailabilityMode = "Unavailable"
)

// Condition types set in status.conditions.
const (
	// TypeServing is True while the catalog content is served over HTTP.
	TypeServing = "Serving"
	// TypeProgressing is True while the catalog is moving (or ready to move)
	// towards its desired state, False when it is stuck until a user acts.
	TypeProgressing = "Progressing"
)

// Condition reasons.
const (
	// ReasonAvailable (Serving=True): content is being served.
	ReasonAvailable = "Available"
	// ReasonUnavailable (Serving=False): no content can be served yet.
	ReasonUnavailable = "Unavailable"
	// ReasonUserSpecifiedUnavailable (Serving=False): spec.availabilityMode
	// is Unavailable.
	ReasonUserSpecifiedUnavailable = "UserSpecifiedUnavailable"

	// ReasonSucceeded (Progressing=True): the last reconcile reached the
	// desired state.
	ReasonSucceeded = "Succeeded"
	// ReasonRetrying (Progressing=True): the last attempt failed with an
	// error that a later attempt may get past.
	ReasonRetrying = "Retrying"
	// ReasonBlocked (Progressing=False): an error that needs a change by the
	// user before anything can progress.
	ReasonBlocked = "Blocked"
)

const (
	// MetadataNameLabel is set on every ClusterCatalog to its own name, so
	// label selectors can pick catalogs by name.
	MetadataNameLabel = "olm.operatorframework.io/metadata.name"

	// DeleteServerCacheFinalizer holds a ClusterCatalog until the server has
	// dropped its unpacked content and index.
	DeleteServerCacheFinalizer = "olm.operatorframework.io/delete-server-cache"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=LastUnpacked,type=date,JSONPath=`.status.lastUnpacked`
// +kubebuilder:printcolumn:name=Serving,type=string,JSONPath=`.status.conditions[?(@.type=="Serving")].status`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterCatalog is a File-Based Catalog (FBC) that the cluster should make
// available: catalogd fetches it from its source, unpacks it and serves its
// content over HTTP at the URL given in status.urls.base.
type ClusterCatalog struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says where the catalog comes from and how it is offered.
	// +required
	Spec ClusterCatalogSpec `json:"spec"`

	// status reports whether the catalog is served, whether it is
	// progressing, which exact source was unpacked and where to fetch it.
	// +optional
	Status ClusterCatalogStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterCatalogList is a list of ClusterCatalogs.
type ClusterCatalogList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the ClusterCatalogs.
	// +required
	Items []ClusterCatalog `json:"items"`
}

// ClusterCatalogSpec is the desired state of a ClusterCatalog.
type ClusterCatalogSpec struct {
	// source says where the catalog content comes from. The content must be
	// in the File-Based Catalog format. For example:
	//
	//   source:
	//     type: Image
	//     image:
	//       ref: quay.io/operatorhubio/catalog:latest
	//
	// +required
	Source CatalogSource `json:"source"`

	// priority ranks this catalog against others when a client finds what it
	// needs in more than one: a higher number wins. It is only a tie-breaker
	// for clients; equal priorities are left to the client to resolve.
	// Negative values rank below the default of 0. Any 32-bit signed integer
	// is allowed.
	//
	// +kubebuilder:default:=0
	// +kubebuilder:validation:Minimum:=-2147483648
	// +kubebuilder:validation:Maximum:=2147483647
	// +optional
	Priority int32 `json:"priority"`

	// availabilityMode is Available (the default) to unpack and serve the
	// catalog, or Unavailable to stop serving it while keeping the object;
	// clients then treat the catalog as if it did not exist.
	//
	// +kubebuilder:validation:Enum:=Unavailable;Available
	// +kubebuilder:default:=Available
	// +optional
	AvailabilityMode AvailabilityMode `json:"availabilityMode,omitempty"`
}

// ClusterCatalogStatus is the observed state of a ClusterCatalog.
type ClusterCatalogStatus struct {
	// conditions are the latest observations of the catalog. Types:
	//
	// Serving: True with reason Available while content is served; False
	// with reason Unavailable when nothing can be served yet, or with reason
	// UserSpecifiedUnavailable when spec.availabilityMode is Unavailable.
	//
	// Progressing: True with reason Succeeded when the catalog reached its
	// desired state, True with reason Retrying after an error that a later
	// attempt may get past, False with reason Blocked after an error that
	// needs the user to change something.
	//
	// Both can hold at once: a catalog being updated keeps serving its
	// previous content (Serving=True) while it retries the new one
	// (Progressing=True, Retrying).
	//
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// resolvedSource is the exact source that was last unpacked, for an
	// image its digest reference.
	// +optional
	ResolvedSource *ResolvedCatalogSource `json:"resolvedSource,omitempty"`

	// urls are where the catalog content can be fetched.
	// +optional
	URLs *ClusterCatalogURLs `json:"urls,omitempty"`

	// lastUnpacked is when the content was last extracted from its source
	// (for an image: pulled and its layers written to the server's cache).
	// +optional
	LastUnpacked *metav1.Time `json:"lastUnpacked,omitempty"`
}

// ClusterCatalogURLs are the addresses of a served catalog.
type ClusterCatalogURLs struct {
	// base is the in-cluster URL under which the catalog's endpoints are
	// served; clients append an endpoint path, for example /api/v1/all for
	// the whole catalog in FBC form.
	//
	// +required
	// +kubebuilder:validation:MaxLength:=525
	// +kubebuilder:validation:XValidation:rule="isURL(self)",message="must be a valid URL"
	// +kubebuilder:validation:XValidation:rule="isURL(self) ? (url(self).getScheme() == 'http' || url(self).getScheme() == 'https') : true",message="scheme must be http or https"
	Base string `json:"base"`
}

// CatalogSource is a union of the places a catalog can come from; type says
// which member is set.
// +union
// +kubebuilder:validation:XValidation:rule="self.type == 'Image' ? has(self.image) : !has(self.image)",message="image is required when type is Image, and forbidden otherwise"
type CatalogSource struct {
	// type is the kind of source. The only value is Image: the content is
	// pulled from an OCI image, configured in the image field.
	//
	// +unionDiscriminator
	// +kubebuilder:validation:Enum:=Image
	// +required
	Type SourceType `json:"type"`

	// image configures an OCI image source. Required when type is Image,
	// forbidden otherwise.
	// +optional
	Image *ImageSource `json:"image,omitempty"`
}

// ImageSource is an OCI image that holds a File-Based Catalog.
//
// A digest reference never changes, so polling it is pointless and
// pollIntervalMinutes is rejected with one.
// +kubebuilder:validation:XValidation:rule="self.ref.contains('@') ? !has(self.pollIntervalMinutes) : true",message="cannot specify pollIntervalMinutes while using digest-based image"
type ImageSource struct {
	// ref is the image reference, at most 1000 characters:
	// registry/repository followed by a tag (":tag") or a digest
	// ("@algorithm:hex"); one of the two is required.
	//
	// The registry is a host name (alphanumeric labels, which may contain
	// "-" but not start or end with it, joined by "."), optionally with
	// ":port". The repository is one or more "/"-separated components of
	// lowercase letters and digits, joined inside a component by ".", "_",
	// "__" or "-". A tag starts with a letter, digit or "_", goes on with
	// letters, digits, "_", "." or "-", and is at most 127 characters. A
	// digest's algorithm starts with a letter and may contain letters,
	// digits and the separators "-", "_", "+", "."; its encoded part is at
	// least 32 hex digits.
	//
	// Examples: quay.io/operatorhubio/catalog:latest,
	// quay.io/operatorhubio/catalog@sha256:200d4ddb2a73594b91358fe6397424e975205bfbe44614f5846033cad64b3f05
	//
	// +required
	// +kubebuilder:validation:MaxLength:=1000
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?([.][a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?/')",message="must start with a valid registry domain, optionally with a port, followed by '/'"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^/]+(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)+([:@]|$)')",message="a valid repository name is required: '/'-separated components of lowercase letters and digits, joined only by '.', '_', '__' or '-'"
	// +kubebuilder:validation:XValidation:rule="self.matches('[:@][^/]*$')",message="must end with a digest or a tag"
	// +kubebuilder:validation:XValidation:rule="self.contains('@') || !self.matches(':[^/]*$') || self.matches(':[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,126}$')",message="tag is invalid: it must start with a letter, digit or '_', contain only letters, digits, '_', '.' or '-', and be at most 127 characters"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') || self.matches('@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}$')",message="digest is invalid: it must be '@algorithm:hex', with an algorithm starting with a letter and at least 32 hex digits"
	Ref string `json:"ref"`

	// pollIntervalMinutes is how often, in minutes, to check the tag for new
	// content. When omitted the image is not polled. Not allowed with a
	// digest reference.
	// +kubebuilder:validation:Minimum:=1
	// +optional
	PollIntervalMinutes *int `json:"pollIntervalMinutes,omitempty"`
}

// ResolvedCatalogSource is a union describing the exact source that was
// unpacked; type says which member is set.
// +union
// +kubebuilder:validation:XValidation:rule="self.type == 'Image' ? has(self.image) : !has(self.image)",message="image is required when type is Image, and forbidden otherwise"
type ResolvedCatalogSource struct {
	// type is the kind of source; the only value is Image.
	//
	// +unionDiscriminator
	// +kubebuilder:validation:Enum:=Image
	// +required
	Type SourceType `json:"type"`

	// image is the resolved image, set when type is Image.
	Image *ResolvedImageSource `json:"image"`
}

// ResolvedImageSource is the image a catalog was unpacked from, pinned by
// digest.
type ResolvedImageSource struct {
	// ref is the digest reference of the unpacked image
	// (registry/repository@algorithm:hex), usable by other tools to fetch
	// exactly the manifests the catalog came from.
	//
	// +required
	// +kubebuilder:validation:MaxLength:=1000
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?([.][a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?/')",message="must start with a valid registry domain, optionally with a port, followed by '/'"
	// +kubebuilder:validation:XValidation:rule="self.matches('@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}$')",message="must end with a valid digest: '@algorithm:hex', with an algorithm starting with a letter and at least 32 hex digits"
	Ref string `json:"ref"`
}
