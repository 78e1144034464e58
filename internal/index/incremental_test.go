package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/migrations"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// buildAt builds dir into a new index in tmp, incrementally from prev when
// it is set.
func buildAt(t testing.TB, tmp, name, dir, prev string) (string, Stats) {
	t.Helper()
	path, stats, err := tryBuildAt(tmp, name, dir, prev)
	if err != nil {
		t.Fatalf("build %s: %v", name, err)
	}
	return path, stats
}

func tryBuildAt(tmp, name, dir, prev string) (string, Stats, error) {
	path := filepath.Join(tmp, name+".db")
	stats, err := Build(context.Background(), path, Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:test", Previous: prev}, time.Unix(0, 0))
	return path, stats, err
}

// tableRows reads every row of every table of the index at path, as text,
// by table: rowid tables with their rowids, in rowid order, others in key
// order. catalog_info leaves out the build's time and mode; the search
// index's own tables (package_search_*), whose layout follows how rows
// were inserted, are compared through package_search itself.
func tableRows(t testing.TB, path string) map[string][]string {
	t.Helper()
	db, err := sqlx.Open("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []struct {
		Name string `db:"name"`
		SQL  string `db:"sql"`
	}
	if err := db.Select(&tables, `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'package_search_%'`); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, tb := range tables {
		q := `SELECT rowid AS row_id, * FROM ` + tb.Name + ` ORDER BY rowid`
		switch {
		case tb.Name == "catalog_info":
			q = `SELECT id, source_ref, content_digest, all_size, schema_digest FROM catalog_info`
		case strings.Contains(tb.SQL, "WITHOUT ROWID"):
			q = `SELECT * FROM ` + tb.Name
		}
		rows, err := db.Queryx(q)
		if err != nil {
			t.Fatalf("%s: %v", tb.Name, err)
		}
		for rows.Next() {
			values, err := rows.SliceScan()
			if err != nil {
				t.Fatal(err)
			}
			texts := make([]string, len(values))
			for i, v := range values {
				if b, ok := v.([]byte); ok {
					v = fmt.Sprintf("%x", b)
				}
				texts[i] = fmt.Sprintf("%v", v)
			}
			out[tb.Name] = append(out[tb.Name], strings.Join(texts, "|"))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

// sameIndex fails unless the indexes at got and want hold the same rows,
// content file and gzip copy.
func sameIndex(t testing.TB, got, want string) {
	t.Helper()
	gotRows, wantRows := tableRows(t, got), tableRows(t, want)
	for _, table := range slices.Sorted(func(yield func(string) bool) {
		for k := range wantRows {
			if !yield(k) {
				return
			}
		}
	}) {
		g, w := gotRows[table], wantRows[table]
		if slices.Equal(g, w) {
			continue
		}
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		at := func(rows []string) string {
			if i < len(rows) {
				return rows[i]
			}
			return "(none)"
		}
		t.Errorf("table %s: %d rows, want %d; row %d is\n  %.400s\nwant\n  %.400s", table, len(g), len(w), i, at(g), at(w))
	}
	if len(gotRows) != len(wantRows) {
		t.Errorf("%d tables, want %d", len(gotRows), len(wantRows))
	}
	for _, gz := range []bool{false, true} {
		g, w := streamBytes(t, got, gz), streamBytes(t, want, gz)
		if !bytes.Equal(g, w) {
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("%s (gzip %v): %d bytes, want %d, first difference at %d", filepath.Base(got), gz, len(g), len(w), i)
		}
	}
}

// differential applies steps random edits to the catalog in dir and, after
// each, checks the incremental build from the index before against a
// full build of the same content. It returns how many builds were
// incremental, and how many big blobs they took from the index before.
func differential(t *testing.T, dir string, seed uint64, steps int) (incremental, reused int) {
	rng := rand.New(rand.NewPCG(seed, 25))
	m := fbcchange.ReadModel(t, dir)
	tmp := t.TempDir()
	prev, _ := buildAt(t, tmp, "0-full", dir, "")
	for step := 1; step <= steps; step++ {
		var did []string
		for range 1 + rng.IntN(3) {
			if what := m.Edit(t, rng, "", step); what != "" {
				did = append(did, what)
			}
		}
		m.Write(t, dir)
		got, stats, err := tryBuildAt(tmp, fmt.Sprintf("%d-incremental", step), dir, prev)
		want, wantStats, wantErr := tryBuildAt(tmp, fmt.Sprintf("%d-full", step), dir, "")
		t.Logf("step %d: %s: %+v", step, strings.Join(did, "; "), stats.Build)
		// A catalog that cannot be read fails both builds alike, and the
		// next step builds from the index before.
		if err != nil || wantErr != nil {
			if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
				t.Fatalf("step %d: the incremental build fails with %v, the full one with %v", step, err, wantErr)
			}
			if !m.Broken() || !errors.Is(err, ErrInvalidCatalog) {
				t.Fatalf("step %d: build fails with %v, the catalog broken: %v", step, err, m.Broken())
			}
			continue
		}
		if m.Broken() {
			t.Fatalf("step %d: a catalog with a blob that does not parse built", step)
		}
		if stats.Build.Mode == ModeIncremental {
			incremental++
			reused += stats.Work.BlobsReused
		}
		sameIndex(t, got, want)
		stats.Build, wantStats.Build = BuildMode{}, BuildMode{}
		stats.Work, wantStats.Work = BuildWork{}, BuildWork{}
		if fmt.Sprint(stats) != fmt.Sprint(wantStats) {
			t.Errorf("stats %+v, want %+v", stats, wantStats)
		}
		if t.Failed() {
			t.Fatalf("step %d differs from a full build", step)
		}
		RemoveFiles(prev)
		RemoveFiles(want)
		prev = got
	}
	return incremental, reused
}

// TestIncrementalMatchesFull is the differential test of incremental
// builds: on a generated catalog, reshaped so that a file holds several
// packages and a package spans several files, in JSON and YAML, random
// edits, each followed by an incremental build from the index before,
// which must give a full build's rows, content and gzip copy. Set
// CATALOGD_INCREMENTAL_STEPS for a longer run.
func TestIncrementalMatchesFull(t *testing.T) {
	steps := 16
	if s := os.Getenv("CATALOGD_INCREMENTAL_STEPS"); s != "" {
		fmt.Sscan(s, &steps)
	}
	// Segments of a file or two, so that builds link some and rewrite
	// others, cutting them where the last build did not.
	withSegmentSize(t, 32<<10)
	dir := reshaped(t, fbcgen.Options{Packages: 12, Bundles: 60, BundleObjectBytes: 200, Seed: 7}, 1)
	if n, _ := differential(t, dir, 1, steps); n < steps/2 {
		t.Errorf("%d of %d builds incremental", n, steps)
	}
}

// incrementalMatchesFull builds the catalog in dir incrementally from
// prev, which must give a full build's index, and returns the index
// built, the full build's and the incremental build's stats.
func incrementalMatchesFull(t *testing.T, work, dir, prev string) (got, want string, stats Stats) {
	t.Helper()
	got, stats = buildAt(t, work, "got", dir, prev)
	if stats.Build.Mode != ModeIncremental {
		t.Fatalf("build %+v, want incremental", stats.Build)
	}
	want, _ = buildAt(t, work, "want", dir, "")
	sameIndex(t, got, want)
	return got, want, stats
}

// reshaped generates a catalog into a new directory and reshapes it, the
// random choices seeded by seed: a package moved, two packages sharing a
// YAML file, one package spread over files.
func reshaped(t *testing.T, opts fbcgen.Options, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, opts); err != nil {
		t.Fatal(err)
	}
	m := fbcchange.ReadModel(t, dir)
	rng := rand.New(rand.NewPCG(seed, seed))
	m.Edit(t, rng, "move a package", 0)
	m.Share("shared/two.yaml", m.Packages()[:2]...)
	m.Edit(t, rng, "spread a package", 0)
	m.Write(t, dir)
	return dir
}

// copyCatalog copies the catalog in dir to a new work directory, and
// builds it there in full: it returns the directory, the copy's path and
// the index's.
func copyCatalog(t *testing.T, dir string) (work, catalog, prev string) {
	t.Helper()
	work = t.TempDir()
	catalog = filepath.Join(work, "catalog")
	if err := os.CopyFS(catalog, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	prev, _ = buildAt(t, work, "prev", catalog, "")
	return work, catalog, prev
}

// TestIncrementalCommunity runs the differential test on a copy of the
// published community catalog (a YAML file per package): one step, more
// with CATALOGD_INCREMENTAL_STEPS.
func TestIncrementalCommunity(t *testing.T) {
	src := "../../../shared/catalogs/community-v4.20"
	if _, err := os.Stat(src); err != nil {
		t.Skipf("skipping: the community catalog is absent (%v)", err)
	}
	if testing.Short() {
		t.Skip("skipping in short mode: each step builds the catalog twice")
	}
	steps := 1
	if s := os.Getenv("CATALOGD_INCREMENTAL_STEPS"); s != "" {
		fmt.Sscan(s, &steps)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if n, _ := differential(t, dir, 2, steps); n < (steps+1)/2 {
		t.Errorf("%d of %d builds incremental", n, steps)
	}
}

// fullScan is a query plan's step that reads a whole table.
var fullScan = regexp.MustCompile(`^SCAN [\w.]+$`)

// TestIncrementalQueryPlans: every statement an incremental build runs
// against the previous index, or against the rows it keeps of the
// previous index's copy, finds its rows through a key or an index, never
// by scanning a table; but for knownBlobsQuery, which reads every row of
// big_blobs, in key order, and finds the rest by key.
func TestIncrementalQueryPlans(t *testing.T) {
	db, _ := buildDir(t, demoDir)
	prev := dbPath(t, db)
	scratch, err := sqlx.Open("sqlite", FileURI(filepath.Join(t.TempDir(), "new.db"), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	scratch.SetMaxOpenConns(1)
	if _, err := scratch.Exec(`ATTACH DATABASE ? AS prev`, previousURI(prev)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{migrations.Tables, migrations.Indexes} {
		if err := migrations.Apply(context.Background(), scratch, f); err != nil {
			t.Fatal(err)
		}
	}
	queries := slices.Concat(copyRowsQueries, movedRowsQueries[blobIDs], movedRowsQueries[bundleIDs], movedRowsQueries[entryIDs],
		carryQueries, []string{carriedCountsQuery, copiedBlobsQuery, knownBlobsQuery, moveOffsetsQuery, moveBlobIDsQuery})
	for _, tables := range keptTables {
		for _, kept := range tables {
			queries = append(queries, deleteKeptQuery(kept, keyRange), deleteKeptQuery(kept, keyAfter))
		}
	}
	named := map[string]any{}
	for _, name := range []string{"blob", "bundle", "entry", "offset", "b1", "b2", "n1", "n2", "e1", "e2"} {
		named[name] = 1
	}
	for _, q := range queries {
		var rows *sqlx.Rows
		var err error
		if strings.Contains(q, " :") {
			rows, err = scratch.NamedQuery("EXPLAIN QUERY PLAN "+q, named)
		} else {
			n := strings.Count(q, "?")
			for i := 1; strings.Contains(q, "?"+strconv.Itoa(i)); i++ {
				n = i // numbered arguments
			}
			args := make([]any, n)
			for i := range args {
				args[i] = "x"
			}
			rows, err = scratch.Queryx("EXPLAIN QUERY PLAN "+q, args...)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, step := range plan {
			if q == knownBlobsQuery && step == "SCAN g" {
				continue
			}
			// A table's own order, or a virtual table's without a
			// constraint, is a scan of all its rows.
			if fullScan.MatchString(step) || strings.HasSuffix(step, "VIRTUAL TABLE INDEX 0:") {
				t.Errorf("%s\nscans a table: %s", q, strings.Join(plan, "; "))
			}
		}
	}
}

// TestIncrementalFallbacks: a previous index that cannot be reused, or a
// change too large to pay, gives a full build, which says why and is the
// full build of the content.
func TestIncrementalFallbacks(t *testing.T) {
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 6, Bundles: 24, BundleObjectBytes: 200, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	// Written once as the model writes files, so that a file the test
	// leaves alone keeps its bytes.
	m := fbcchange.ReadModel(t, dir)
	m.Write(t, dir)
	pkgs := m.Packages()
	tooMany := int(maxChangedShare*float64(len(pkgs))) + 1
	exec := func(query string) func(t *testing.T, prev, dir string) {
		return func(t *testing.T, prev, dir string) {
			db, err := sqlx.Open("sqlite", FileURI(prev, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(query); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name   string
		spoil  func(t *testing.T, prev, dir string)
		reason string
	}{
		{"no previous index", func(t *testing.T, prev, dir string) { RemoveFiles(prev) }, "no previous index"},
		{"other schema", exec(`UPDATE catalog_info SET schema_digest = 'sha256:older'`), "schema changed"},
		{"no file records", exec(`DELETE FROM files`), "previous index has no file records"},
		{"records out of step", exec(`UPDATE files SET blobs = blobs + 1 WHERE id = 1`), "previous index inconsistent: "},
		{"content segment cut short", func(t *testing.T, prev, dir string) {
			if err := os.Truncate(segmentPath(t, prev, contentExt), 10); err != nil {
				t.Fatal(err)
			}
		}, "previous content unreadable: "},
		{"gzip segment missing", func(t *testing.T, prev, dir string) {
			if err := os.Remove(segmentPath(t, prev, gzipExt)); err != nil {
				t.Fatal(err)
			}
		}, "previous content unreadable: "},
		{"segment list missing", func(t *testing.T, prev, dir string) {
			if err := os.Remove(filepath.Join(ContentDir(prev), manifestName)); err != nil {
				t.Fatal(err)
			}
		}, "previous content unreadable: "},
		{"most packages changed", func(t *testing.T, prev, dir string) {
			m := fbcchange.ReadModel(t, dir)
			m.Remove(pkgs[:tooMany]...)
			m.Write(t, dir)
		}, fmt.Sprintf("%d of %d packages changed", tooMany, len(pkgs))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work, catalog, prev := copyCatalog(t, dir)
			tc.spoil(t, prev, catalog)
			got, stats := buildAt(t, work, "got", catalog, prev)
			if stats.Build.Mode != ModeFull || !strings.HasPrefix(stats.Build.Reason, tc.reason) || stats.Build.PackagesRebuilt != stats.Packages {
				t.Errorf("build %+v, want full because %q, every one of %d packages rebuilt", stats.Build, tc.reason, stats.Packages)
			}
			want, _ := buildAt(t, work, "want", catalog, "")
			sameIndex(t, got, want)
		})
	}
}
