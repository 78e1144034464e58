package daemon

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/apivalidate"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

func netListen(t *testing.T) (net.Listener, error) {
	t.Helper()
	return net.Listen("tcp", "127.0.0.1:0")
}

// TestSyncKeepsLastGoodIndex walks one catalog directory through a good
// edit, a broken one and its fix, with a real Store and Registry behind a
// real API server, as --watch does on each change.
func TestSyncKeepsLastGoodIndex(t *testing.T) {
	dir := copyDemo(t)
	facts := fbcfacts.Load(t, dir)
	log := testr.New(t)
	store, reg, svc := newSyncService(t, log)
	svc.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.DirFetcher{Path: dir}})
	if svc.Serving("demo") {
		t.Fatal("before the first sync: Serving, want Pending")
	}

	ln, err := netListen(t)
	if err != nil {
		t.Fatal(err)
	}
	handler := httpapi.New(reg, store, httpapi.Options{Log: log})
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	api := apivalidate.NewClient(t, "http://"+ln.Addr().String())
	ctx := context.Background()
	extra := filepath.Join(dir, "extra", "catalog.json")

	var wantPackages []string
	for p := range facts.Packages {
		wantPackages = append(wantPackages, p)
	}
	slices.Sort(wantPackages)

	steps := []struct {
		name string
		edit func(t *testing.T)
		// wantErr, when set, is part of the error the sync must fail with.
		wantErr     string
		wantRebuilt bool
		// wantPackages is what the package list must answer afterwards.
		wantPackages []string
	}{
		{
			name:         "first index",
			edit:         func(*testing.T) {},
			wantRebuilt:  true,
			wantPackages: wantPackages,
		},
		{
			name:         "unchanged",
			edit:         func(*testing.T) {},
			wantPackages: wantPackages,
		},
		{
			name:         "good edit is swapped in",
			edit:         func(t *testing.T) { writeFile(t, extra, extraPackage) },
			wantRebuilt:  true,
			wantPackages: sortedWith(wantPackages, "extra"),
		},
		{
			name:         "broken JSON keeps the last good index",
			edit:         func(t *testing.T) { writeFile(t, extra, brokenJSON) },
			wantErr:      "extra/catalog.json",
			wantPackages: sortedWith(wantPackages, "extra"),
		},
		{
			name:         "still broken after another broken edit",
			edit:         func(t *testing.T) { writeFile(t, filepath.Join(dir, "more.yaml"), "schema: [unclosed\n") },
			wantErr:      "index catalog",
			wantPackages: sortedWith(wantPackages, "extra"),
		},
		{
			name: "fix clears the error",
			edit: func(t *testing.T) {
				if err := os.Remove(filepath.Join(dir, "more.yaml")); err != nil {
					t.Fatal(err)
				}
				writeFile(t, extra, extraPackage)
			},
			// Back to the content of the live index: nothing to rebuild,
			// but the error is gone.
			wantPackages: sortedWith(wantPackages, "extra"),
		},
		{
			name: "removing the package is swapped in",
			edit: func(t *testing.T) {
				if err := os.RemoveAll(filepath.Dir(extra)); err != nil {
					t.Fatal(err)
				}
			},
			wantRebuilt:  true,
			wantPackages: wantPackages,
		},
	}
	lastDigest := ""
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.edit(t)
			res, err := svc.Sync(ctx, "demo", nil)
			if step.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), step.wantErr) {
					t.Fatalf("sync = %v; want an error containing %q", err, step.wantErr)
				}
			} else if err != nil {
				t.Fatalf("sync: %v", err)
			}
			if err == nil && res.Rebuilt != step.wantRebuilt {
				t.Errorf("rebuilt = %v, want %v", res.Rebuilt, step.wantRebuilt)
			}

			detail := getCatalog(t, api, "demo")
			summary := listCatalogs(t, api)["demo"]
			if detail.State != "Serving" || summary.State != "Serving" {
				t.Errorf("state: detail %s, list %s; want Serving", detail.State, summary.State)
			}
			for where, got := range map[string]string{"/catalogs/demo": detail.LastError, "/catalogs": summary.LastError} {
				if step.wantErr == "" && got != "" {
					t.Errorf("%s lastError = %q, want none", where, got)
				}
				if step.wantErr != "" && !strings.Contains(got, step.wantErr) {
					t.Errorf("%s lastError = %q, want it to contain %q", where, got, step.wantErr)
				}
			}
			if got := packageNames(t, api, "demo"); !slices.Equal(got, step.wantPackages) {
				t.Errorf("packages = %v, want %v", got, step.wantPackages)
			}
			if changed := detail.ResolvedDigest != lastDigest; changed != step.wantRebuilt {
				t.Errorf("resolvedDigest %s → %s; want a change: %v", lastDigest, detail.ResolvedDigest, step.wantRebuilt)
			}
			lastDigest = detail.ResolvedDigest
		})
	}
}

func sortedWith(names []string, more ...string) []string {
	out := slices.Concat(names, more)
	slices.Sort(out)
	return out
}

// TestFirstSyncFailureStaysPending checks a catalog that never indexed: it
// is listed as Pending with the reason, and answers 503 meanwhile.
func TestFirstSyncFailureStaysPending(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "catalog.json"), brokenJSON)
	log := testr.New(t)
	_, reg, svc := newSyncService(t, log)
	svc.Set(catalogsync.Spec{Name: "broken", Fetcher: catalogsync.DirFetcher{Path: dir}})
	if _, err := svc.Sync(context.Background(), "broken", nil); err == nil {
		t.Fatal("sync of broken JSON succeeded")
	}
	c, _ := reg.Get("broken")
	if svc.Serving("broken") || !strings.Contains(c.LastError, "catalog.json") {
		t.Errorf("after a failed first sync: %+v; want Pending with the reason", c)
	}
}

// newSyncService is an empty index store, closed when the test ends, an
// empty catalog table, and a sync service keeping the one in the other.
func newSyncService(t *testing.T, log logr.Logger) (*store.Store, *catalogs.Table, *catalogsync.Service) {
	t.Helper()
	indexes, err := store.New(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { indexes.Close() })
	table := catalogs.NewTable()
	return indexes, table, catalogsync.New(catalogsync.Options{Store: indexes, Table: table, Log: log})
}
