package unpack

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
				if _, _, _, err := x.finish(); err != nil {
					b.Fatal(err)
				}
				root.Close()
			}
		})
	}
}

// cancelAfter serves r and cancels once more than n bytes were served.
type cancelAfter struct {
	r      io.Reader
	n      int64
	served int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.served += int64(n)
	if c.served > c.n {
		c.cancel()
	}
	return n, err
}

// Cancellation must stop a large entry while it is copied, not once it is
// done: a layer's stream may already be in memory, so the network cannot be
// relied on to notice.
func TestExtractCancelledWithinEntry(t *testing.T) {
	const size = 64 << 20
	var hdr bytes.Buffer
	if err := tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "configs/big.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	src := &cancelAfter{r: io.MultiReader(&hdr, io.LimitReader(zeroReader{}, size+1024)), n: 1 << 20, cancel: cancel}
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	x := newExtractor(root, "configs", 1<<30, 100)
	err = extractLayer(ctx, x, 0, src, &readBudget{left: 1 << 30, max: 1 << 30})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if src.served > 4<<20 {
		t.Errorf("read %d bytes of a %d-byte entry after cancelling at 1 MiB", src.served, size)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
