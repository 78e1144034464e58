//go:build manager && !packageapi

package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// TestManagerRefusesPackageAPI: a binary built without the package API
// refuses --package-api at once, with one line naming the binary that has
// it, before it creates the data directory or talks to the cluster (the
// rest config points nowhere).
func TestManagerRefusesPackageAPI(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg, err := parseFlags([]string{"--data-dir", dataDir, "--listen", freeAddr(t), "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--package-api", "--package-api-bind-address", freeAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.SkipControllerNameValidation = true
	cfg.Metrics = prometheus.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = RunManager(ctx, &rest.Config{Host: "https://127.0.0.1:1"}, cfg, testr.New(t))
	if err == nil || !strings.Contains(err.Error(), "built without the package API") ||
		!strings.Contains(err.Error(), "catalogd-package-api") || strings.Contains(err.Error(), "\n") {
		t.Errorf("RunManager --package-api: %v, want one line saying this binary lacks the package API and naming catalogd-package-api", err)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the data directory exists after the refusal (stat: %v)", err)
	}
}
