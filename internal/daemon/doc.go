// Package daemon is catalogd's composition root: it turns the command line
// of either mode into a running server, the same way for both.
//
// Options (the flags) are validated into a Config; Config.Complete opens the
// data directory and wires, once for both modes, the index store, the
// catalog table, the catalog-sync service, the image unpacker, the API and
// the HTTP server (a Core). The modes differ only in what feeds the sync
// service: Serve gives it the directories and images of its command line;
// RunManager adds the ClusterCatalog controllers (internal/reconcile) in a
// controller-runtime manager, which give it what the cluster lists.
//
// # The data directory
//
// Both modes keep the same layout under --data-dir:
//
//	index/    the live index of each catalog (a SQLite file, the content
//	          file of its blobs and that file's gzip copy), one directory
//	          per catalog (internal/store); kept across restarts, so that
//	          a restart answers from it at once; beside it, the catalog's
//	          history of package digests (--changes-history versions),
//	          which /changes answers from
//	unpack/   images being unpacked for indexing, one directory per pull,
//	          removed once indexed; cleared at start-up
//
// A tmp/ directory left by an older `catalogd manager`, which unpacked
// there, is cleared at start-up too; indexes under index/ are kept.
package daemon
