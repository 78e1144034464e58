package index

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// checkMatchesBuild checks fsys with Check and fails t unless its problems
// and counts are those of db, the index Build made of fsys. It returns the
// problems Check found.
func checkMatchesBuild(t testing.TB, db *sqlx.DB, fsys fs.FS) []Problem {
	t.Helper()
	var built []Problem
	if err := db.Select(&built, `SELECT package, position, message FROM problems ORDER BY package, id`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stats, checked, err := Check(context.Background(), dir, Content{FS: fsys, Ref: "test", Digest: "sha256:test"})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if !slices.Equal(checked, built) {
		t.Errorf("Check found\n%s\nBuild recorded\n%s", problemLines(checked), problemLines(built))
	}
	counts := map[string]int{"packages": stats.Packages, "bundles": stats.Bundles, "problems": stats.Problems}
	for table, n := range counts {
		var got int
		if err := db.Get(&got, "SELECT count(*) FROM "+table); err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("Check counted %d %s, Build indexed %d", n, table, got)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("Check left %d files in its directory", len(left))
	}
	return checked
}

func problemLines(ps []Problem) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Position+": "+p.Package+": "+p.Message)
	}
	return strings.Join(out, "\n")
}

// wantProblem is a problem a test expects: where, of which package, and a
// phrase of its message.
type wantProblem struct{ position, pkg, phrase string }

// TestCheckMatchesBuild checks the demo catalog, the same with phantom
// entries and with a bundle without a version, and TestProblems' broken
// packages: Check finds the problems each was written with, and those
// are what Build records. Check and Build share one loader, so their
// agreement alone would pass a loader that found nothing: the problems are
// listed here from the files' text.
func TestCheckMatchesBuild(t *testing.T) {
	brokenFS := fbcgen.ReplacesChain("good", 3, false)
	brokenFS["broken/catalog.json"] = &fstest.MapFile{Data: []byte(
		`{"schema":"olm.package","name":"broken","defaultChannel":"none"}
{"schema":"olm.channel","name":"c","package":"broken","entries":[{"name":"b.v2","replaces":"b.1"},{"name":"b.v1"},{"name":"b.v9"}]}
{"schema":"olm.bundle","name":"b.v1","package":"broken","image":"example.com/b:1","properties":[{"type":"olm.package","value":{"packageName":"broken","version":"1.0.0"}}]}
{"schema":"olm.bundle","name":"b.v2","package":"broken","image":"example.com/b:2","properties":[{"type":"olm.gvk","value":"x"}]}
{"schema":"olm.bundle","name":"b.v2","package":"broken","image":"example.com/b:2","properties":[]}
{"schema":"olm.deprecations","package":"broken","entries":[{"reference":{"schema":"olm.bundle","name":"b.v7"}}]}
{"schema":"olm.bundle","name":"x.v1","package":"undeclared","image":"example.com/x:1","properties":[]}`)}
	written := func(write func(string, string) error) func(t *testing.T) fs.FS {
		return func(t *testing.T) fs.FS {
			dir := t.TempDir()
			if err := write(demoDir, dir); err != nil {
				t.Fatal(err)
			}
			return os.DirFS(dir)
		}
	}
	tests := []struct {
		name string
		fsys func(t *testing.T) fs.FS
		want []wantProblem
	}{
		{name: "demo", fsys: func(*testing.T) fs.FS { return os.DirFS(demoDir) }},
		{name: "phantom entries", fsys: written(fbcgen.WritePhantomDemo), want: []wantProblem{
			{"aurora-cache/catalog.yaml:10:1", "aurora-cache", `entry "aurora-cache.v9.9.9" has no olm.bundle blob`},
			{"aurora-cache/catalog.yaml:31:1", "aurora-cache", `entry "aurora-cache.v9.9.8" has no olm.bundle blob`},
			{"aurora-cache/catalog.yaml:31:1", "aurora-cache", `"aurora-cache.v1.2.0" cannot be reached from the head "aurora-cache.v9.9.8"`},
		}},
		{name: "versionless bundle", fsys: written(fbcgen.WriteVersionlessDemo), want: []wantProblem{
			{"aurora-cache/catalog.yaml:10:1", "aurora-cache", `channel "stable": its head "aurora-cache.v1.3.0" has no version`},
			{"aurora-cache/catalog.yaml:29:1", "aurora-cache", `channel "fast": its head "aurora-cache.v1.3.0" has no version`},
			{"aurora-cache/catalog.yaml:519:1", "aurora-cache", `bundle "aurora-cache.v1.3.0": no olm.package property`},
		}},
		{name: "broken packages", fsys: func(*testing.T) fs.FS { return brokenFS }, want: []wantProblem{
			{"broken/catalog.json:1:1", "broken", `defaultChannel "none" is not a channel`},
			{"broken/catalog.json:2:1", "broken", `entry "b.v9" has no olm.bundle blob`},
			{"broken/catalog.json:2:1", "broken", `channel "c" has 3 heads`},
			{"broken/catalog.json:5:1", "broken", `bundle "b.v2" is defined 2 times`},
			{"broken/catalog.json:4:1", "broken", `properties[0] (olm.gvk): the value does not decode`},
			{"broken/catalog.json:4:1", "broken", `bundle "b.v2": no olm.package property`},
			{"broken/catalog.json:6:1", "broken", `deprecates bundle "b.v7", which the package does not have`},
			{"broken/catalog.json:6:1", "broken", `(olm.bundle "b.v7") has no message`},
			{"broken/catalog.json:7:1", "undeclared", `no olm.package blob named "undeclared"`},
			{"broken/catalog.json:7:1", "undeclared", "the package has no olm.channel blob"},
			{"broken/catalog.json:7:1", "undeclared", `bundle "x.v1" is in no channel`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tc.fsys(t)
			db, _ := buildFS(t, fsys, "test")
			found := checkMatchesBuild(t, db, fsys)
			// Each expected problem matches one found, and nothing else is found.
			left := slices.Clone(found)
			for _, w := range tc.want {
				i := slices.IndexFunc(left, func(p Problem) bool {
					return p.Position == w.position && p.Package == w.pkg && strings.Contains(p.Message, w.phrase)
				})
				if i < 0 {
					t.Errorf("Check did not find %s: %s: %s", w.position, w.pkg, w.phrase)
					continue
				}
				left = slices.Delete(left, i, i+1)
			}
			if len(left) > 0 {
				t.Errorf("Check found problems the catalog was not written with:\n%s", problemLines(left))
			}
		})
	}
}

// fileProbe is an fs.FS that, each time a catalog file is opened, notes
// the largest size the content file of the index at path has had, and
// whether its gzip copy exists.
type fileProbe struct {
	fs.FS
	path string
	mu   sync.Mutex
	size int64
	gzip bool
}

func (p *fileProbe) Open(name string) (fs.File, error) {
	var size int64
	gz := false
	entries, _ := os.ReadDir(ContentDir(p.path))
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), contentExt) {
			size += fi.Size()
		}
		gz = gz || strings.HasSuffix(e.Name(), gzipExt)
	}
	p.mu.Lock()
	p.size = max(p.size, size)
	p.gzip = p.gzip || gz
	p.mu.Unlock()
	return p.FS.Open(name)
}

