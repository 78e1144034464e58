package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoHeavyPackages: catalogd does not link the packages below.
// Every linked package's initialisation runs in every catalogd process,
// whatever its command, and its code and data are mapped and largely
// resident from start-up on (docs/architecture.md, "What the binary
// links"). Each entry says what linked it and what is used instead.
func TestLinksNoHeavyPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	linked := strings.Fields(string(out))
	for _, tc := range []struct{ prefix, why string }{
		{"github.com/operator-framework/operator-registry/alpha/declcfg", "its blob types are internal/declcfg's"},
		{"github.com/operator-framework/operator-registry/pkg/registry", "operator-registry's declcfg imports it"},
		{"google.golang.org/grpc", "operator-registry's registry package serves gRPC"},
		{"github.com/google/cel-go", "operator-registry's registry package evaluates CEL constraints"},
		{"go.podman.io/image", "operator-registry's declcfg parses image references with it"},
	} {
		var found []string
		for _, pkg := range linked {
			if pkg == tc.prefix || strings.HasPrefix(pkg, tc.prefix+"/") {
				found = append(found, pkg)
			}
		}
		if len(found) > 0 {
			t.Errorf("catalogd links %d packages of %s, such as %s: %s", len(found), tc.prefix, found[0], tc.why)
		}
	}
}
