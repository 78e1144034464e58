//go:build tools

// Package tools pins the opm command for `make bench-validate`.
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
