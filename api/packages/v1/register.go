package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// SchemeGroupVersion is the group and version of every type here.
	SchemeGroupVersion = schema.GroupVersion{Group: "packages.operators.coreos.com", Version: "v1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds PackageManifest and PackageManifestList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource is the group-qualified resource of a name in this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

// addKnownTypes registers the kinds with the meta types (ListOptions,
// WatchEvent, ...) that requests and answers carry beside them.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &PackageManifest{}, &PackageManifestList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
