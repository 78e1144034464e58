// Package catalogapi holds the catalog query API's wire types, generated
// from openapi.yaml at the repository root by oapi-codegen (see
// oapi-codegen.yaml beside this file): the request parameters and the
// answers of every endpoint, and nothing else. The server (internal/httpapi)
// answers in these types and the client (package client) decodes into them,
// so what the server sends and what clients read cannot drift apart, and
// the server never imports the client. Do not edit openapi.gen.go: change
// openapi.yaml and run `make generate`.
package catalogapi

//go:generate go tool -modfile=../../hack/tools/go.mod oapi-codegen -config oapi-codegen.yaml ../../openapi.yaml
