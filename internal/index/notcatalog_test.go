package index

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogd/catalogd/internal/fbc"
)

// TestNotACatalogHint: a directory whose first fault comes before any
// olm.package, olm.channel or olm.bundle blob is most likely not a catalog's
// root (a docs/ directory, the parent of the catalog): the fault keeps its
// position and says so. A fault after such a blob is the catalog's own and
// gets no hint.
func TestNotACatalogHint(t *testing.T) {
	const markdown = "# Title\n\nSome prose: with a colon.\n- a list: too\n"
	tests := []struct {
		name     string
		files    map[string]string
		wantHint bool
	}{
		{"markdown only", map[string]string{"architecture.md": markdown}, true},
		{"other schemas before the fault", map[string]string{
			"a.json": `{"schema":"my.own","name":"x"}` + "\n",
			"b.md":   markdown,
		}, true},
		{"a package before the fault", map[string]string{
			"a.json": `{"schema":"olm.package","name":"p"}` + "\n",
			"b.md":   markdown,
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			_, _, err := Check(context.Background(), t.TempDir(), Content{FS: fsys, Ref: "test", Digest: "sha256:test"})
			var pe *fbc.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not an *fbc.Error", err)
			}
			if !errors.Is(err, ErrInvalidCatalog) {
				t.Errorf("error %v is not ErrInvalidCatalog", err)
			}
			// The fault's position is the parser's own.
			var parsed *fbc.Error
			if !errors.As(fbc.Walk(context.Background(), fsys, fbc.Limits{}, func(context.Context, fbc.Blob) error { return nil }), &parsed) {
				t.Fatal("fbc.Walk found no fault")
			}
			if pe.Pos != parsed.Pos {
				t.Errorf("position %s, want the parser's %s", pe.Pos, parsed.Pos)
			}
			msg := pe.Err.Error()
			hinted := strings.Contains(msg, "no olm.package, olm.channel or olm.bundle blob") && strings.Contains(msg, "catalog's root")
			if hinted != tt.wantHint {
				t.Errorf("message %q: hint given %v, want %v", msg, hinted, tt.wantHint)
			}
		})
	}
}
