package migrations

import (
	"io/fs"
	"slices"
	"testing"
)

// TestFilesInOrder: the embedded files are exactly the ones a build applies,
// and their names sort in the order it applies them, so a new schema file
// cannot be embedded (and change Digest) without being given its place.
func TestFilesInOrder(t *testing.T) {
	names, err := fs.Glob(FS, "*")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{Tables, Indexes, Counts}; !slices.Equal(names, want) {
		t.Errorf("schema files = %v, want %v", names, want)
	}
}
