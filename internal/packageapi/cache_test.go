package packageapi

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/store"
)

// TestCacheGivesBackMemory checks that the cache returns its garbage to
// the kernel after each sync that converted packages (the first load, a
// swap that changed a package, a new catalog) and leaves the heap alone
// after one that converted none (a removal).
func TestCacheGivesBackMemory(t *testing.T) {
	st, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	table := catalogs.NewTable()
	index := func(name, dir string) {
		t.Helper()
		content, err := catalogdir.Read(context.Background(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		table.Put(catalogs.Catalog{Name: name, Source: dir})
		if _, _, _, err := st.Update(context.Background(), name, content); err != nil {
			t.Fatal(err)
		}
	}
	mainDir := copyCatalog(t, "testdata/main")
	index("main", mainDir)

	c := newCache(st, table, 1, testr.New(t))
	// The manifests each call found: it must come after the conversion.
	var calls []int
	c.giveBackMemory = func() {
		entries, _ := c.snapshot()
		calls = append(calls, len(entries))
	}
	// The store marks the catalogs it changes; syncDirty, which run calls
	// on each mark, is called here in the test's goroutine.
	ctx := context.Background()
	for _, name := range st.Catalogs() {
		c.mark(name)
	}
	c.syncDirty(ctx)
	entries, _ := c.snapshot()
	loaded := len(entries)

	editCatalog(t, mainDir, nil, newPackage("zeta-new", "1.0.0")...)
	index("main", mainDir)
	c.syncDirty(ctx)

	index("other", filepath.Join("testdata", "other"))
	c.syncDirty(ctx)
	entries, _ = c.snapshot()
	both := len(entries)

	if err := st.Remove("other"); err != nil {
		t.Fatal(err)
	}
	c.syncDirty(ctx)
	if entries, _ = c.snapshot(); len(entries) != loaded+1 {
		t.Fatalf("%d manifests after the removal, want %d", len(entries), loaded+1)
	}

	// The first load, the swap and the new catalog converted packages;
	// the removal converted none.
	if want := []int{loaded, loaded + 1, both}; !slices.Equal(calls, want) {
		t.Errorf("memory given back with %v manifests held, want %v", calls, want)
	}
}
