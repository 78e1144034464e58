package catalogsync_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/dirtree"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/registrytest"
)

// notACatalogHint is what index says of a source whose first fault comes
// before any catalog blob (issue 34, item 9).
const notACatalogHint = "no olm.package, olm.channel or olm.bundle blob was found"

// notACatalog writes into dir what docs/ holds: prose, not a catalog.
func notACatalog(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "architecture.md"), []byte("# Title\n\nSome prose: with a colon.\n- a list: too\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// archiveServer serves the demo catalog as demo.tar.gz, or answers status
// when it is not 0.
func archiveServer(t *testing.T, status int) string {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "demo.tar.gz")
	dirtree.TarGz(t, archive, demoDir)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status != 0 {
			http.Error(w, "try later", status)
			return
		}
		http.ServeFile(w, r, archive)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/demo.tar.gz"
}

func httpFetcher(t *testing.T, spec source.HTTP) catalogsync.Fetcher {
	t.Helper()
	u, err := unpack.New(unpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := httpsource.New(httpsource.Options{Extractor: u})
	if err != nil {
		t.Fatal(err)
	}
	return c.Fetcher(spec, httpsource.Auth{}, t.TempDir())
}

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// stateGauge is catalogd_catalogs{state} as the service reports it.
func stateGauge(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "catalogd_catalogs" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestFailedState: a catalog with nothing to serve whose content cannot
// index is Failed, lastError saying why; one whose failure a retry may get
// past (the network, a server's 5xx) stays Pending; one that has a live
// index keeps Serving it, with lastError. The state gauge counts each. (A
// registry's 5xx: TestFailedUntilTheSourceChanges, since each costs the
// client's retries, seconds.)
func TestFailedState(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fetcher is the catalog's source. When breakIt is set, the source
		// first holds good content, which is indexed, and breakIt then
		// spoils it.
		fetcher func(t *testing.T) (f catalogsync.Fetcher, breakIt func())
		want    catalogs.State
		wantErr string
	}{
		{
			name: "a directory that is not a catalog",
			fetcher: func(t *testing.T) (catalogsync.Fetcher, func()) {
				dir := t.TempDir()
				notACatalog(t, dir)
				return catalogsync.DirFetcher{Path: dir}, nil
			},
			want: catalogs.Failed, wantErr: notACatalogHint,
		},
		{
			name: "a catalog with a file that does not parse",
			fetcher: func(t *testing.T) (catalogsync.Fetcher, func()) {
				return catalogsync.DirFetcher{Path: brokenCatalog(t)}, nil
			},
			want: catalogs.Failed, wantErr: "zz-broken.json",
		},
		{
			name: "an archive whose bytes are not the pinned sha256",
			fetcher: func(t *testing.T) (catalogsync.Fetcher, func()) {
				return httpFetcher(t, source.HTTP{URL: archiveServer(t, 0), SHA256: strings.Repeat("0", 64)}), nil
			},
			want: catalogs.Failed, wantErr: "checksum mismatch",
		},
		{
			name: "an archive server answering 503",
			fetcher: func(t *testing.T) (catalogsync.Fetcher, func()) {
				return httpFetcher(t, source.HTTP{URL: archiveServer(t, http.StatusServiceUnavailable)}), nil
			},
			want: catalogs.Pending, wantErr: "503",
		},
		{
			name: "a registry nothing listens on",
			fetcher: func(t *testing.T) (catalogsync.Fetcher, func()) {
				host := refusedAddr(t)
				u, err := unpack.New(unpack.Options{InsecureRegistries: []string{host}})
				if err != nil {
					t.Fatal(err)
				}
				ref, err := name.ParseReference(host + "/catalogs/demo:latest")
				if err != nil {
					t.Fatal(err)
				}
				return catalogsync.ImageFetcher{Ref: ref, Unpacker: u, TempDir: t.TempDir()}, nil
			},
			want: catalogs.Pending, wantErr: "connection refused",
		},
		{
			name: "a live index whose directory is no longer a catalog",
			fetcher: func(t *testing.T) (catalogsync.Fetcher, func()) {
				dir := filepath.Join(t.TempDir(), "demo")
				if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
					t.Fatal(err)
				}
				return catalogsync.DirFetcher{Path: dir}, func() {
					if err := os.RemoveAll(dir); err != nil {
						t.Fatal(err)
					}
					notACatalog(t, dir)
				}
			},
			want: catalogs.Serving, wantErr: notACatalogHint,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metrics := prometheus.NewRegistry()
			e := newEnv(t, catalogsync.Options{Metrics: metrics})
			f, breakIt := tc.fetcher(t)
			e.svc.Set(catalogsync.Spec{Name: "c", Fetcher: f})
			ctx := context.Background()
			var live string
			if breakIt != nil {
				if _, err := e.svc.Sync(ctx, "c", nil); err != nil {
					t.Fatalf("good content: %v", err)
				}
				info, _ := e.store.Info("c")
				live = info.Digest
				breakIt()
			}
			if _, err := e.svc.Sync(ctx, "c", nil); err == nil {
				t.Fatal("the sync succeeded")
			}
			c, _ := e.table.Get("c")
			_, indexed := e.store.Info("c")
			if got := c.State(indexed); got != tc.want || !strings.Contains(c.LastError, tc.wantErr) {
				t.Errorf("state %s, lastError %q; want %s with an error saying %q", got, c.LastError, tc.want, tc.wantErr)
			}
			if info, _ := e.store.Info("c"); info.Digest != live {
				t.Errorf("serves %q after the failure, want %q", info.Digest, live)
			}
			// Only a catalog that may still index keeps the replica
			// unready: a Failed one waits for a new source, which may
			// never come, and must not take the others out of service.
			e.svc.MarkLoaded()
			if err := e.svc.Ready(); (err == nil) != (tc.want != catalogs.Pending) {
				t.Errorf("%s catalog: Ready() = %v", tc.want, err)
			}
			gauge := stateGauge(t, metrics)
			for _, s := range []catalogs.State{catalogs.Serving, catalogs.Pending, catalogs.Failed, catalogs.Unavailable} {
				want := 0.0
				if s == tc.want {
					want = 1
				}
				if n, ok := gauge[string(s)]; !ok || n != want {
					t.Errorf("catalogd_catalogs{state=%q} = %v (reported: %v), want %v", s, n, ok, want)
				}
			}
		})
	}
}

