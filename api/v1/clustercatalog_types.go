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
	// an OCI image, or the layers of an OCI artifact.
	SourceTypeImage SourceType = "Image"
	// SourceTypeGit: the catalog content is a directory of a git
	// repository at a branch, a tag or a commit.
	SourceTypeGit SourceType = "Git"
	// SourceTypeHTTP: the catalog content is an archive (.tar, .tar.gz,
	// .tgz) of a catalog directory, or one FBC file, at an http(s) URL.
	SourceTypeHTTP SourceType = "HTTP"

	// AvailabilityModeAvailable: unpack and serve the catalog (the default).
	AvailabilityModeAvailable AvailabilityMode = "Available"
	// AvailabilityModeUnavailable: keep the object but serve nothing, as if
	// the catalog did not exist.
	AvailabilityModeUnavailable AvailabilityMode = "Unavailable"
)

// ImageForm says what an image reference was found to hold.
// +enum
type ImageForm string

const (
	// ImageFormImage: a container image whose config label names the
	// catalog's directory.
	ImageFormImage ImageForm = "Image"
	// ImageFormArtifact: an OCI artifact whose layers are the catalog, as
	// `oras push` writes a directory or files.
	ImageFormArtifact ImageForm = "Artifact"
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
// +kubebuilder:validation:XValidation:rule="self.type == 'Git' ? has(self.git) : !has(self.git)",message="git is required when type is Git, and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="self.type == 'HTTP' ? has(self.http) : !has(self.http)",message="http is required when type is HTTP, and forbidden otherwise"
type CatalogSource struct {
	// type is the kind of source: Image (an OCI image or artifact,
	// configured in the image field), Git (a directory of a git repository,
	// in the git field) or HTTP (an archive or a file at a URL, in the http
	// field).
	//
	// +unionDiscriminator
	// +kubebuilder:validation:Enum:=Image;Git;HTTP
	// +required
	Type SourceType `json:"type"`

	// image configures an OCI image source. Required when type is Image,
	// forbidden otherwise.
	// +optional
	Image *ImageSource `json:"image,omitempty"`

	// git configures a git repository source. Required when type is Git,
	// forbidden otherwise.
	// +optional
	Git *GitSource `json:"git,omitempty"`

	// http configures an HTTP source. Required when type is HTTP, forbidden
	// otherwise.
	// +optional
	HTTP *HTTPSource `json:"http,omitempty"`
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

// GitSource is a directory of a git repository that holds a File-Based
// Catalog. catalogd fetches one commit shallowly (no history, no
// submodules, no LFS); the catalog's digest is the git tree hash of
// directory, so a commit that changes only other paths changes nothing
// served.
//
// A commit never changes, so polling it is pointless and
// pollIntervalMinutes is rejected with one.
// +kubebuilder:validation:XValidation:rule="has(self.ref.commit) ? !has(self.pollIntervalMinutes) : true",message="cannot specify pollIntervalMinutes with ref.commit: a commit never changes"
type GitSource struct {
	// url is the repository: https://host/path, ssh://[user@]host[:port]/path
	// or the scp-like user@host:path, without credentials (they belong in
	// secretRef), a query or a fragment. http:// and file:// are refused.
	//
	// Examples: https://github.com/org/catalogs.git, git@github.com:org/catalogs.git
	//
	// +required
	// +kubebuilder:validation:MaxLength:=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('ssh://') || self.matches('^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]')",message="must be an https:// or ssh:// URL, or user@host:path (http:// and file:// are not allowed)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https://[^/]*@') && !self.matches('^ssh://[^/@]*:[^/@]*@')",message="must not hold credentials: name a Secret in secretRef"
	// +kubebuilder:validation:XValidation:rule="self.matches('^(https://[^/@?# ]+|ssh://([^/@:?# ]+@)?[^/@?# ]+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/?# ]+)(/[^/?# ]+)*/?$')",message="must name a repository path, without a query, a fragment, spaces or empty segments ('//'); the catalog's path inside the repository goes in directory"
	URL string `json:"url"`

	// ref is what to fetch: exactly one of branch, tag or commit.
	// +required
	Ref GitRef `json:"ref"`

	// directory is the catalog's path inside the repository, relative to
	// its root, without "..". Empty (the default) is the root.
	//
	// +kubebuilder:validation:MaxLength:=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="must be a path relative to the repository's root, without '..'"
	// +optional
	Directory string `json:"directory,omitempty"`

	// pollIntervalMinutes is how often, in minutes, to ask the repository
	// whether the branch or tag moved (one ls-remote request). When omitted
	// the repository is not polled. Not allowed with ref.commit.
	// +kubebuilder:validation:Minimum:=1
	// +optional
	PollIntervalMinutes *int `json:"pollIntervalMinutes,omitempty"`

	// secretRef names a Secret in catalogd's own namespace with the
	// credentials: username and password, or bearerToken, for https;
	// identity (a private key) and known_hosts for ssh, whose host keys are
	// always checked.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// GitRef names what to fetch from a repository.
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.commit)].filter(x, x).size() == 1",message="exactly one of branch, tag or commit is required"
type GitRef struct {
	// branch is a branch name, as in main or release/v1; its newest commit
	// is served and followed.
	// +kubebuilder:validation:MaxLength:=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9_./+-]*$') && !self.contains('..') && !self.contains('//') && !self.endsWith('/') && !self.endsWith('.lock')",message="must be a branch name: letters, digits, '_', '.', '/', '+' and '-', not starting with '.', '/', '+' or '-', without '..' or '//'"
	// +optional
	Branch string `json:"branch,omitempty"`

	// tag is a tag name, as in v1.2.0; the commit it points to is served,
	// and followed if the tag is moved.
	// +kubebuilder:validation:MaxLength:=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9_./+-]*$') && !self.contains('..') && !self.contains('//') && !self.endsWith('/') && !self.endsWith('.lock')",message="must be a tag name: letters, digits, '_', '.', '/', '+' and '-', not starting with '.', '/', '+' or '-', without '..' or '//'"
	// +optional
	Tag string `json:"tag,omitempty"`

	// commit is a full commit hash, 40 lower-case hex digits.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{40}$')",message="must be a full commit hash: 40 lower-case hex digits"
	// +optional
	Commit string `json:"commit,omitempty"`
}

// HTTPSource is a File-Based Catalog at an http(s) URL: a .tar, .tar.gz or
// .tgz archive of a catalog directory, or one .json or .yaml FBC file.
// Polls ask with If-None-Match and If-Modified-Since, so an unchanged
// archive is not downloaded again.
//
// Bytes pinned by sha256 never change, so polling them is pointless and
// pollIntervalMinutes is rejected with sha256.
// +kubebuilder:validation:XValidation:rule="has(self.sha256) ? !has(self.pollIntervalMinutes) : true",message="cannot specify pollIntervalMinutes with sha256: the bytes are pinned and never change"
type HTTPSource struct {
	// url is where the catalog is, https:// (or http://), without
	// credentials (they belong in secretRef) or a fragment.
	//
	// Example: https://example.com/catalogs/operators.tar.gz
	//
	// +required
	// +kubebuilder:validation:MaxLength:=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'https' || url(self).getScheme() == 'http') && url(self).getHostname() != ''",message="must be an https:// or http:// URL with a host"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z]+://[^/]*@')",message="must not hold credentials: name a Secret in secretRef"
	// +kubebuilder:validation:XValidation:rule="!self.contains('#')",message="must not have a fragment: pin the content with sha256"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^?]*[.]git(/|$|[?])') && !self.matches('^[A-Za-z]+://[^?]*[^:]//') && !self.matches('[?&]ref=')",message="looks like a git repository: use type Git"
	URL string `json:"url"`

	// sha256 pins the bytes at url: 64 lower-case hex digits. A download of
	// other bytes fails, and the catalog keeps serving what it served.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{64}$')",message="must be 64 lower-case hex digits"
	// +optional
	SHA256 string `json:"sha256,omitempty"`

	// pollIntervalMinutes is how often, in minutes, to ask whether the
	// content at url changed (a conditional request). When omitted the URL
	// is not polled. Not allowed with sha256.
	// +kubebuilder:validation:Minimum:=1
	// +optional
	PollIntervalMinutes *int `json:"pollIntervalMinutes,omitempty"`

	// secretRef names a Secret in catalogd's own namespace with the
	// credentials: username and password, or bearerToken. They are sent
	// only to the host of url.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// caSecretRef names a Secret in catalogd's own namespace whose ca.crt
	// holds the PEM certificates of a private certificate authority to
	// trust for url, beside the system's.
	// +optional
	CASecretRef *SecretReference `json:"caSecretRef,omitempty"`
}

// SecretReference names a Secret in catalogd's own namespace (the
// namespace it runs in): a ClusterCatalog can name no Secret elsewhere.
type SecretReference struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MaxLength:=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a Secret name: lower-case letters, digits, '-' and '.'"
	Name string `json:"name"`
}

