package fbcgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// phantomEntries are the edits WritePhantomDemo makes to the demo's
// aurora-cache catalog, each the only occurrence of its text: channel
// entries naming bundles the catalog does not have. aurora-cache.v9.9.9
// heads stable by replacing its head; aurora-cache.v9.9.8 heads fast by
// skipping its head, and its skipRange takes in every other bundle.
var phantomEntries = [][2]string{
	{"entries:\n- name: aurora-cache.v1.0.0\n", "entries:\n- name: aurora-cache.v9.9.9\n  replaces: aurora-cache.v1.3.0\n- name: aurora-cache.v1.0.0\n"},
	{"entries:\n- name: aurora-cache.v1.2.0\n", "entries:\n- name: aurora-cache.v9.9.8\n  skips: [aurora-cache.v1.3.0]\n  skipRange: '>=1.0.0 <9.0.0'\n- name: aurora-cache.v1.2.0\n"},
}

// WritePhantomDemo copies the demo catalog in demoDir (test/testdata/demo)
// to dst, with two channel entries that name no bundle of the catalog, as an
// author editing it might leave it: a catalog whose answers must never name
// a bundle that does not exist.
func WritePhantomDemo(demoDir, dst string) error {
	if err := os.CopyFS(dst, os.DirFS(demoDir)); err != nil {
		return fmt.Errorf("copy the demo catalog: %w", err)
	}
	path := filepath.Join(dst, "aurora-cache", "catalog.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	for _, edit := range phantomEntries {
		if n := strings.Count(text, edit[0]); n != 1 {
			return fmt.Errorf("%s has %d places for a phantom entry at %q, want 1", path, n, edit[0])
		}
		text = strings.Replace(text, edit[0], edit[1], 1)
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
