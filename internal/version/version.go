// Package version owns the build's version string, so that `catalogd
// version`, the start-up log and the registry User-Agent all report the same
// thing. `make build` stamps it from `git describe` with
//
//	-ldflags '-X github.com/catalogd/catalogd/internal/version.version=v1.2.3'
//
// A plain `go build` or `go test` leaves it at "devel".
package version

// version is a variable, not a constant, because the linker's -X flag can
// only set package-level string variables.
var version = "devel"

// String returns the version the binary was built as, "devel" when unstamped.
func String() string { return version }
