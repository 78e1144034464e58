// Package catalogd holds what belongs to the whole module rather than to one
// of its packages: the API description.
package catalogd

import _ "embed"

// OpenAPISpec is the API description (openapi.yaml at the repository root),
// served at /openapi.yaml and used by tests to check every answer against it.
// The wire types (api/catalogapi) and the client package are generated
// from the same file.
//
//go:embed openapi.yaml
var OpenAPISpec []byte
