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
// and counts are those of db, the index Build made of fsys.
func checkMatchesBuild(t testing.TB, db *sqlx.DB, fsys fs.FS) {
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
}

func problemLines(ps []Problem) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Position+": "+p.Package+": "+p.Message)
	}
	return strings.Join(out, "\n")
}

// TestCheckMatchesBuild checks the demo catalog, the same with phantom
// entries and with a bundle without a version, and TestProblems' broken
// packages, and compares what Check finds with what Build records.
func TestCheckMatchesBuild(t *testing.T) {
	dirs := map[string]string{"demo": demoDir}
	for name, write := range map[string]func(string, string) error{
		"phantom entries": fbcgen.WritePhantomDemo, "versionless bundle": fbcgen.WriteVersionlessDemo,
	} {
		dirs[name] = t.TempDir()
		if err := write(demoDir, dirs[name]); err != nil {
			t.Fatal(err)
		}
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			db, _ := buildDir(t, dir)
			checkMatchesBuild(t, db, os.DirFS(dir))
		})
	}
	t.Run("broken packages", func(t *testing.T) {
		fsys := fbcgen.ReplacesChain("good", 3, false)
		fsys["broken/catalog.json"] = &fstest.MapFile{Data: []byte(
			`{"schema":"olm.package","name":"broken","defaultChannel":"none"}
{"schema":"olm.channel","name":"c","package":"broken","entries":[{"name":"b.v2","replaces":"b.1"},{"name":"b.v1"},{"name":"b.v9"}]}
{"schema":"olm.bundle","name":"b.v1","package":"broken","image":"example.com/b:1","properties":[{"type":"olm.package","value":{"packageName":"broken","version":"1.0.0"}}]}
{"schema":"olm.bundle","name":"b.v2","package":"broken","image":"example.com/b:2","properties":[{"type":"olm.gvk","value":"x"}]}
{"schema":"olm.bundle","name":"b.v2","package":"broken","image":"example.com/b:2","properties":[]}
{"schema":"olm.deprecations","package":"broken","entries":[{"reference":{"schema":"olm.bundle","name":"b.v7"}}]}
{"schema":"olm.bundle","name":"x.v1","package":"undeclared","image":"example.com/x:1","properties":[]}`)}
		db, _ := buildFS(t, fsys, "test")
		checkMatchesBuild(t, db, fsys)
	})
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
