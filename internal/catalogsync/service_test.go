package catalogsync_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/registrytest"
)

const demoDir = "../../test/testdata/demo"

// env is a real index store, a table and a service over them.
type env struct {
	store *store.Store
	table *catalogs.Table
	svc   *catalogsync.Service
}

func newEnv(t *testing.T, opts catalogsync.Options) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir(), opts)
}

// newEnvIn is newEnv with the store in dataDir, as a restart finds it.
func newEnvIn(t *testing.T, dataDir string, opts catalogsync.Options) *env {
	t.Helper()
	indexes, err := store.New(dataDir, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { indexes.Close() })
	table := catalogs.NewTable()
	opts.Store, opts.Table = indexes, table
	if opts.Log.GetSink() == nil {
		opts.Log = testr.New(t)
	}
	return &env{store: indexes, table: table, svc: catalogsync.New(opts)}
}

// run runs the service's loops until the test ends.
func (e *env) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.svc.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// brokenCatalog is the demo with one file that does not parse.
func brokenCatalog(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "broken")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "zz-broken.json"), []byte(`{"schema":"olm.bundle","name":`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func imageFetcher(t *testing.T, reg *registrytest.Registry, repoTag string) catalogsync.ImageFetcher {
	t.Helper()
	u, err := unpack.New(unpack.Options{InsecureRegistries: []string{reg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.Host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	return catalogsync.ImageFetcher{Ref: ref, Unpacker: u, TempDir: t.TempDir()}
}

// TestBadDigestIsNotPulledAgain: content that failed to index is not
// downloaded again while the tag still points at it; a new push is.
func TestBadDigestIsNotPulledAgain(t *testing.T) {
	reg := registrytest.New(t)
	broken := reg.PushCatalog(t, "catalogs/demo:latest", brokenCatalog(t), registrytest.PushOptions{})
	e := newEnv(t, catalogsync.Options{})
	e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: imageFetcher(t, reg, "catalogs/demo:latest")})
	ctx := context.Background()

	_, first := e.svc.Sync(ctx, "demo", nil)
	if first == nil || !strings.Contains(first.Error(), "zz-broken.json") {
		t.Fatalf("first sync: %v; want an error naming the broken file", first)
	}
	if !catalogsync.IsContentError(first) {
		t.Errorf("%v is not a content error", first)
	}
	reg.Reset()
	_, again := e.svc.Sync(ctx, "demo", nil)
	if again == nil || again.Error() != first.Error() {
		t.Errorf("second sync: %v; want the same error as the first", again)
	}
	if c := reg.Counts(); c.BlobGets != 0 || c.ManifestHeads+c.ManifestGets == 0 {
		t.Errorf("second sync of the same digest: %+v; want the tag resolved and no blob fetched", c)
	}
	if c, _ := e.table.Get("demo"); e.svc.Serving("demo") || !strings.Contains(c.LastError, "zz-broken.json") {
		t.Errorf("table: %+v; want Pending with the error", c)
	}

	fixed := reg.PushCatalog(t, "catalogs/demo:latest", demoDir, registrytest.PushOptions{})
	res, err := e.svc.Sync(ctx, "demo", nil)
	if err != nil || res.Ref != fixed || res.Ref == broken || !res.Rebuilt {
		t.Fatalf("sync after the fix: %+v, %v; want %s indexed", res, err, fixed)
	}
	if c, _ := e.table.Get("demo"); !e.svc.Serving("demo") || c.LastError != "" {
		t.Errorf("table after the fix: %+v; want Serving without an error", c)
	}
}

// TestBackoffIsCappedByThePollInterval is the table of waits after failures.
func TestBackoffIsCappedByThePollInterval(t *testing.T) {
	dir := brokenCatalog(t)
	e := newEnv(t, catalogsync.Options{MinBackoff: time.Second, MaxBackoff: time.Hour})
	e.svc.Set(catalogsync.Spec{Name: "broken", Fetcher: catalogsync.DirFetcher{Path: dir}})
	if d := e.svc.Backoff("broken", time.Minute); d != 0 {
		t.Errorf("backoff before any failure: %s, want 0", d)
	}
	for failures := 1; failures <= 14; failures++ {
		if _, err := e.svc.Sync(context.Background(), "broken", nil); err == nil {
			t.Fatal("a broken catalog synced")
		}
		// Doubling from MinBackoff up to MaxBackoff, plus up to 10% jitter,
		// and never past the poll interval.
		base := min(time.Second<<(failures-1), time.Hour)
		for _, tc := range []struct {
			poll, lo, hi time.Duration
		}{
			{poll: 0, lo: base, hi: base + base/10},
			{poll: time.Minute, lo: min(base, time.Minute), hi: min(base+base/10, time.Minute)},
		} {
			if got := e.svc.Backoff("broken", tc.poll); got < tc.lo || got > tc.hi {
				t.Errorf("after %d failures, poll %s: backoff %s, want within [%s, %s]", failures, tc.poll, got, tc.lo, tc.hi)
			}
		}
	}
}

// TestLoopPicksUpAFixWithinThePollInterval runs the service's loop on a tag
// that is broken long enough for the backoff to grow past the poll
// interval, then pushes a fix: it is served without waiting the backoff out.
func TestLoopPicksUpAFixWithinThePollInterval(t *testing.T) {
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:latest", brokenCatalog(t), registrytest.PushOptions{})
	e := newEnv(t, catalogsync.Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Hour})
	const poll = 300 * time.Millisecond
	e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: imageFetcher(t, reg, "catalogs/demo:latest"), PollInterval: poll})
	e.svc.MarkLoaded()
	e.run(t)
	// Enough failures in a row that an uncapped backoff (20 ms doubling)
	// would now wait for minutes.
	await.True(t, "a backoff past the poll interval", syncWait, func() bool { return e.svc.Backoff("demo", 0) > 10*time.Second })
	// Its content cannot index: Failed, which does not keep the replica
	// out of service (see TestFailedState).
	if c, _ := e.table.Get("demo"); c.State(false) != catalogs.Failed {
		t.Errorf("a tag of content that cannot index is %s, want Failed", c.State(false))
	}
	if err := e.svc.Ready(); err != nil {
		t.Errorf("not ready while the only catalog is Failed: %v", err)
	}
	fixed := reg.PushCatalog(t, "catalogs/demo:latest", demoDir, registrytest.PushOptions{})
	await.True(t, "the fix to be served", syncWait, func() bool {
		info, ok := e.store.Info("demo")
		return ok && info.SourceRef == fixed
	})
	if err := e.svc.Ready(); err != nil {
		t.Errorf("not ready once the catalog serves: %v", err)
	}
}

