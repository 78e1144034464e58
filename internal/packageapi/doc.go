// Package packageapi serves OLM v0's package API, packages.operators.coreos.com/v1
// PackageManifest, as an aggregated API server built on k8s.io/apiserver:
// discovery, OpenAPI (v2 and v3), get, list and watch, the table kubectl
// prints, and the packagemanifests/icon subresource, behind delegated
// authentication (TokenReview, client and front-proxy certificates) and
// authorization (SubjectAccessReview). It answers from the store's index
// snapshots through internal/query, as httpapi does; convert.go is the one
// file that turns query's answers into api/packages/v1.
//
// A PackageManifest is what packageserver would serve for the package if
// the ClusterCatalog were a global CatalogSource: each channel with a head
// that describes itself (an olm.bundle.object CSV, else olm.csv.metadata)
// with that head's description, the channel's bundles highest version
// first, deprecations, and packageserver's labels (the catalog's own,
// catalog, catalog-namespace, provider, provider-url, the default head's
// CSV labels, and operatorframework.io/os.linux and arch.amd64 where the
// CSV names none). A ClusterCatalog has no namespace, display name or
// publisher: catalogSourceNamespace and the catalog-namespace label are
// empty, and the display name is the catalog's name.
//
// Packages of every ClusterCatalog appear in every namespace, as those of
// OLM v0's global catalogs do; a list across all namespaces shows each once,
// in the manager's namespace. Two catalogs serving a package with the same
// name behave as two CatalogSources do under packageserver: both appear in
// a list (and in a metadata.name field selector's answer), with the same
// name and different catalog labels, so `-l catalog=NAME` picks one; a get
// by name answers one of them, here the one of highest priority, then the
// first catalog by name (packageserver leaves the choice to its cache's
// order).
//
// Every manifest is converted once per change of its package and kept: the
// cache follows the store (store.Watch), and on a catalog's swap or removal
// re-reads only the packages whose digest changed, so that a list or get
// costs no query and a watch sees ADDED, MODIFIED and DELETED for exactly
// the packages whose content changed. What it keeps is packed (pack.go),
// and what a list leaves behind is given back to the kernel once its
// answer is written (release.go): docs/architecture.md has the figures. resourceVersions count these
// changes (see cache); a watch from one older than the changes kept gets
// 410 Gone. Each replica counts its own: docs/architecture.md says what
// numbers every replica shares would take.
package packageapi
