package unpack

import (
	"archive/tar"
	"path"
	"strings"
	"testing"
)

// FuzzArtifactTitle: a title checkTitle accepts is written by the
// extractor as a plain file at exactly that path inside the catalog, never
// outside it, never as a whiteout.
func FuzzArtifactTitle(f *testing.F) {
	for _, seed := range []string{"catalog.json", "sub/a.yaml", "../x", "/etc/passwd", "a/../b", ".wh.x", "a\x00b", "./a", "a//b", "\x1f\x8bx"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, title string) {
		if checkTitle(title) != "" {
			return
		}
		p, err := planEntry(&tar.Header{Name: title, Typeflag: tar.TypeReg}, ".")
		if err != nil {
			t.Fatalf("accepted title %q refused by the extractor: %v", title, err)
		}
		if p.act != actFile || p.rel != title || path.IsAbs(p.rel) || strings.HasPrefix(p.rel, "../") {
			t.Fatalf("title %q planned as %+v", title, p)
		}
	})
}
