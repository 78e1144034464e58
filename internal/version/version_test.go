package version_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/version"
)

// TestStamp builds a tiny program that prints version.String() with and
// without the -X flag the Makefile passes, so a renamed variable or package
// (which makes -X silently do nothing) fails here rather than shipping an
// image that says "devel".
func TestStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	tests := []struct {
		name    string
		ldflags string
		want    string
	}{
		{"unstamped", "", "devel"},
		{"stamped", "-X github.com/catalogd/catalogd/internal/version.version=v9.8.7-3-gabcdef0-dirty", "v9.8.7-3-gabcdef0-dirty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := filepath.Join(dir, tt.name)
			build := exec.Command("go", "build", "-o", bin, "-ldflags", tt.ldflags, "./testdata/printversion")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out, err := exec.Command(bin).Output()
			if err != nil {
				t.Fatalf("running %s: %v", bin, err)
			}
			if got := strings.TrimSpace(string(out)); got != tt.want {
				t.Errorf("version.String() = %q, want %q", got, tt.want)
			}
		})
	}
	if got := version.String(); got != "devel" {
		t.Errorf("version.String() in a test binary = %q, want devel", got)
	}
}
