package fbcfacts

import (
	"context"
	"testing"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// Fixture is a catalog directory the tests of several packages read.
type Fixture struct {
	Name string
	Dir  func(t testing.TB) string
}

// Generated writes a small generated catalog of many files (12 packages,
// 150 bundles with objects and icons) into a temporary directory.
func Generated(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{
		Packages: 12, Bundles: 150, BundleObjectBytes: 2000, Icons: true, Seed: 7,
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Fixtures are the catalogs both the reader's and the index's tests read:
// the demo (at demoDir, relative to the test), a generated one and, where
// it is beside the project, the real community catalog (skipped with a
// message where it is not).
func Fixtures(demoDir string) []Fixture {
	return []Fixture{
		{"demo", func(testing.TB) string { return demoDir }},
		{"generated", Generated},
		{"community-v4.20", func(t testing.TB) string { return SharedCommunity(t) }},
	}
}
