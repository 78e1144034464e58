//go:build !manager

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManagerRefusedWithoutTag: `catalogd manager` of the default binary,
// with a command line catalogd-manager would accept, exits 1 at start with
// a line that names catalogd-manager, and leaves --data-dir alone; one
// with a mistake in it is still exit 2, as it would be there.
func TestManagerRefusedWithoutTag(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"accepted command line", []string{"manager", "--data-dir", dataDir, "--listen", "127.0.0.1:0"}, 1,
			"built without the ClusterCatalog controllers; run catalogd-manager"},
		{"mistake in it", []string{"manager", "--data-dir", dataDir, "--listen", "nohost"}, 2, "--listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.wantCode || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit code %d, want %d with %q; stderr:\n%s", code, tc.wantCode, tc.want, stderr.String())
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("--data-dir exists after the refusal (stat: %v)", err)
			}
		})
	}
}
