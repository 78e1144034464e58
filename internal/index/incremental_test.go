package index

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// catalogModel is a catalog being edited: the documents of each file, by
// path; a path ending in .yaml is written as YAML, any other as JSON.
type catalogModel struct {
	files map[string][]map[string]any
	// written holds the bytes last written of each file.
	written map[string][]byte
}

// readModel reads a catalog directory into a model.
func readModel(t testing.TB, dir string) *catalogModel {
	t.Helper()
	m := &catalogModel{files: map[string][]map[string]any{}, written: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var docs []map[string]any
		if strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml") {
			for _, part := range strings.Split(string(data), "\n---") {
				if strings.TrimSpace(strings.TrimPrefix(part, "---")) == "" {
					continue
				}
				var doc map[string]any
				if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
					return fmt.Errorf("%s: %w", rel, err)
				}
				docs = append(docs, doc)
			}
		} else {
			dec := json.NewDecoder(bytes.NewReader(data))
			for {
				var doc map[string]any
				if err := dec.Decode(&doc); err == io.EOF {
					break
				} else if err != nil {
					return fmt.Errorf("%s: %w", rel, err)
				}
				docs = append(docs, doc)
			}
		}
		m.files[rel] = docs
		m.written[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// write writes the model into dir: the files whose bytes changed, and
// removes the files gone from it.
func (m *catalogModel) write(t testing.TB, dir string) {
	t.Helper()
	for path := range m.written {
		if _, ok := m.files[path]; !ok {
			if err := os.Remove(filepath.Join(dir, path)); err != nil {
				t.Fatal(err)
			}
			delete(m.written, path)
		}
	}
	for path, docs := range m.files {
		var buf bytes.Buffer
		for _, doc := range docs {
			if strings.HasSuffix(path, ".yaml") {
				data, err := yaml.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				buf.WriteString("---\n")
				buf.Write(data)
			} else {
				data, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(append(data, '\n'))
			}
		}
		if bytes.Equal(buf.Bytes(), m.written[path]) {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		m.written[path] = buf.Bytes()
	}
}

// owner is the package a document belongs to.
func owner(doc map[string]any) string {
	if doc["schema"] == "olm.package" {
		s, _ := doc["name"].(string)
		return s
	}
	s, _ := doc["package"].(string)
	return s
}

// docRef is a document of the model, by file and place.
type docRef struct {
	path string
	i    int
}

func (m *catalogModel) paths() []string {
	paths := make([]string, 0, len(m.files))
	for p := range m.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// find lists the documents matching keep, in path order.
func (m *catalogModel) find(keep func(map[string]any) bool) []docRef {
	var out []docRef
	for _, p := range m.paths() {
		for i, d := range m.files[p] {
			if keep(d) {
				out = append(out, docRef{p, i})
			}
		}
	}
	return out
}

func (m *catalogModel) doc(r docRef) map[string]any { return m.files[r.path][r.i] }

// remove removes the documents matching drop.
func (m *catalogModel) remove(drop func(map[string]any) bool) {
	for p, docs := range m.files {
		m.files[p] = slices.DeleteFunc(docs, drop)
	}
}

func (m *catalogModel) packages() []string {
	var out []string
	for _, r := range m.find(func(d map[string]any) bool { return d["schema"] == "olm.package" }) {
		out = append(out, m.doc(r)["name"].(string))
	}
	return out
}

// clone copies a document through JSON.
func clone(doc map[string]any) map[string]any {
	data, _ := json.Marshal(doc)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

// edit is one random change to a catalog model; it returns what it did.
type edit func(m *catalogModel, rng *rand.Rand, step int) string

func pick[T any](rng *rand.Rand, list []T) (T, bool) {
	var zero T
	if len(list) == 0 {
		return zero, false
	}
	return list[rng.IntN(len(list))], true
}

func isSchema(schema string) func(map[string]any) bool {
	return func(d map[string]any) bool { return d["schema"] == schema }
}

// edits are the changes the differential test makes, by name.
var edits = map[string]edit{
	"change a bundle": func(m *catalogModel, rng *rand.Rand, step int) string {
		r, ok := pick(rng, m.find(isSchema("olm.bundle")))
		if !ok {
			return ""
		}
		b := m.doc(r)
		props, _ := b["properties"].([]any)
		b["properties"] = append(props, map[string]any{"type": "test.edit", "value": map[string]any{"step": step}})
		return fmt.Sprintf("bundle %v in %s", b["name"], r.path)
	},
	"remove a bundle": func(m *catalogModel, rng *rand.Rand, step int) string {
		r, ok := pick(rng, m.find(isSchema("olm.bundle")))
		if !ok {
			return ""
		}
		name := m.doc(r)["name"]
		m.files[r.path] = slices.Delete(m.files[r.path], r.i, r.i+1)
		return fmt.Sprintf("bundle %v from %s", name, r.path)
	},
	"add a bundle": func(m *catalogModel, rng *rand.Rand, step int) string {
		r, ok := pick(rng, m.find(isSchema("olm.bundle")))
		if !ok {
			return ""
		}
		b := clone(m.doc(r))
		name := fmt.Sprintf("%v-added%d", b["name"], step)
		b["name"] = name
		m.files[r.path] = append(m.files[r.path], b)
		// Listed in a channel of its package, replacing nothing.
		if c, ok := pick(rng, m.find(func(d map[string]any) bool { return d["schema"] == "olm.channel" && d["package"] == b["package"] })); ok {
			ch := m.doc(c)
			entries, _ := ch["entries"].([]any)
			ch["entries"] = append(entries, map[string]any{"name": name})
		}
		return fmt.Sprintf("bundle %s to %s", name, r.path)
	},
	"remove a package": func(m *catalogModel, rng *rand.Rand, step int) string {
		pkg, ok := pick(rng, m.packages())
		if !ok || len(m.packages()) < 3 {
			return ""
		}
		m.remove(func(d map[string]any) bool { return owner(d) == pkg })
		return "package " + pkg
	},
	"add a package": func(m *catalogModel, rng *rand.Rand, step int) string {
		pkg, ok := pick(rng, m.packages())
		if !ok {
			return ""
		}
		name := fmt.Sprintf("%s-copy%d", pkg, step)
		path := fmt.Sprintf("added/%s/catalog.json", name)
		if rng.IntN(2) == 0 {
			path = fmt.Sprintf("added/%s.yaml", name)
		}
		for _, r := range m.find(func(d map[string]any) bool { return owner(d) == pkg }) {
			d := clone(m.doc(r))
			if d["schema"] == "olm.package" {
				d["name"] = name
			} else {
				d["package"] = name
			}
			m.files[path] = append(m.files[path], d)
		}
		return "package " + name + " in " + path
	},
	"add a channel": func(m *catalogModel, rng *rand.Rand, step int) string {
		r, ok := pick(rng, m.find(isSchema("olm.channel")))
		if !ok {
			return ""
		}
		c := clone(m.doc(r))
		c["name"] = fmt.Sprintf("added-%d", step)
		m.files[r.path] = append(m.files[r.path], c)
		return fmt.Sprintf("channel %v of %v", c["name"], c["package"])
	},
	"remove a channel": func(m *catalogModel, rng *rand.Rand, step int) string {
		r, ok := pick(rng, m.find(isSchema("olm.channel")))
		if !ok {
			return ""
		}
		c := m.doc(r)
		m.files[r.path] = slices.Delete(m.files[r.path], r.i, r.i+1)
		return fmt.Sprintf("channel %v of %v", c["name"], c["package"])
	},
	"deprecate": func(m *catalogModel, rng *rand.Rand, step int) string {
		if r, ok := pick(rng, m.find(isSchema("olm.deprecations"))); ok && rng.IntN(2) == 0 {
			pkg := m.doc(r)["package"]
			m.files[r.path] = slices.Delete(m.files[r.path], r.i, r.i+1)
			return fmt.Sprintf("deprecations of %v removed", pkg)
		}
		r, ok := pick(rng, m.find(isSchema("olm.package")))
		if !ok {
			return ""
		}
		pkg := m.doc(r)["name"].(string)
		m.remove(func(d map[string]any) bool { return d["schema"] == "olm.deprecations" && d["package"] == pkg })
		m.files[r.path] = append(m.files[r.path], map[string]any{"schema": "olm.deprecations", "package": pkg,
			"entries": []any{map[string]any{"reference": map[string]any{"schema": "olm.package"}, "message": fmt.Sprintf("gone at %d", step)}}})
		return "deprecations of " + pkg + " added"
	},
	"move a package": func(m *catalogModel, rng *rand.Rand, step int) string {
		pkg, ok := pick(rng, m.packages())
		if !ok {
			return ""
		}
		to, _ := pick(rng, m.paths())
		if rng.IntN(3) == 0 {
			to = fmt.Sprintf("moved/%d.json", step)
		}
		var moved []map[string]any
		for _, p := range m.paths() {
			m.files[p] = slices.DeleteFunc(m.files[p], func(d map[string]any) bool {
				if owner(d) == pkg {
					moved = append(moved, d)
					return true
				}
				return false
			})
		}
		m.files[to] = append(m.files[to], moved...)
		return "package " + pkg + " to " + to
	},
	"spread a package": func(m *catalogModel, rng *rand.Rand, step int) string {
		pkg, ok := pick(rng, m.packages())
		if !ok {
			return ""
		}
		to := fmt.Sprintf("spread/%s-%d.yaml", pkg, step)
		var moved []map[string]any
		for _, p := range m.paths() {
			m.files[p] = slices.DeleteFunc(m.files[p], func(d map[string]any) bool {
				if owner(d) == pkg && d["schema"] == "olm.bundle" && rng.IntN(2) == 0 {
					moved = append(moved, d)
					return true
				}
				return false
			})
		}
		m.files[to] = moved
		return fmt.Sprintf("%d bundles of %s to %s", len(moved), pkg, to)
	},
	"break or fix a package": func(m *catalogModel, rng *rand.Rand, step int) string {
		if r, ok := pick(rng, m.find(func(d map[string]any) bool { return d["schema"] == "olm.package" && d["broken"] != nil })); ok {
			d := m.doc(r)
			d["defaultChannel"] = d["broken"]
			delete(d, "broken")
			return fmt.Sprintf("package %v fixed", d["name"])
		}
		r, ok := pick(rng, m.find(isSchema("olm.package")))
		if !ok {
			return ""
		}
		d := m.doc(r)
		d["broken"] = d["defaultChannel"]
		d["defaultChannel"] = "no-such-channel"
		return fmt.Sprintf("package %v broken", d["name"])
	},
	"custom blob": func(m *catalogModel, rng *rand.Rand, step int) string {
		to, _ := pick(rng, m.paths())
		m.files[to] = append(m.files[to], map[string]any{"schema": "test.custom", "name": fmt.Sprintf("c%d", step)})
		return "custom blob in " + to
	},
	"touch nothing": func(m *catalogModel, rng *rand.Rand, step int) string { return "no change" },
}

// buildAt builds dir into a new index in tmp, incrementally from prev when
// it is set.
func buildAt(t testing.TB, tmp, name, dir, prev string) (string, Stats) {
	t.Helper()
	path := filepath.Join(tmp, name+".db")
	stats, err := Build(context.Background(), path, Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:test", Previous: prev}, time.Unix(0, 0))
	if err != nil {
		t.Fatalf("build %s: %v", name, err)
	}
	return path, stats
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
	for _, name := range []func(string) string{ContentPath, GzipPath} {
		g, err := os.ReadFile(name(got))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(name(want))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("%s: %d bytes, want %d, first difference at %d", filepath.Base(name(got)), len(g), len(w), i)
		}
	}
}

// differential applies steps random edits to the catalog in dir and, after
// each, checks the incremental build from the index before against a
// full build of the same content. It returns how many builds were
// incremental.
func differential(t *testing.T, dir string, seed uint64, steps int) int {
	rng := rand.New(rand.NewPCG(seed, 25))
	m := readModel(t, dir)
	tmp := t.TempDir()
	prev, _ := buildAt(t, tmp, "0-full", dir, "")
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range edits {
			if !yield(k) {
				return
			}
		}
	})
	incremental := 0
	for step := 1; step <= steps; step++ {
		var did []string
		for range 1 + rng.IntN(3) {
			name := names[rng.IntN(len(names))]
			if what := edits[name](m, rng, step); what != "" {
				did = append(did, name+": "+what)
			}
		}
		m.write(t, dir)
		got, stats := buildAt(t, tmp, fmt.Sprintf("%d-incremental", step), dir, prev)
		want, wantStats := buildAt(t, tmp, fmt.Sprintf("%d-full", step), dir, "")
		t.Logf("step %d: %s: %+v", step, strings.Join(did, "; "), stats.Build)
		if stats.Build.Mode == ModeIncremental {
			incremental++
		}
		sameIndex(t, got, want)
		stats.Build, wantStats.Build = BuildMode{}, BuildMode{}
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
	return incremental
}

// TestIncrementalMatchesFull is the differential test of incremental
// builds: on a generated catalog, reshaped so that a file holds several
// packages and a package spans several files, in JSON and YAML, random
// edits, each followed by an incremental build from the index before,
// which must give a full build's rows, content file and gzip copy. Set
// CATALOGD_INCREMENTAL_STEPS for a longer run.
func TestIncrementalMatchesFull(t *testing.T) {
	steps := 16
	if s := os.Getenv("CATALOGD_INCREMENTAL_STEPS"); s != "" {
		fmt.Sscan(s, &steps)
	}
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 12, Bundles: 60, BundleObjectBytes: 200, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	// Reshape: two packages share a YAML file, one package spans files.
	m := readModel(t, dir)
	pkgs := m.packages()
	rng := rand.New(rand.NewPCG(1, 1))
	edits["move a package"](m, rng, 0)
	for _, pkg := range pkgs[:2] {
		for _, p := range m.paths() {
			m.files[p] = slices.DeleteFunc(m.files[p], func(d map[string]any) bool {
				if owner(d) == pkg {
					m.files["shared/two.yaml"] = append(m.files["shared/two.yaml"], d)
					return true
				}
				return false
			})
		}
	}
	edits["spread a package"](m, rng, 0)
	m.write(t, dir)
	if n := differential(t, dir, 1, steps); n < steps/2 {
		t.Errorf("%d of %d builds incremental", n, steps)
	}
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
	if n := differential(t, dir, 2, steps); n < (steps+1)/2 {
		t.Errorf("%d of %d builds incremental", n, steps)
	}
}

// fullScan is a query plan's step that reads a whole table.
var fullScan = regexp.MustCompile(`^SCAN [\w.]+$`)

// TestIncrementalQueryPlans: every statement an incremental build runs
// against the previous index finds its rows through a key or an index,
// never by scanning a table.
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
	queries := append(append(slices.Clone(copyRowsQueries), carryQueries...), carriedCountsQuery, copiedBlobsQuery)
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
	m := readModel(t, dir)
	m.write(t, dir)
	pkgs := m.packages()
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
		{"content file cut short", func(t *testing.T, prev, dir string) {
			if err := os.Truncate(ContentPath(prev), 10); err != nil {
				t.Fatal(err)
			}
		}, "previous index inconsistent: "},
		{"gzip copy missing", func(t *testing.T, prev, dir string) {
			if err := os.Remove(GzipPath(prev)); err != nil {
				t.Fatal(err)
			}
		}, "previous gzip copy unreadable: "},
		{"most packages changed", func(t *testing.T, prev, dir string) {
			m := readModel(t, dir)
			for i := range len(pkgs)/2 + 1 {
				m.remove(func(d map[string]any) bool { return owner(d) == pkgs[i] })
			}
			m.write(t, dir)
		}, fmt.Sprintf("%d of %d packages changed", len(pkgs)/2+1, len(pkgs))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			if err := os.CopyFS(filepath.Join(work, "catalog"), os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			catalog := filepath.Join(work, "catalog")
			prev, _ := buildAt(t, work, "prev", catalog, "")
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
