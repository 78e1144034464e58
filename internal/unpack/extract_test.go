package unpack

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The resolver decides from the links alone; these trees cannot all be
// built by Unpack, which refuses most of them earlier, so it is tested on
// its own.
func TestLinkResolver(t *testing.T) {
	tests := []struct {
		name  string
		links map[string]string
		bad   map[string]bool
	}{
		{name: "link to a sibling", links: map[string]string{"a": "b/c"}},
		{name: "dangling link", links: map[string]string{"a": "missing/file.json"}},
		{name: "chain that stays inside", links: map[string]string{"a": "b/x", "b": "c", "c": "d/e"}},
		{name: "link up to the root", links: map[string]string{"d/up": ".."}},
		{
			name:  "chain that leaves through another link",
			links: map[string]string{"a": "b/c", "b": ".."},
			bad:   map[string]bool{"a": true, "b": true},
		},
		{
			name:  "link in a subdirectory leaving by dot-dot",
			links: map[string]string{"d/e/l": "../../../x"},
			bad:   map[string]bool{"d/e/l": true},
		},
		{
			name:  "cycle",
			links: map[string]string{"a": "b", "b": "c/d", "c": "a"},
			bad:   map[string]bool{"a": true, "b": true, "c": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := linkResolver{links: tt.links, done: map[string]resolution{}}
			for p := range tt.links {
				reason := r.check(p)
				if got := reason != ""; got != tt.bad[p] {
					t.Errorf("check(%s) = %q, want unsafe=%v", p, reason, tt.bad[p])
				}
			}
		})
	}
}

// chainTar builds hops directory chains depth deep, each with a link at its
// bottom to the bottom of the next, a link l to the first, and then links,
// or files when through is set, whose paths go through all hops.
func chainTar(b testing.TB, hops, depth, entries int, through bool) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header) {
		h.Mode = 0o644
		if err := tw.WriteHeader(h); err != nil {
			b.Fatal(err)
		}
	}
	deep := strings.Repeat("/d", depth-1)
	add(&tar.Header{Name: "configs/", Typeflag: tar.TypeDir})
	for k := 1; k <= hops; k++ {
		add(&tar.Header{Name: fmt.Sprintf("configs/c%d%s/keep", k, deep), Typeflag: tar.TypeReg})
	}
	for k := 1; k < hops; k++ {
		add(&tar.Header{Name: fmt.Sprintf("configs/c%d%s/n", k, deep), Typeflag: tar.TypeSymlink, Linkname: fmt.Sprintf("/configs/c%d%s", k+1, deep)})
	}
	add(&tar.Header{Name: "configs/l", Typeflag: tar.TypeSymlink, Linkname: "/configs/c1" + deep})
	chain := "configs/l" + strings.Repeat("/n", hops-1)
	for i := range entries {
		if through {
			add(&tar.Header{Name: fmt.Sprintf("%s/f%d", chain, i), Typeflag: tar.TypeReg})
		} else {
			add(&tar.Header{Name: fmt.Sprintf("configs/x%d", i), Typeflag: tar.TypeSymlink, Linkname: "/" + chain + "/keep"})
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkExtractLinkChains extracts links whose targets pass through 8
// chained links to 60-deep directories. Each link is resolved once, in
// memory; resolving them on disk cost about hops x depth lookups each.
func BenchmarkExtractLinkChains(b *testing.B) {
	for _, n := range []int{100, 1000} {
		data := chainTar(b, 8, 60, n, false)
		b.Run(fmt.Sprintf("links=%d", n), func(b *testing.B) {
			for b.Loop() {
				root, err := os.OpenRoot(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				x := newExtractor(root, "configs", 1<<30, 1<<20)
				if err := x.apply(b.Context(), 0, bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
				if _, _, err := x.finish(); err != nil {
					b.Fatal(err)
				}
				root.Close()
			}
		})
	}
}
