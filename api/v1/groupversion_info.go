// Package v1 owns catalogd's Kubernetes API: the cluster-scoped ClusterCatalog
// resource of group olm.operatorframework.io, version v1. Its fields and
// validation follow OLM v1's ClusterCatalog, so manifests and clients written
// for OLM v1 work against catalogd unchanged.
//
// The Go types here are the source of truth: `make manifests` generates the
// CRD (config/crd/bases) and the deepcopy methods (zz_generated.deepcopy.go)
// from them, and `make verify-manifests` fails when the committed files are
// stale.
//
// +kubebuilder:object:generate=true
// +groupName=olm.operatorframework.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "olm.operatorframework.io", Version: "v1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	// It is apimachinery's builder, not controller-runtime's (deprecated
	// there), so the API package depends on apimachinery alone.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds ClusterCatalog and ClusterCatalogList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this group version together with the
// meta types (ListOptions, ...) that clients send alongside them.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ClusterCatalog{}, &ClusterCatalogList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
