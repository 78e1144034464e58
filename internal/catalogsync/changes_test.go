package catalogsync_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// TestSyncReportsChanges: a sync that swaps in edited content says which
// packages changed, as an independent diff finds them, and counts them by
// kind; the first index and a sync of the same content report none.
func TestSyncReportsChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e := newEnv(t, catalogsync.Options{Metrics: reg})
	e.svc.Set(catalogsync.Spec{Name: "c", Fetcher: catalogsync.DirFetcher{Path: dir}})
	ctx := context.Background()
	for _, what := range []string{"the first index", "the same content"} {
		res, err := e.svc.Sync(ctx, "c", nil)
		if err != nil || res.Changes != nil {
			t.Fatalf("sync of %s: changes %+v, %v; want none", what, res.Changes, err)
		}
	}

	before := fbcfacts.Load(t, dir)
	blobs, _ := fbcchange.Edit(t, before)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	fbcchange.Write(t, dir, blobs, fbcchange.PerPackage)
	want := fbcchange.Diff(t, before, fbcfacts.Load(t, dir))
	res, err := e.svc.Sync(ctx, "c", nil)
	if err != nil || res.Changes == nil {
		t.Fatalf("sync of edited content: changes %+v, %v", res.Changes, err)
	}
	var changed []string
	for _, c := range res.Changes.Changed {
		changed = append(changed, c.Package)
	}
	var wantChanged []string
	for pkg := range want.Changed {
		wantChanged = append(wantChanged, pkg)
	}
	slices.Sort(wantChanged)
	if !slices.Equal(res.Changes.Added, want.Added) || !slices.Equal(res.Changes.Removed, want.Removed) || !slices.Equal(changed, wantChanged) {
		t.Errorf("changes = %v %v %v, want %v %v %v", res.Changes.Added, res.Changes.Removed, changed, want.Added, want.Removed, wantChanged)
	}

	counts := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "catalogd_package_changes_total" {
			for _, m := range f.GetMetric() {
				counts[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if counts["added"] != float64(len(want.Added)) || counts["removed"] != float64(len(want.Removed)) || counts["changed"] != float64(len(want.Changed)) {
		t.Errorf("catalogd_package_changes_total = %v, want added %d removed %d changed %d", counts, len(want.Added), len(want.Removed), len(want.Changed))
	}
}
