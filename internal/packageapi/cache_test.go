package packageapi

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/benchenv"
)

// TestCacheCollectsAfterConverting checks that a sync that converted
// packages (the first load, a swap that changed a package, a new catalog)
// forces a collection that returns the free heap to the kernel
// (debug.FreeOSMemory, as the runtime counts forced collections) and that
// one that converted none (a removal) forces none. The memory itself is not
// asserted on: the runtime's background scavenger returns much of it
// meanwhile anyway (see store's TestUpdateCollectsOncePerSwap).
func TestCacheCollectsAfterConverting(t *testing.T) {
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
	// The store marks the catalogs it changes; syncDirty, which run calls
	// on each mark, is called here in the test's goroutine, and counted
	// apart from the store's own collections.
	ctx := context.Background()
	synced := func(name string, wantForced uint64) {
		t.Helper()
		before := benchenv.ForcedCollections()
		c.syncDirty(ctx)
		if got := benchenv.ForcedCollections() - before; got != wantForced {
			t.Errorf("%s: %d collections forced, want %d", name, got, wantForced)
		}
	}
	for _, name := range st.Catalogs() {
		c.mark(name)
	}
	synced("first load", 1)
	entries, _ := c.snapshot()
	loaded := len(entries)

	editCatalog(t, mainDir, nil, newPackage("zeta-new", "1.0.0")...)
	index("main", mainDir)
	synced("a changed package", 1)

	index("other", filepath.Join("testdata", "other"))
	synced("a new catalog", 1)

	if err := st.Remove("other"); err != nil {
		t.Fatal(err)
	}
	synced("a removal", 0)
	if entries, _ = c.snapshot(); len(entries) != loaded+1 {
		t.Fatalf("%d manifests after the removal, want %d", len(entries), loaded+1)
	}
}