func (p *fileProbe) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(p.FS, name) }

// TestCheckWritesNoServingFiles checks that Check writes no gzip copy of
// the content and keeps in its scratch content file only the blobs
// validation reads back (olm.package, olm.channel, olm.deprecations), not
// the bundles, which are most of a catalog's bytes. The same probe on
// Build, which writes them all, shows that it sees what is written while
// the catalog is read.
func TestCheckWritesNoServingFiles(t *testing.T) {
	catalog := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), catalog, fbcgen.Options{Packages: 40, Bundles: 400, BundleObjectBytes: 4000, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	var bundleBytes int64
	err := fbc.Walk(context.Background(), os.DirFS(catalog), fbc.Limits{}, func(_ context.Context, b fbc.Blob) error {
		if b.Meta.Schema == declcfg.SchemaBundle {
			bundleBytes += int64(len(b.Meta.Blob))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	built := t.TempDir()
	buildProbe := &fileProbe{FS: os.DirFS(catalog), path: filepath.Join(built, "index.db")}
	if _, err := Build(context.Background(), filepath.Join(built, "index.db"), Content{FS: buildProbe, Ref: "test", Digest: "sha256:test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Build must cross the very bound Check is held to below, whatever the
	// content file's write buffer: then the probe can tell the two apart.
	if !buildProbe.gzip || buildProbe.size < bundleBytes/10 {
		t.Fatalf("while Build read the catalog, the probe saw a gzip copy: %v, a content file of %d bytes (bundles: %d): it cannot tell what Check writes",
			buildProbe.gzip, buildProbe.size, bundleBytes)
	}

	dir := t.TempDir()
	probe := &fileProbe{FS: os.DirFS(catalog), path: filepath.Join(dir, "check.db")}
	if _, _, err := Check(context.Background(), dir, Content{FS: probe, Ref: "test", Digest: "sha256:test"}); err != nil {
		t.Fatal(err)
	}
	if probe.gzip {
		t.Error("Check wrote a gzip copy of the content")
	}
	if probe.size >= bundleBytes/10 {
		t.Errorf("Check's content file held %d bytes, the catalog's bundles %d: it writes bundles it never reads back", probe.size, bundleBytes)
	}
}
