package daemon

// The permissions `catalogd manager` needs besides the ClusterCatalog ones
// (internal/reconcile), as kubebuilder markers from which `make manifests`
// generates config/rbac/role.yaml. Each is namespaced to the install
// namespace (olmv1-system; kustomize's namespace overrides it), so the
// manager can read no secret and touch no lease elsewhere.

// Leader election: controller-runtime gets, creates and renews (updates) one
// Lease; it never lists, watches, patches or deletes it.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=olmv1-system

// Leader election records an event when a replica becomes leader; the event
// recorder creates events and patches repeated ones into counts.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=olmv1-system

// Image pulls (unpack.PullKeychain): --service-account's imagePullSecrets are read
// from the ServiceAccount, and those secrets and --global-pull-secret are
// fetched by name on each pull through the API reader (no cache), so get is
// enough: no list or watch of secrets.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get,namespace=olmv1-system
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get,namespace=olmv1-system
