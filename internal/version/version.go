// Package version owns the build's version string, stamped by the linker:
// -ldflags "-X github.com/catalogd/catalogd/internal/version.version=v1.2.3".
package version

// version is "devel" in a build that was not stamped (go run, go test).
var version = "devel"

// String returns the version this binary was built as.
func String() string { return version }