// ResolvedCatalogSource is a union describing the exact source that was
// unpacked; type says which member is set.
// +union
// +kubebuilder:validation:XValidation:rule="self.type == 'Image' ? has(self.image) : !has(self.image)",message="image is required when type is Image, and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="self.type == 'Git' ? has(self.git) : !has(self.git)",message="git is required when type is Git, and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="self.type == 'HTTP' ? has(self.http) : !has(self.http)",message="http is required when type is HTTP, and forbidden otherwise"
type ResolvedCatalogSource struct {
	// type is the kind of source: Image, Git or HTTP.
	//
	// +unionDiscriminator
	// +kubebuilder:validation:Enum:=Image;Git;HTTP
	// +required
	Type SourceType `json:"type"`

	// image is the resolved image, set when type is Image.
	// +optional
	Image *ResolvedImageSource `json:"image,omitempty"`

	// git is the resolved commit, set when type is Git.
	// +optional
	Git *ResolvedGitSource `json:"git,omitempty"`

	// http is the resolved content, set when type is HTTP.
	// +optional
	HTTP *ResolvedHTTPSource `json:"http,omitempty"`
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

	// form says what the reference held: Image, a container image whose
	// label names the catalog's directory, or Artifact, an OCI artifact
	// whose layers are the catalog.
	// +kubebuilder:validation:Enum:=Image;Artifact
	// +optional
	Form ImageForm `json:"form,omitempty"`
}

