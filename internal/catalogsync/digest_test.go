package catalogsync_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/index"
)

// editingFetcher is a catalog directory whose builds call edit when they
// open file, before reading it: an editor saving between the digest's walk
// and the build's read (edit is made with sync.OnceFunc, so that only the
// first build sees the edit happen). It counts the builds that opened
// anything.
type editingFetcher struct {
	catalogsync.DirFetcher
	file   string
	edit   func()
	opened *atomic.Int32
}

func (s editingFetcher) Fetch(ctx context.Context, skip func(string) bool) (catalogsync.Fetched, error) {
	f, err := s.DirFetcher.Fetch(ctx, skip)
	if f.FS != nil {
		f.FS = &hookFS{FS: f.FS, file: s.file, edit: s.edit, opened: s.opened}
	}
	return f, err
}

type hookFS struct {
	fs.FS
	file   string
	edit   func()
	opened *atomic.Int32
	first  sync.Once
}

func (h *hookFS) Open(name string) (fs.File, error) {
	h.first.Do(func() { h.opened.Add(1) })
	if name == h.file && h.edit != nil {
		h.edit()
	}
	return h.FS.Open(name)
}

func (h *hookFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(h.FS, name) }

// extraPackage is the file these tests edit, holding a package whose
// description says which version of the file was indexed.
const extraPackage = "zz-extra/catalog.json"

func extraVersion(v string) string {
	return `{"schema":"olm.package","name":"extra","description":"` + v + `"}`
}

// demoWith is the demo catalog plus files, in a new directory.
func demoWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		writeFile(t, filepath.Join(dir, rel), content)
	}
	return dir
}

// writeFile writes content at p. It fails the test without stopping it,
// since edits run on the build's goroutines.
func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Error(err)
	}
}

// served is the description of the extra package the catalog serves.
func (e *env) served(t *testing.T, catalog string) string {
	t.Helper()
	snap, err := e.store.Acquire(catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	pkg, err := snap.Catalog.Package(context.Background(), "extra")
	if err != nil {
		t.Fatal(err)
	}
	return pkg.Description
}

func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	src, err := catalogdir.Read(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return src.Digest
}

// A file edited between the digest's walk and the build's read is indexed
// under the digest of what was read, which is what the directory digests
// to once settled: after a restart, a sync of the unchanged directory
// rebuilds nothing and serves the edit; a sync after a further change, or
// after the file went back to what the walk saw, rebuilds. The same holds
// when the edited file is read by an incremental build, which records the
// hash of the bytes it parsed: recorded with the walk's, the file gone back
// to what the walk saw would look unchanged and its edit stay served.
func TestDirectoryEditedWhileIndexed(t *testing.T) {
	tests := []struct {
		name string
		// after changes the directory once the first build is done.
		after       string
		wantRebuilt bool
		wantServed  string
	}{
		{name: "left as read", wantServed: "v2"},
		{name: "changed back to what the walk saw", after: "v1", wantRebuilt: true, wantServed: "v1"},
		{name: "changed again", after: "v3", wantRebuilt: true, wantServed: "v3"},
	}
	for _, mode := range []string{index.ModeFull, index.ModeIncremental} {
		for _, tc := range tests {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				dir := demoWith(t, map[string]string{extraPackage: extraVersion("v1")})
				data := t.TempDir()
				ctx := context.Background()

				e := newEnvIn(t, data, catalogsync.Options{})
				if mode == index.ModeIncremental {
					// A live index to build from, of another version of
					// the file: the build that reads the edit parses it.
					writeFile(t, filepath.Join(dir, extraPackage), extraVersion("v0"))
					e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.DirFetcher{Path: dir}})
					if _, err := e.svc.Sync(ctx, "demo", nil); err != nil {
						t.Fatal(err)
					}
					writeFile(t, filepath.Join(dir, extraPackage), extraVersion("v1"))
				}
				var opened atomic.Int32
				edit := sync.OnceFunc(func() { writeFile(t, filepath.Join(dir, extraPackage), extraVersion("v2")) })
				e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: editingFetcher{
					DirFetcher: catalogsync.DirFetcher{Path: dir}, file: extraPackage, edit: edit, opened: &opened}})
				res, err := e.svc.Sync(ctx, "demo", nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := e.served(t, "demo"); got != "v2" {
					t.Fatalf("serves %s, want v2, the version the build read", got)
				}
				info, _ := e.store.Info("demo")
				if info.Build.Mode != mode {
					t.Fatalf("the build that read the edit was %s (%s), want %s", info.Build.Mode, info.Build.Reason, mode)
				}
				if want := dirDigest(t, dir); res.Digest != want || info.Digest != want {
					t.Errorf("synced digest %s, index digest %s; want %s, the digest of the directory as indexed", res.Digest, info.Digest, want)
				}
				e.store.Close()

				if tc.after != "" {
					writeFile(t, filepath.Join(dir, extraPackage), extraVersion(tc.after))
				}
				restarted := newEnvIn(t, data, catalogsync.Options{})
				restarted.svc.Load()
				restarted.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.DirFetcher{Path: dir}})
				res, err = restarted.svc.Sync(ctx, "demo", nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.Rebuilt != tc.wantRebuilt {
					t.Errorf("sync after the restart rebuilt: %v, want %v", res.Rebuilt, tc.wantRebuilt)
				}
				if got := restarted.served(t, "demo"); got != tc.wantServed {
					t.Errorf("serves %s after the restart, want %s", got, tc.wantServed)
				}
				if want := dirDigest(t, dir); res.Digest != want {
					t.Errorf("digest after the restart %s, want the directory's %s", res.Digest, want)
				}
			})
		}
	}
}

