// Package grpcapi serves OLM v0's registry API, operator-registry's
// api.Registry gRPC service (the one every CatalogSource's registry pod
// serves with `opm serve`), from the store's indexes through
// internal/query, so that a CatalogSource can point at catalogd instead of
// a pod per catalog. convert.go is the one file that turns query's answers
// into operator-registry's api messages.
//
// Every answer is the one `opm serve` gives for the same catalog: the same
// messages field for field, the same errors (plain errors, code Unknown,
// with the registry's own messages) for unknown names, and ListBundles'
// order (by channel, package, bundle name). Where the registry's order
// depends on its map iteration (ListPackages, the channel entry streams,
// which bundle GetBundleThatReplaces picks when several qualify), the
// answer here is sorted, which is one of the orders the registry may give.
//
// One listener serves every catalog: the catalog of a call is the first
// label of the host the client dialled (its :authority), so a CatalogSource
// whose spec.address is operatorhubio.NAMESPACE.svc:50051, a Service name
// that leads to catalogd, reads the catalog operatorhubio. Each call reads
// one snapshot of its catalog's index, taken when it starts and released
// when it ends: a swap meanwhile does not change its answer, and
// ListBundles streams one version whole.
package grpcapi