// ResolvedGitSource is the commit a catalog was fetched from. Every replica
// fetches exactly this commit.
type ResolvedGitSource struct {
	// url is the repository, as in spec.source.git.url.
	// +required
	// +kubebuilder:validation:MaxLength:=2048
	URL string `json:"url"`

	// commit is the full hash of the commit the ref resolved to.
	// +required
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{40}$')",message="must be a full commit hash: 40 lower-case hex digits"
	Commit string `json:"commit"`

	// directory is the catalog's path inside the repository; empty is the
	// root.
	// +kubebuilder:validation:MaxLength:=1024
	// +optional
	Directory string `json:"directory,omitempty"`

	// treeDigest is the content's digest: "git-tree:" and the git tree hash
	// of directory at commit. A commit that changes only other paths keeps
	// it, and nothing is re-indexed.
	// +required
	// +kubebuilder:validation:XValidation:rule="self.matches('^git-tree:[0-9a-f]{40}([0-9a-f]{24})?$')",message="must be git-tree: and a 40 or 64 hex digit tree hash"
	TreeDigest string `json:"treeDigest"`
}

// ResolvedHTTPSource is the content a catalog was fetched from: the URL and
// the SHA-256 of the bytes it served. Every replica fetches exactly these
// bytes.
type ResolvedHTTPSource struct {
	// url is as in spec.source.http.url.
	// +required
	// +kubebuilder:validation:MaxLength:=2048
	URL string `json:"url"`

	// sha256 is the SHA-256 of the bytes downloaded: 64 lower-case hex
	// digits.
	// +required
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{64}$')",message="must be 64 lower-case hex digits"
	SHA256 string `json:"sha256"`
}