// syncWait is how long a test waits for the sync loop: far longer than
// the poll interval the tests expect, far shorter than the backoff they
// rule out.
const syncWait = 10 * time.Second

// TestReady is the readiness of a replica as its catalogs come and go.
func TestReady(t *testing.T) {
	e := newEnv(t, catalogsync.Options{})
	if err := e.svc.Ready(); err == nil || !strings.Contains(err.Error(), "not been loaded") {
		t.Errorf("before the list is loaded: %v", err)
	}
	e.svc.Set(catalogsync.Spec{Name: "later"}) // no source yet: not expected to serve
	e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.DirFetcher{Path: mustAbs(t, demoDir)}})
	e.svc.MarkLoaded()
	if err := e.svc.Ready(); err == nil || !strings.Contains(err.Error(), "demo") || strings.Contains(err.Error(), "later") {
		t.Errorf("before demo is indexed: %v; want demo named, later not", err)
	}
	if _, err := e.svc.Sync(context.Background(), "demo", nil); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Ready(); err != nil {
		t.Errorf("after demo is indexed: %v", err)
	}
}

// TestLastErrorIsCleaned: errors shown to clients name no path below the
// data directory and are bounded in size.
func TestLastErrorIsCleaned(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "catalogs", "huge")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200) + "/" + strings.Repeat("y", 200)
	if err := os.MkdirAll(filepath.Join(dir, long), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, long, strings.Repeat("z", 200)+string(rune('a'+i))+".json"), []byte(`{"schema":`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, catalogsync.Options{DataDir: data})
	e.svc.Set(catalogsync.Spec{Name: "huge", Fetcher: catalogsync.DirFetcher{Path: dir}})
	_, err := e.svc.Sync(context.Background(), "huge", nil)
	if err == nil {
		t.Fatal("broken catalog synced")
	}
	c, _ := e.table.Get("huge")
	if c.LastError == "" || strings.Contains(c.LastError, data) {
		t.Errorf("lastError %q names the data directory %s", c.LastError, data)
	}
	if len(c.LastError) > 2048 {
		t.Errorf("lastError is %d bytes; want at most 2048", len(c.LastError))
	}
}

