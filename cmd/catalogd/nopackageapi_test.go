//go:build manager && !packageapi

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/catalogd/catalogd/test/kubetest"
)

// TestManagerWithoutPackageAPI: `catalogd manager --package-api` of the
// default binary exits 1 at start, with a line that names the binary that
// has the package API, and leaves --data-dir alone. The flags are the
// same as catalogd-package-api's, so the command line itself is accepted
// (a mistake in it would be exit 2).
func TestManagerWithoutPackageAPI(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	kubeconfig := kubetest.WriteKubeconfig(t, &rest.Config{Host: "https://127.0.0.1:1"})
	var stdout, stderr bytes.Buffer
	code := run([]string{"manager", "--data-dir", dataDir, "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0",
		"--health-probe-bind-address", "0", "--package-api"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "built without the package API; run catalogd-package-api") {
		t.Errorf("exit code %d, want 1 with the refusal naming catalogd-package-api; stderr:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("--data-dir exists after the refusal (stat: %v)", err)
	}
}
