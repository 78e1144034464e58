package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLinksNoHeavyPackages: catalogd does not link the packages below.
// Every linked package's initialisation runs in every catalogd process,
// whatever its command, and its code and data are mapped and largely
// resident from start-up on (docs/architecture.md, "What the binary
// links"). Each entry says what linked it and what is used instead.
// gRPC itself is linked, for OLM v0's registry API (internal/grpcapi,
// --grpc-listen): 42 package initialisations, 0.3 MiB allocated at start,
// 3.6 MB of binary (docs/architecture.md).
func TestLinksNoHeavyPackages(t *testing.T) {
	linked := deps(t)
	for _, tc := range []struct{ prefix, why string }{
		{"github.com/operator-framework/operator-registry/alpha/declcfg", "its blob types are internal/declcfg's"},
		{"github.com/operator-framework/operator-registry/pkg/registry", "operator-registry's declcfg imports it"},
		{"github.com/operator-framework/operator-registry/pkg/cache", "opm serve's cache; internal/grpcapi answers the registry API from the index"},
		{"github.com/google/cel-go", "operator-registry's registry package evaluates CEL constraints"},
		{"go.podman.io/image", "operator-registry's declcfg parses image references with it"},
		{"k8s.io/apiserver", "the package API's aggregated server is built on it: only catalogd-package-api (-tags packageapi) links it"},
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

// TestPackageAPIBinaryLinksAPIServer: the binary built with -tags
// packageapi (catalogd-package-api) links the package API and
// k8s.io/apiserver, so that the tag cannot silently stop adding them.
func TestPackageAPIBinaryLinksAPIServer(t *testing.T) {
	linked := deps(t, "-tags", "packageapi")
	for _, want := range []string{"github.com/catalogd/catalogd/internal/packageapi", "k8s.io/apiserver/pkg/server"} {
		if !slices.Contains(linked, want) {
			t.Errorf("catalogd built with -tags packageapi does not link %s", want)
		}
	}
}

// deps lists the packages `go build` links into catalogd with flags.
func deps(t *testing.T, flags ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append(append([]string{"list"}, flags...), "-deps", ".")...).Output()
	if err != nil {
		t.Fatalf("go list %q -deps: %v", flags, err)
	}
	return strings.Fields(string(out))
}
