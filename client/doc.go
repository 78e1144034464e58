// Package client is a typed Go client for the catalogd API, generated from
// openapi.yaml at the repository root by oapi-codegen (see oapi-codegen.yaml
// beside this file). The request and response types are those of package
// catalogapi, which the server answers in too; the client re-exports each
// under the same name (client.Package is catalogapi.Package), so callers
// need import only the client. Do not edit openapi.gen.go: change
// openapi.yaml and run `make generate`.
package client

//go:generate go tool -modfile=../hack/tools/go.mod oapi-codegen -config oapi-codegen.yaml ../openapi.yaml
