package grpcapi

import (
	"strings"
	"testing"
)

// TestObjectCache: entries are kept within the budget, least recently used
// out first, and an entry larger than the budget is not kept.
func TestObjectCache(t *testing.T) {
	key := func(b string) objectKey { return objectKey{file: "f", pkg: "p", bundle: b} }
	obj := func(n int) []string { return []string{strings.Repeat("x", n)} }
	tests := []struct {
		name     string
		budget   int
		put      []string // bundles put, each with a 100-byte object
		get      []string // bundles read between puts: after the first put of the same index
		kept     []string
		notKept  []string
		oversize bool
	}{
		{name: "all fit", budget: 1000, put: []string{"a", "b", "c"}, kept: []string{"a", "b", "c"}},
		{name: "oldest out", budget: 250, put: []string{"a", "b", "c"}, kept: []string{"b", "c"}, notKept: []string{"a"}},
		{name: "read keeps", budget: 250, put: []string{"a", "b", "c"}, get: []string{"a"}, kept: []string{"a", "c"}, notKept: []string{"b"}},
		{name: "too large", budget: 50, put: []string{"a"}, notKept: []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newObjectCache(tc.budget)
			for i, b := range tc.put {
				c.put(key(b), obj(100-len("fp"+b)), "")
				if i == 1 {
					for _, g := range tc.get {
						if _, _, ok := c.get(key(g)); !ok {
							t.Fatalf("%s not kept after two puts", g)
						}
					}
				}
			}
			for _, b := range tc.kept {
				if objects, _, ok := c.get(key(b)); !ok || len(objects) != 1 {
					t.Errorf("%s not kept", b)
				}
			}
			for _, b := range tc.notKept {
				if _, _, ok := c.get(key(b)); ok {
					t.Errorf("%s kept", b)
				}
			}
			if c.used > tc.budget {
				t.Errorf("%d bytes kept, budget %d", c.used, tc.budget)
			}
		})
	}
}
