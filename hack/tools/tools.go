// Package tools pins the tools catalogd builds with (controller-gen for the
// CRD, oapi-codegen for the API client, staticcheck for make lint) in a
// module of their own, so their dependencies never leak into the catalogd
// module. `make tools` builds them into bin/.
package tools
