// Package client is generated from openapi.yaml at the repository root by
// oapi-codegen (see oapi-codegen.yaml beside this file): a typed Go client
// for the catalogd API, and the request and response types. The server uses
// these types too, so what it answers and what clients decode cannot drift
// apart. Do not edit openapi.gen.go: change openapi.yaml and run
// `make generate`.
package client

//go:generate go tool -modfile=../hack/tools/go.mod oapi-codegen -config oapi-codegen.yaml ../openapi.yaml
