package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/go-logr/logr/testr"
	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
)

// tinyCatalog is an FBC with one package whose single channel holds n
// bundles, each replacing the previous one.
func tinyCatalog(pkg string, n int) fstest.MapFS {
	var b strings.Builder
	fmt.Fprintf(&b, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
	var entries []string
	for i := 1; i <= n; i++ {
		e := fmt.Sprintf(`{"name":"%s.v1.0.%d"`, pkg, i)
		if i > 1 {
			e += fmt.Sprintf(`,"replaces":"%s.v1.0.%d"`, pkg, i-1)
		}
		entries = append(entries, e+"}")
		fmt.Fprintf(&b, `{"schema":"olm.bundle","name":"%s.v1.0.%d","package":%q,"image":"example.com/%s:1.0.%d",`+
			`"properties":[{"type":"olm.package","value":{"packageName":%q,"version":"1.0.%d"}}]}`+"\n",
			pkg, i, pkg, pkg, i, pkg, i)
	}
	fmt.Fprintf(&b, `{"schema":"olm.channel","name":"stable","package":%q,"entries":[%s]}`+"\n", pkg, strings.Join(entries, ","))
	return fstest.MapFS{pkg + "/catalog.json": {Data: []byte(b.String())}}
}

func newTestStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := New(dir, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func countBundles(t *testing.T, snap *Snapshot) int {
	t.Helper()
	counts, err := snap.Catalog.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return counts.Bundles
}

func mustUpdate(t *testing.T, s *Store, catalog string, src index.Content) Info {
	t.Helper()
	info, _, _, err := s.Update(context.Background(), catalog, src)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// dirEntries lists a catalog's index directory, so tests can tell exactly which
// files a swap leaves behind.
func dirEntries(t *testing.T, dir, catalog string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, catalog))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// liveFiles are the entries of a catalog's directory when the index at
// path is live and nothing else is left, in name order.
func liveFiles(path string) []string {
	want := []string{currentLink, HistoryFile}
	for _, f := range index.Files(path) {
		want = append(want, filepath.Base(f))
	}
	return want
}

// segmentFile returns the first segment file of the index at path whose
// name ends with ext.
func segmentFile(t *testing.T, path, ext string) string {
	t.Helper()
	for _, name := range dirEntries(t, filepath.Dir(path), filepath.Base(index.ContentDir(path))) {
		if strings.HasSuffix(name, ext) {
			return filepath.Join(index.ContentDir(path), name)
		}
	}
	t.Fatalf("index %s has no segment file %s", path, ext)
	return ""
}

// contentSize reads the whole content of snap's index.
func contentSize(t *testing.T, snap *Snapshot) int64 {
	t.Helper()
	n, err := io.Copy(io.Discard, snap.Content())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSwapOnSuccess(t *testing.T) {
	s, dir := newTestStore(t)
	first := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 3), Ref: "v1", Digest: "sha256:aaa"})

	// A reader that began before the rebuild keeps the old data throughout.
	old, err := s.Acquire("demo")
	if err != nil {
		t.Fatal(err)
	}
	second := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 5), Ref: "v2", Digest: "sha256:bbb"})
	if got := countBundles(t, old); got != 3 {
		t.Errorf("old reader sees %d bundles after the swap, want 3", got)
	}
	if got := contentSize(t, old); got != first.AllBytes || got == second.AllBytes {
		t.Errorf("old reader's content has %d bytes after the swap, want the old %d (the new has %d)", got, first.AllBytes, second.AllBytes)
	}
	if _, err := os.Stat(first.Path); err != nil {
		t.Errorf("old file removed while a reader holds it: %v", err)
	}

	fresh, err := s.Acquire("demo")
	if err != nil {
		t.Fatal(err)
	}
	if got := countBundles(t, fresh); got != 5 {
		t.Errorf("new reader sees %d bundles, want 5", got)
	}
	if fresh.Info.Digest != "sha256:bbb" || fresh.Info.SourceRef != "v2" {
		t.Errorf("new reader info = %+v", fresh.Info)
	}
	fresh.Release()

	old.Release()
	for _, f := range index.Files(first.Path) {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("old file still there after its last reader left: %v", err)
		}
	}
	files := dirEntries(t, dir, "demo")
	want := liveFiles(second.Path)
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Errorf("catalog directory holds %v, want %v", files, want)
	}
}

