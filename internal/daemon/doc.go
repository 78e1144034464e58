// Package daemon is catalogd's composition root: it turns the command line
// of either mode into a running server, the same way for both.
//
// Options (the flags) are validated into a Config; Config.Complete opens the
// data directory and wires, once for both modes, the index store, the
// catalog table, the catalog-sync service, the image unpacker, the API and
// the HTTP server (a Core). The modes differ only in what feeds the sync
// service: Serve gives it the directories and images of its command line;
// RunManager adds the ClusterCatalog controllers (internal/reconcile) in a
// controller-runtime manager, which give it what the cluster lists, and,
// with --package-api, the PackageManifest API (internal/packageapi) over
// the same store and table, run by every replica. Each is linked only
// into the binary that runs it, because a linked package's initialisation
// costs every process memory whatever its command: RunManager (manager.go)
// only with -tags manager (catalogd-manager, the image's /catalogd), so
// that catalogd serve, validate and index publish link no Kubernetes
// client; the package API's wiring (packageapi.go) only with -tags
// manager,packageapi (catalogd-package-api), so that no other binary links
// k8s.io/apiserver, and the manager without it refuses --package-api at
// start (nopackageapi.go). Every build takes the same flags
// (cmd/catalogd refuses `catalogd manager` in the default build).
//
// # The data directory
//
// Both modes keep the same layout under --data-dir (internal/datadir owns
// the rules of a directory catalogd writes in):
//
//	catalogd-layout.json  the mark that makes the directory catalogd's,
//	          with the version of its layout
//	index/    the live index of each catalog (a SQLite file, the content
//	          file of its blobs and that file's gzip copy), one directory
//	          per catalog (internal/store); kept across restarts, so that
//	          a restart answers from it at once; beside it, the catalog's
//	          history of package digests (--changes-history versions),
//	          which /changes answers from
//	unpack/   images being unpacked for indexing, one unpack-* directory
//	          per pull, removed once indexed
//
// Complete refuses a non-empty directory without the mark, unless it holds
// exactly what an earlier catalogd left (index/, unpack/, and the tmp/ an
// older `catalogd manager` unpacked into), which it adopts: catalogd
// deletes only what it created, and --data-dir pointed at the wrong place
// must not cost anyone a file. At start-up it removes the unpack-*
// directories a stopped catalogd left, by that name only.
package daemon