// Content that failed to index is not indexed again until its digest
// changes; that digest is the one of what the build read. A file caught
// half written fails the build, and once the writer is done the catalog
// indexes; a broken file left alone is not read again.
func TestDirectoryBrokenWhileIndexed(t *testing.T) {
	// The broken blob comes early in a long file, so the parser stops well
	// before the end; the file also comes first, so the build reads ahead
	// into the files after it.
	const broken = "aa-broken/catalog.json"
	brokenContent := `{"schema":"olm.package","name":"aa"}` + "\n" + `{"name":"no schema"}` + "\n" +
		strings.Repeat(`{"schema":"example.filler","value":"`+strings.Repeat("x", 200)+`"}`+"\n", 5000)
	tests := []struct {
		name string
		// files are added to the demo; edit runs when the build first opens
		// extraPackage, and after once the first sync failed.
		files map[string]string
		edit  func(t *testing.T, dir string)
		after func(t *testing.T, dir string)
		// stillBroken: the second sync must fail as the first did, without
		// a build; otherwise it must index the catalog.
		stillBroken bool
	}{
		{
			name:  "half written",
			files: map[string]string{extraPackage: extraVersion("v1")},
			edit: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, extraPackage), `{"schema":"olm.package","name":"ext`)
			},
			after: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, extraPackage), extraVersion("v1"))
			},
		},
		{
			name:        "left broken",
			files:       map[string]string{extraPackage: extraVersion("v1"), broken: brokenContent},
			stillBroken: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := demoWith(t, tc.files)
			e := newEnv(t, catalogsync.Options{})
			var opened atomic.Int32
			src := editingFetcher{DirFetcher: catalogsync.DirFetcher{Path: dir}, file: extraPackage, opened: &opened}
			if tc.edit != nil {
				src.edit = sync.OnceFunc(func() { tc.edit(t, dir) })
			}
			e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: src})
			ctx := context.Background()
			_, first := e.svc.Sync(ctx, "demo", nil)
			if !catalogsync.IsContentError(first) {
				t.Fatalf("first sync: %v, want a content error", first)
			}
			if tc.after != nil {
				tc.after(t, dir)
			}
			opened.Store(0)
			_, second := e.svc.Sync(ctx, "demo", nil)
			switch {
			case tc.stillBroken && (second == nil || second.Error() != first.Error()):
				t.Errorf("second sync of the broken catalog: %v, want the first error again: %v", second, first)
			case tc.stillBroken && opened.Load() != 0:
				t.Error("the unchanged broken catalog was indexed again")
			case !tc.stillBroken && second != nil:
				t.Errorf("sync of the finished file: %v, want the catalog indexed", second)
			case !tc.stillBroken && e.served(t, "demo") != "v1":
				t.Errorf("serves %s, want v1", e.served(t, "demo"))
			}
		})
	}
}