func TestFailedRebuildKeepsServing(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bad := tinyCatalog("foo", 4)
	bad["foo/zz-broken.json"] = &fstest.MapFile{Data: []byte(`{"schema":"olm.bundle","name":`)}
	noSchema := tinyCatalog("foo", 4)
	noSchema["foo/zz-noschema.json"] = &fstest.MapFile{Data: []byte(`{"name":"orphan"}`)}
	badYAML := tinyCatalog("foo", 4)
	badYAML["foo/zz-broken.yaml"] = &fstest.MapFile{Data: []byte("schema: olm.bundle\n  name: [unclosed\n")}

	tests := []struct {
		name    string
		ctx     context.Context
		src     index.Content
		wantErr string
		invalid bool // the content itself is at fault: index.ErrInvalidCatalog
	}{
		{"bad JSON blob", context.Background(), index.Content{FS: bad, Digest: "sha256:bad"}, "zz-broken.json", true},
		{"blob without schema", context.Background(), index.Content{FS: noSchema, Digest: "sha256:noschema"}, "without a schema", true},
		{"bad YAML", context.Background(), index.Content{FS: badYAML, Digest: "sha256:yaml"}, "zz-broken.yaml", true},
		{"cancelled context", cancelled, index.Content{FS: tinyCatalog("foo", 4), Digest: "sha256:cancel"}, "context canceled", false},
		{"missing digest", context.Background(), index.Content{FS: tinyCatalog("foo", 4)}, "no digest", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newTestStore(t)
			live := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 3), Digest: "sha256:good"})

			_, _, rebuilt, err := s.Update(tt.ctx, "demo", tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Update error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if rebuilt {
				t.Error("a failed update reported a rebuild")
			}
			if errors.Is(err, index.ErrInvalidCatalog) != tt.invalid {
				t.Errorf("errors.Is(err, index.ErrInvalidCatalog) = %v, want %v", !tt.invalid, tt.invalid)
			}
			snap, err := s.Acquire("demo")
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Release()
			if snap.Info.Digest != "sha256:good" || countBundles(t, snap) != 3 {
				t.Errorf("live index changed: %+v", snap.Info)
			}
			files := dirEntries(t, dir, "demo")
			if want := liveFiles(live.Path); strings.Join(files, ",") != strings.Join(want, ",") {
				t.Errorf("catalog directory holds %v after a failed build, want %v", files, want)
			}
		})
	}
}

func TestSameDigestIsNoOp(t *testing.T) {
	s, _ := newTestStore(t)
	first := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 2), Digest: "sha256:same"})
	before, err := os.Stat(first.Path)
	if err != nil {
		t.Fatal(err)
	}
	// Different files under the same digest: the digest is what counts.
	info, _, rebuilt, err := s.Update(context.Background(), "demo", index.Content{FS: tinyCatalog("foo", 7), Digest: "sha256:same"})
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt {
		t.Error("same digest was rebuilt")
	}
	if info.Path != first.Path || !info.BuiltAt.Equal(first.BuiltAt) {
		t.Errorf("same digest gave %+v, want the live %+v", info, first)
	}
	after, err := os.Stat(first.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("same digest rewrote the file")
	}
}

func TestStoreReopensAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	live := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 2), Ref: "ref", Digest: "sha256:one"})
	mustUpdate(t, s, "gone", index.Content{FS: tinyCatalog("bar", 1), Digest: "sha256:two"})
	if err := s.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Debris of a build that was killed midway: a database, and a content
	// directory with a segment half written.
	dead := filepath.Join(dir, "demo", ".build-dead.db")
	if err := os.Mkdir(index.ContentDir(dead), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dead, filepath.Join(index.ContentDir(dead), "000000.all")} {
		if err := os.WriteFile(f, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	s2, err := New(dir, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := s2.Catalogs(); len(got) != 1 || got[0] != "demo" {
		t.Fatalf("reopened catalogs = %v, want [demo]", got)
	}
	info, ok := s2.Info("demo")
	if !ok || info.Digest != "sha256:one" || info.SourceRef != "ref" || info.Path != live.Path {
		t.Errorf("reopened info = %+v, want %+v", info, live)
	}
	if files, want := dirEntries(t, dir, "demo"), liveFiles(live.Path); !slices.Equal(files, want) {
		t.Errorf("debris not cleaned: %v, want %v", files, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Errorf("removed catalog's directory still there: %v", err)
	}
	if _, _, rebuilt, err := s2.Update(context.Background(), "demo", index.Content{FS: tinyCatalog("foo", 2), Digest: "sha256:one"}); err != nil || rebuilt {
		t.Errorf("same digest after restart: rebuilt=%v err=%v", rebuilt, err)
	}
}

// TestRecordsTheDigestOfWhatWasRead: when the content changed after its
// digest was taken, the index is named after and records the digest of what
// the build read, which is what a later comparison, also after a restart,
// must find: the digest taken before is not live.
func TestRecordsTheDigestOfWhatWasRead(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	read := func() string { return "sha256:read" }
	info := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 2), Ref: "ref", Digest: "sha256:before", ReadDigest: read})
	if info.Digest != "sha256:read" || !strings.HasPrefix(filepath.Base(info.Path), "sha256-read.") {
		t.Errorf("info %+v, want the digest sha256:read, and a file named after it", info)
	}
	s.Close()

	s2, err := New(dir, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if info, _ := s2.Info("demo"); info.Digest != "sha256:read" {
		t.Errorf("reopened info %+v, want the digest sha256:read", info)
	}
	for _, tc := range []struct {
		digest  string
		rebuilt bool
	}{{"sha256:read", false}, {"sha256:before", true}} {
		if _, _, rebuilt, err := s2.Update(context.Background(), "demo", index.Content{FS: tinyCatalog("foo", 2), Digest: tc.digest}); err != nil || rebuilt != tc.rebuilt {
			t.Errorf("update with %s after the restart: rebuilt=%v err=%v, want rebuilt=%v", tc.digest, rebuilt, err, tc.rebuilt)
		}
	}
}

func TestRemoveWaitsForReaders(t *testing.T) {
	s, dir := newTestStore(t)
	live := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 2), Digest: "sha256:one"})
	snap, err := s.Acquire("demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("demo"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire("demo"); err == nil {
		t.Error("a removed catalog can still be acquired")
	}
	if got := countBundles(t, snap); got != 2 {
		t.Errorf("reader of a removed catalog sees %d bundles, want 2", got)
	}
	snap.Release()
	if _, err := os.Stat(live.Path); !os.IsNotExist(err) {
		t.Errorf("removed index file still there after its reader left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "demo", currentLink)); !os.IsNotExist(err) {
		t.Errorf("current link still there: %v", err)
	}
}

