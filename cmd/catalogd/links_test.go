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
		{"k8s.io/apiserver", "the package API's aggregated server is built on it: only catalogd-package-api (-tags manager,packageapi) links it"},
		{"sigs.k8s.io/controller-runtime", "the ClusterCatalog controllers are built on it: only catalogd-manager (-tags manager) and catalogd-package-api link it"},
		{"k8s.io/client-go/kubernetes", "the typed clientset, which controller-runtime and the pull-secret keychain (internal/pullsecret) link: the manager's"},
		{"github.com/google/go-containerregistry/pkg/authn/kubernetes", "pull secrets are the manager's (internal/pullsecret)"},
		{"k8s.io/cli-runtime", "internal/termtext writes kubectl's two escapes itself"},
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

// TestTaggedBinariesLinkWhatTheyServe: the binary built with -tags manager
// (catalogd-manager) links the ClusterCatalog controllers and not the
// package API, and the one built with -tags manager,packageapi
// (catalogd-package-api) links both, so that a tag cannot silently stop
// adding what a deployment runs, nor add more.
func TestTaggedBinariesLinkWhatTheyServe(t *testing.T) {
	for _, tc := range []struct {
		tags          string
		want, notWant []string
	}{
		{"manager", []string{"github.com/catalogd/catalogd/internal/reconcile", "sigs.k8s.io/controller-runtime/pkg/manager"},
			[]string{"github.com/catalogd/catalogd/internal/packageapi", "k8s.io/apiserver/pkg/server"}},
		{"manager,packageapi", []string{"github.com/catalogd/catalogd/internal/reconcile", "github.com/catalogd/catalogd/internal/packageapi",
			"k8s.io/apiserver/pkg/server"}, nil},
	} {
		linked := deps(t, "-tags", tc.tags)
		for _, want := range tc.want {
			if !slices.Contains(linked, want) {
				t.Errorf("catalogd built with -tags %s does not link %s", tc.tags, want)
			}
		}
		for _, notWant := range tc.notWant {
			if slices.Contains(linked, notWant) {
				t.Errorf("catalogd built with -tags %s links %s", tc.tags, notWant)
			}
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
