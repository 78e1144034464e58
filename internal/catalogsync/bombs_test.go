package catalogsync_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/registrytest"
)

// TestBombImagesAreRefusedOnce syncs an image whose layer holds the demo
// and 40 MiB of a shape of issue 18 that a catalog may not hold (more
// than the limit per blob, for the string): the sync
// is refused for the file, within a heap that does not grow with it, and
// the digest is remembered: a retry resolves the tag and pulls nothing,
// and lastError keeps the reason.
func TestBombImagesAreRefusedOnce(t *testing.T) {
	const size = 40 << 20
	reg := registrytest.New(t)
	for _, bomb := range fbcgen.Bombs() {
		if bomb.Refused == "" {
			continue
		}
		t.Run(bomb.Shape, func(t *testing.T) {
			repoTag := "bombs/" + bomb.Shape + ":latest"
			reg.PushCatalog(t, repoTag, demoDir, registrytest.PushOptions{Extra: []registrytest.Entry{
				registrytest.File("configs/zz-"+bomb.File, string(bomb.Bytes(size))),
			}})
			e := newEnv(t, catalogsync.Options{})
			e.svc.Set(catalogsync.Spec{Name: "c", Fetcher: imageFetcher(t, reg, repoTag)})
			ctx := context.Background()

			var first error
			peak := benchenv.PeakHeapMiB(func() { _, first = e.svc.Sync(ctx, "c", nil) })
			if err := bomb.Check(first); err != nil || !catalogsync.IsContentError(first) {
				t.Fatalf("sync: %v; want a content error", first)
			}
			t.Logf("%d MiB of %s: peak heap %.1f MiB", size>>20, bomb.Shape, peak)
			if peak > 90 {
				t.Errorf("peak heap %.1f MiB syncing %d MiB of %s; want at most 90 MiB", peak, size>>20, bomb.Shape)
			}
			reg.Reset()
			for range 3 {
				if _, err := e.svc.Sync(ctx, "c", nil); err == nil || err.Error() != first.Error() {
					t.Errorf("retry: %v; want the first error again", err)
				}
			}
			if c := reg.Counts(); c.BlobGets != 0 || c.ManifestHeads+c.ManifestGets < 3 {
				t.Errorf("three retries: %+v; want the tag resolved each time and nothing pulled", c)
			}
			if c, _ := e.table.Get("c"); !strings.Contains(c.LastError, bomb.Refused) {
				t.Errorf("lastError %q; want the reason: %q", c.LastError, bomb.Refused)
			}
		})
	}
}

// TestBombDirectoryIsRefusedOnce is TestBombImagesAreRefusedOnce for a
// directory: its digest is taken again on every retry (reading it is the
// only way to know it), but content refused under that digest is not
// indexed again, and lastError keeps the reason.
func TestBombDirectoryIsRefusedOnce(t *testing.T) {
	bomb := fbcgen.Bombs()[0]
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	if err := bomb.Write(filepath.Join(dir, "zz-"+bomb.File), 16<<20); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e := newEnv(t, catalogsync.Options{Metrics: reg})
	e.svc.Set(catalogsync.Spec{Name: "c", Fetcher: catalogsync.DirFetcher{Path: dir}})
	ctx := context.Background()
	_, first := e.svc.Sync(ctx, "c", nil)
	if err := bomb.Check(first); err != nil || !catalogsync.IsContentError(first) {
		t.Fatalf("sync: %v; want a content error", first)
	}
	for range 3 {
		if _, err := e.svc.Sync(ctx, "c", nil); err == nil || err.Error() != first.Error() {
			t.Errorf("retry: %v; want the first error again", err)
		}
	}
	if n := builds(t, reg); n != 1 {
		t.Errorf("%d index builds after four syncs of the same content; want 1", n)
	}
	if c, _ := e.table.Get("c"); !strings.Contains(c.LastError, bomb.Refused) {
		t.Errorf("lastError %q; want the reason: %q", c.LastError, bomb.Refused)
	}

	// Changed content is tried at once.
	if err := os.Remove(filepath.Join(dir, "zz-"+bomb.File)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Sync(ctx, "c", nil); err != nil {
		t.Errorf("sync after the fix: %v", err)
	}
	if c, _ := e.table.Get("c"); !e.svc.Serving("c") || c.LastError != "" {
		t.Errorf("table after the fix: %+v; want Serving without an error", c)
	}
}

// builds is how many index builds the service has run, from its metrics.
func builds(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "catalogd_index_build_duration_seconds" {
			var n uint64
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	t.Fatal("no catalogd_index_build_duration_seconds metric")
	return 0
}