// TestConcurrentReadersDuringRebuilds runs readers while the catalog is
// rebuilt over and over: every read must see one whole catalog (n bundles
// and an n-entry channel from the same build), never a mix or an error.
func TestConcurrentReadersDuringRebuilds(t *testing.T) {
	s, _ := newTestStore(t)
	mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 1), Digest: "sha256:1"})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				snap, err := s.Acquire("demo")
				if err != nil {
					errs <- err
					return
				}
				var bundles, entries int
				list, err := snap.Catalog.Bundles(context.Background(), "foo", "", 1<<62, -1)
				bundles = len(list)
				if err == nil {
					var ch query.Channel
					ch, err = snap.Catalog.Channel(context.Background(), query.Package{Name: "foo", DefaultChannel: "stable"}, "stable")
					entries = len(ch.Entries)
				}
				snap.Release()
				if err != nil {
					errs <- err
					return
				}
				if bundles != entries {
					errs <- fmt.Errorf("mixed read: %d bundles, %d entries", bundles, entries)
					return
				}
			}
		}()
	}
	for i := 2; i <= 12; i++ {
		mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", i), Digest: fmt.Sprintf("sha256:%d", i)})
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestUnusableIndexIsRebuilt: an index that cannot be served as it is (built
// by a different schema, a segment of its content or gzip copy missing or
// not of the size its list gives, the list missing, or an index of the
// layout before segments: a content file and a gzip copy beside the
// database) is not reused after a restart, even for the same content
// digest, and its files are removed.
func TestUnusableIndexIsRebuilt(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"other schema", func(t *testing.T, path string) {
			db, err := sqlx.Open("sqlite", index.FileURI(path, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE catalog_info SET schema_digest = 'sha256:older'`); err != nil {
				t.Fatal(err)
			}
		}},
		{"content segment missing", func(t *testing.T, path string) {
			if err := os.Remove(segmentFile(t, path, ".all")); err != nil {
				t.Fatal(err)
			}
		}},
		{"gzip segment missing", func(t *testing.T, path string) {
			if err := os.Remove(segmentFile(t, path, ".gz")); err != nil {
				t.Fatal(err)
			}
		}},
		{"content segment cut short", func(t *testing.T, path string) {
			if err := os.Truncate(segmentFile(t, path, ".all"), 10); err != nil {
				t.Fatal(err)
			}
		}},
		{"gzip segment grown", func(t *testing.T, path string) {
			f, err := os.OpenFile(segmentFile(t, path, ".gz"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte{0}); err != nil {
				t.Fatal(err)
			}
		}},
		{"segment list missing", func(t *testing.T, path string) {
			if err := os.Remove(filepath.Join(index.ContentDir(path), "segments.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"layout before segments", func(t *testing.T, path string) {
			// What the catalogd before segments wrote: the same database,
			// its content in one file and the gzip copy in another.
			if err := os.RemoveAll(index.ContentDir(path)); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{path + ".all", path + ".all.gz"} {
				if err := os.WriteFile(f, []byte("old layout"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := New(dir, testr.New(t))
			if err != nil {
				t.Fatal(err)
			}
			old := mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 2), Digest: "sha256:one"})
			s.Close()
			tt.damage(t, old.Path)

			s2, err := New(dir, testr.New(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if _, ok := s2.Info("demo"); ok {
				t.Fatal("an unusable index was reopened")
			}
			for _, f := range append(index.Files(old.Path), old.Path+".all", old.Path+".all.gz") {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("unusable index left on disk: %v", err)
				}
			}
			if _, _, rebuilt, err := s2.Update(context.Background(), "demo", index.Content{FS: tinyCatalog("foo", 2), Digest: "sha256:one"}); err != nil || !rebuilt {
				t.Errorf("same digest, unusable index: rebuilt=%v err=%v", rebuilt, err)
			}
		})
	}
}

// TestWatchSeesSwapsAndRemovals checks that a watcher is told of exactly
// the changes of the live index, each once and after Acquire sees it: a
// swap, an update with the same digest (no swap, no call), and a removal.
func TestWatchSeesSwapsAndRemovals(t *testing.T) {
	s, _ := newTestStore(t)
	type call struct {
		catalog string
		indexed bool
		digest  string
	}
	var (
		mu    sync.Mutex
		calls []call
	)
	s.Watch(func(catalog string) {
		c := call{catalog: catalog}
		if info, ok := s.Info(catalog); ok {
			c.indexed, c.digest = true, info.Digest
		}
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
	})
	steps := []struct {
		name string
		do   func()
		want []call
	}{
		{"first index", func() {
			mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 1), Ref: "v1", Digest: "sha256:aaa"})
		}, []call{{"demo", true, "sha256:aaa"}}},
		{"same digest", func() {
			mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 1), Ref: "v1", Digest: "sha256:aaa"})
		}, nil},
		{"swap", func() {
			mustUpdate(t, s, "demo", index.Content{FS: tinyCatalog("foo", 2), Ref: "v2", Digest: "sha256:bbb"})
		}, []call{{"demo", true, "sha256:bbb"}}},
		{"removal", func() {
			if err := s.Remove("demo"); err != nil {
				t.Fatal(err)
			}
		}, []call{{"demo", false, ""}}},
		{"removal of nothing", func() {
			if err := s.Remove("demo"); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, step := range steps {
		mu.Lock()
		calls = nil
		mu.Unlock()
		step.do()
		mu.Lock()
		got := slices.Clone(calls)
		mu.Unlock()
		if !slices.Equal(got, step.want) {
			t.Errorf("%s: watcher saw %+v, want %+v", step.name, got, step.want)
		}
	}
}
