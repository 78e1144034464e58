// Package catalogdbin builds the catalogd binary once for a test binary's
// tests that run it as a subprocess (end-to-end, crash and load tests).
package catalogdbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds catalogd into a temporary directory, sets *binary to its
// path, runs the tests and removes the directory; call it from TestMain as
// os.Exit(catalogdbin.Main(m, &binary)).
func Main(m *testing.M, binary *string) int {
	dir, err := os.MkdirTemp("", "catalogd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*binary = filepath.Join(dir, "catalogd")
	build := exec.Command("go", "build", "-o", *binary, "github.com/catalogd/catalogd/cmd/catalogd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building catalogd: %v\n", err)
		return 1
	}
	return m.Run()
}
