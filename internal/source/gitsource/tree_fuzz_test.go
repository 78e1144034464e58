package gitsource

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzParseTree: a tree object comes from the remote; parseTree never
// panics, and what it accepts is exactly what its entries encode to.
func FuzzParseTree(f *testing.F) {
	hash := bytes.Repeat([]byte{0xab}, 20)
	f.Add(append([]byte("100644 catalog.json\x00"), hash...))
	f.Add(append(append([]byte("40000 dir\x00"), hash...), append([]byte("120000 link\x00"), hash...)...))
	f.Add([]byte("100644 short\x00abc"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := parseTree(b)
		if err != nil {
			return
		}
		var again []byte
		for _, it := range items {
			if it.name == "" || it.name == "." || it.name == ".." || strings.ContainsAny(it.name, "/\x00") {
				t.Fatalf("parsed %q with an entry named %q", b, it.name)
			}
			again = fmt.Appendf(again, "%o %s\x00", it.mode, it.name)
			again = append(again, it.hash[:]...)
		}
		back, err := parseTree(again)
		if err != nil || !slices.Equal(back, items) {
			t.Fatalf("parsed %q as %+v; its encoding %q parses as %+v, %v", b, items, again, back, err)
		}
	})
}
