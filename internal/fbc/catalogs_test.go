package fbc

import (
	"context"
	"testing"

	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// generated is a small generated catalog of many files.
func generated(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{
		Packages: 12, Bundles: 150, BundleObjectBytes: 2000, Icons: true, Seed: 7,
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testCatalogs are the catalogs the reader's tests read: the demo, a
// generated one and, where it is beside the project, the real community
// catalog.
var testCatalogs = []struct {
	name string
	dir  func(t *testing.T) string
}{
	{"demo", func(*testing.T) string { return "../../test/testdata/demo" }},
	{"generated", generated},
	{"community-v4.20", func(t *testing.T) string { return fbcfacts.SharedCommunity(t) }},
}
