package fbcgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// versionlessProperty is the olm.package property WriteVersionlessDemo
// removes: aurora-cache.v1.3.0's, the head of the stable and fast channels
// and the target of replaces, skips and skipRange edges.
const versionlessProperty = "- type: olm.package\n  value:\n    packageName: aurora-cache\n    version: 1.3.0\n"

// VersionlessBundle is the bundle WriteVersionlessDemo leaves without a
// version.
const VersionlessBundle = "aurora-cache.v1.3.0"

// WriteVersionlessDemo copies the demo catalog in demoDir to dst with the
// olm.package property of VersionlessBundle removed, as a careless edit
// might leave it: a catalog whose answers must never offer a bundle whose
// version nobody can tell.
func WriteVersionlessDemo(demoDir, dst string) error {
	if err := os.CopyFS(dst, os.DirFS(demoDir)); err != nil {
		return fmt.Errorf("copy the demo catalog: %w", err)
	}
	path := filepath.Join(dst, "aurora-cache", "catalog.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	if n := strings.Count(text, versionlessProperty); n != 1 {
		return fmt.Errorf("%s has the olm.package property of %s %d times, want 1", path, VersionlessBundle, n)
	}
	return os.WriteFile(path, []byte(strings.Replace(text, versionlessProperty, "", 1)), 0o644)
}
