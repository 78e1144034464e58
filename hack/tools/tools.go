// Package tools pins the code generators catalogd uses (controller-gen for the
// CRD, oapi-codegen for the API client) in a module of their own, so their
// dependencies never leak into the catalogd module. `make tools` builds them
// into bin/.
package tools