// capturedLog is a logger whose lines a test reads back.
type capturedLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *capturedLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines = append(c.lines, args)
	}, funcr.Options{})
}

// has reports whether a line holds every one of parts.
func (c *capturedLog) has(parts ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestSourceMistakesAreLogged: what a directory source skips (here a file
// whose name is not UTF-8) and a catalog without a single package (a
// wrong path, most likely) are logged, through the service's logger when
// the caller's context has none, as in serve mode.
func TestSourceMistakesAreLogged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"file name not UTF-8", map[string]string{"bad\xff.json": `{"schema":`}, "not valid UTF-8"},
		{"no package", nil, "holds no package"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.files != nil {
				if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
					t.Fatal(err)
				}
			}
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var log capturedLog
			e := newEnv(t, catalogsync.Options{Log: log.logger()})
			e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.DirFetcher{Path: dir}})
			if _, err := e.svc.Sync(context.Background(), "demo", nil); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if !log.has(tc.want, `"catalog"="demo"`) {
				t.Errorf("no log line saying %q; logged:\n%s", tc.want, strings.Join(log.lines, "\n"))
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestProblemsAreReportedAndLogged: a catalog with broken packages serves,
// and each sync, rebuilt or not, reports its problems with their
// positions; the build that found them logs each.
func TestProblemsAreReportedAndLogged(t *testing.T) {
	dir := t.TempDir()
	if err := fbcgen.WritePhantomDemo(demoDir, dir); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	e := newEnv(t, catalogsync.Options{Log: log})
	e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.DirFetcher{Path: dir}})
	var found []catalogsync.Result
	for _, rebuilt := range []bool{true, false} {
		res, err := e.svc.Sync(context.Background(), "demo", nil)
		found = append(found, res)
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
		if res.Rebuilt != rebuilt {
			t.Errorf("rebuilt %v, want %v", res.Rebuilt, rebuilt)
		}
		// The phantom entries name these bundles, which do not exist.
		for _, phantom := range []string{"aurora-cache.v9.9.9", "aurora-cache.v9.9.8"} {
			found := false
			for _, p := range res.Problems {
				if strings.Contains(p.Message, phantom) && p.Package == "aurora-cache" && strings.HasPrefix(p.Position, "aurora-cache/catalog.yaml:") {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem of aurora-cache at aurora-cache/catalog.yaml names %s: %+v", phantom, res.Problems)
			}
		}
	}
	if len(found[0].Problems) != len(found[1].Problems) {
		t.Errorf("the rebuild reported %d problems, the sync after it %d", len(found[0].Problems), len(found[1].Problems))
	}
	// Only the build that found them logs them, each with its position.
	mu.Lock()
	defer mu.Unlock()
	logged := 0
	for _, l := range lines {
		if strings.Contains(l, `"msg"="catalog problem"`) {
			if !strings.Contains(l, `"position"="aurora-cache/catalog.yaml:`) {
				t.Errorf("problem logged without its position: %s", l)
			}
			logged++
		}
	}
	if logged != len(found[0].Problems) {
		t.Errorf("%d problems logged, want %d; logged:\n%s", logged, len(found[0].Problems), strings.Join(lines, "\n"))
	}
}