// TestFailedUntilTheSourceChanges is `catalogd serve --catalog x=docs
// --watch`: the loop finds a directory that is not a catalog, the catalog
// is Failed with the reason, said once in the log however often the loop
// looks again; a catalog written into the directory (the watch triggers
// the loop) makes it serve. Then, under a tag: Failed while the tag names
// content that cannot index, Pending when the registry cannot be asked
// (the tag may have moved), Serving once a fix is pushed.
func TestFailedUntilTheSourceChanges(t *testing.T) {
	t.Run("a directory, fixed under --watch", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "docs")
		notACatalog(t, dir)
		var log capturedLog
		e := newEnv(t, catalogsync.Options{Log: log.logger(), MinBackoff: time.Millisecond, MaxBackoff: time.Hour})
		e.svc.Set(catalogsync.Spec{Name: "x", Fetcher: catalogsync.DirFetcher{Path: dir}})
		e.svc.MarkLoaded()
		e.run(t)
		// Five failed looks in a row: a backoff of 16 ms or more.
		await.True(t, "five failed syncs", syncWait, func() bool { return e.svc.Backoff("x", 0) >= 16*time.Millisecond })
		c, _ := e.table.Get("x")
		if got := c.State(false); got != catalogs.Failed || !strings.Contains(c.LastError, notACatalogHint) || e.svc.Serving("x") {
			t.Errorf("state %s, lastError %q; want Failed, saying %q", got, c.LastError, notACatalogHint)
		}
		log.mu.Lock()
		failed := 0
		for _, l := range log.lines {
			if strings.Contains(l, "sync failed") && strings.Contains(l, notACatalogHint) {
				failed++
				// It is not fetched again until it changes: no "will retry".
				if !strings.Contains(l, "waiting for the source to change") {
					t.Errorf("the failure's line does not say only a change of source helps: %s", l)
				}
			}
		}
		log.mu.Unlock()
		if failed != 1 {
			t.Errorf("%d log lines say the sync failed, want 1", failed)
		}

		// The catalog is moved in whole, so that no look of the loop finds
		// half of it: a half-copied catalog is a valid, smaller one.
		fixed := filepath.Join(t.TempDir(), "fixed")
		if err := os.CopyFS(fixed, os.DirFS(demoDir)); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(fixed, dir); err != nil {
			t.Fatal(err)
		}
		e.svc.Trigger("x")
		// The store swaps the index in just before the table hears of it.
		await.True(t, "the fixed directory to serve", syncWait, func() bool {
			c, _ := e.table.Get("x")
			return e.svc.Serving("x") && c.LastError == ""
		})
		c, _ = e.table.Get("x")
		info, _ := e.store.Info("x")
		if info.Digest != dirDigest(t, dir) || c.LastError != "" || c.ContentFailed {
			t.Errorf("after the fix: %+v, serving %s; want the directory's digest %s, no error", c, info.Digest, dirDigest(t, dir))
		}
		if want, got := len(fbcfacts.Load(t, demoDir).Packages), packageCount(t, e, "x"); got != want {
			t.Errorf("%d packages served, the demo has %d", got, want)
		}
	})

	t.Run("a tag, the registry down, a fix pushed", func(t *testing.T) {
		reg := registrytest.New(t)
		reg.PushCatalog(t, "catalogs/demo:latest", brokenCatalog(t), registrytest.PushOptions{})
		e := newEnv(t, catalogsync.Options{})
		e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: imageFetcher(t, reg, "catalogs/demo:latest")})
		ctx := context.Background()
		state := func() (catalogs.State, string) {
			c, _ := e.table.Get("demo")
			_, indexed := e.store.Info("demo")
			return c.State(indexed), c.LastError
		}
		for _, step := range []struct {
			name    string
			before  func()
			want    catalogs.State
			wantErr string
		}{
			{"the tag names broken content", func() {}, catalogs.Failed, "zz-broken.json"},
			{"the same content again, remembered", func() {}, catalogs.Failed, "zz-broken.json"},
			{"the registry down", func() {
				reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
					http.Error(w, "down", http.StatusServiceUnavailable)
					return true
				})
			}, catalogs.Pending, "503"},
			{"back, still the broken content", func() { reg.Intercept(nil) }, catalogs.Failed, "zz-broken.json"},
			{"a fix pushed", func() { reg.PushCatalog(t, "catalogs/demo:latest", demoDir, registrytest.PushOptions{}) }, catalogs.Serving, ""},
		} {
			step.before()
			_, err := e.svc.Sync(ctx, "demo", nil)
			got, lastError := state()
			if got != step.want || (step.wantErr == "") != (err == nil) || !strings.Contains(lastError, step.wantErr) || (step.wantErr == "" && lastError != "") {
				t.Errorf("%s: state %s, lastError %q, sync error %v; want %s with an error saying %q", step.name, got, lastError, err, step.want, step.wantErr)
			}
		}
	})
}

// packageCount is how many packages the live index of catalog serves.
func packageCount(t *testing.T, e *env, catalog string) int {
	t.Helper()
	snap, err := e.store.Acquire(catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	counts, err := snap.Catalog.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return counts.Packages
}
