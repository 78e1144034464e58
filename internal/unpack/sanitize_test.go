package unpack

import (
	"archive/tar"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPlanEntry checks the promises the extractor relies on, for any tar
// header and configs label: whatever planEntry accepts stays inside the
// destination, links included, and nothing but files, directories and links
// is ever created. Run it with
//
//	go test ./internal/unpack -run '^$' -fuzz FuzzPlanEntry -fuzztime 1m
func FuzzPlanEntry(f *testing.F) {
	seeds := []struct {
		name, link string
		typ        byte
		label      string
	}{
		{"configs/a.json", "", tar.TypeReg, "/configs"},
		{"./configs/pkg/", "", tar.TypeDir, "/configs"},
		{"configs/../etc/passwd", "", tar.TypeReg, "/configs"},
		{"/configs/a.json", "", tar.TypeReg, "/configs"},
		{"configs/l", "../etc/passwd", tar.TypeSymlink, "/configs"},
		{"configs/l", "/configs/a", tar.TypeSymlink, "/configs"},
		{"configs/d/l", "../../configs/a", tar.TypeSymlink, "configs"},
		{"configs/h", "configs/a", tar.TypeLink, "/configs"},
		{"configs/h", "/etc/shadow", tar.TypeLink, "/configs"},
		{"configs/null", "", tar.TypeChar, "/configs"},
		{"configs/.wh.a.json", "", tar.TypeReg, "/configs"},
		{"configs/.wh..wh..opq", "", tar.TypeReg, "/configs"},
		{".wh.configs", "", tar.TypeReg, "/configs"},
		{"var/.wh..wh..opq", "", tar.TypeReg, "/var/lib/configs"},
		{"configs/.wh..", "", tar.TypeReg, "/configs"},
		{"configs", "/", tar.TypeSymlink, "/configs"},
		{"a\x00b", "", tar.TypeReg, "/a"},
		{"configs/x", "", tar.TypeFifo, "/../configs/./"},
	}
	for _, s := range seeds {
		f.Add(s.name, s.link, s.typ, s.label)
	}
	f.Fuzz(func(t *testing.T, name, link string, typ byte, label string) {
		if clean, err := cleanEntryName(name); err == nil {
			if !local(clean) {
				t.Fatalf("cleanEntryName(%q) = %q, not local", name, clean)
			}
			if again, err := cleanEntryName(clean); err != nil || again != clean {
				t.Fatalf("cleanEntryName not idempotent on %q: %q, %v", clean, again, err)
			}
		}

		configsDir, err := cleanConfigsLabel(label)
		if err != nil {
			return
		}
		if !local(configsDir) || configsDir == "." {
			t.Fatalf("cleanConfigsLabel(%q) = %q", label, configsDir)
		}
		hdr := &tar.Header{Name: name, Linkname: link, Typeflag: typ}
		p, err := planEntry(hdr, configsDir)
		if err != nil {
			if p != (plan{}) {
				t.Fatalf("planEntry(%q) returned %+v with error %v", name, p, err)
			}
			return
		}
		if p.act == actSkip {
			return
		}
		if !local(p.rel) {
			t.Fatalf("planEntry(%q, %q) rel %q is not local", name, configsDir, p.rel)
		}
		switch p.act {
		case actRoot:
			if p.rel != "." || typ != tar.TypeDir {
				t.Fatalf("planEntry(%q) root with rel %q type %q", name, p.rel, typ)
			}
		case actDir:
			if typ != tar.TypeDir || p.rel == "." {
				t.Fatalf("planEntry(%q) dir from type %q rel %q", name, typ, p.rel)
			}
		case actFile:
			if (typ != tar.TypeReg && typ != 0) || p.rel == "." {
				t.Fatalf("planEntry(%q) file from type %q rel %q", name, typ, p.rel)
			}
		case actSymlink:
			if typ != tar.TypeSymlink || p.rel == "." {
				t.Fatalf("planEntry(%q) symlink from type %q rel %q", name, typ, p.rel)
			}
			if strings.HasPrefix(p.link, "/") || !local(path.Join(path.Dir(p.rel), p.link)) {
				t.Fatalf("planEntry(%q -> %q) link %q from %q leaves the destination", name, link, p.link, p.rel)
			}
		case actHardlink:
			if typ != tar.TypeLink || p.rel == "." || p.link == "." || !local(p.link) {
				t.Fatalf("planEntry(%q => %q) hard link %q from %q", name, link, p.link, p.rel)
			}
		case actWhiteout, actOpaque:
			if !strings.HasPrefix(path.Base(path.Clean(name)), whiteoutPrefix) {
				t.Fatalf("planEntry(%q) whiteout from a name without %s", name, whiteoutPrefix)
			}
		default:
			t.Fatalf("planEntry(%q) unknown action %d", name, p.act)
		}
	})
}

// local reports whether p is "." or a clean relative path that stays below
// its base, which is what the extractor may hand to os.Root.
func local(p string) bool {
	return p == "." || (filepath.IsLocal(p) && path.Clean(p) == p && !strings.ContainsRune(p, 0))
}

func TestPlanWhiteouts(t *testing.T) {
	tests := []struct {
		name       string
		configsDir string
		want       plan
	}{
		{"configs/.wh.a.json", "configs", plan{act: actWhiteout, rel: "a.json"}},
		{"configs/pkg/.wh.a.json", "configs", plan{act: actWhiteout, rel: "pkg/a.json"}},
		{"configs/.wh..wh..opq", "configs", plan{act: actOpaque, rel: "."}},
		{"configs/pkg/.wh..wh..opq", "configs", plan{act: actOpaque, rel: "pkg"}},
		{".wh.configs", "configs", plan{act: actWhiteout, rel: "."}},
		{"var/.wh.lib", "var/lib/configs", plan{act: actWhiteout, rel: "."}},
		{"var/.wh..wh..opq", "var/lib/configs", plan{act: actOpaque, rel: "."}},
		{".wh..wh..opq", "configs", plan{act: actOpaque, rel: "."}},
		{".wh.configs-old", "configs", plan{act: actSkip}},
		{"other/.wh..wh..opq", "configs", plan{act: actSkip}},
		{"configs/.wh..wh.plnk", "configs", plan{act: actSkip}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planEntry(&tar.Header{Name: tt.name, Typeflag: tar.TypeReg}, tt.configsDir)
			if err != nil {
				t.Fatalf("planEntry: %v", err)
			}
			if got != tt.want {
				t.Errorf("planEntry(%q, %q) = %+v, want %+v", tt.name, tt.configsDir, got, tt.want)
			}
		})
	}
}
