package index

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/migrations"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

const demoDir = "../../test/testdata/demo"

// buildDir indexes a catalog directory into a fresh file and opens it.
func buildDir(t *testing.T, dir string) (*sqlx.DB, Stats) {
	t.Helper()
	return buildFS(t, os.DirFS(dir), dir)
}

// buildFS indexes a catalog into a fresh file and opens it.
func buildFS(t testing.TB, fsys fs.FS, ref string) (*sqlx.DB, Stats) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.db")
	stats, err := Build(context.Background(), path, Content{FS: fsys, Ref: ref, Digest: "sha256:test"}, time.Now())
	if err != nil {
		t.Fatalf("build %s: %v", ref, err)
	}
	db, err := sqlx.Open("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, stats
}

// dbPath is the file db has open.
func dbPath(t *testing.T, db *sqlx.DB) string {
	t.Helper()
	var path string
	if err := db.Get(&path, `SELECT file FROM pragma_database_list WHERE name = 'main'`); err != nil {
		t.Fatal(err)
	}
	return path
}

// contentFile reads the content file of the index db has open.
func contentFile(t *testing.T, db *sqlx.DB) []byte {
	t.Helper()
	return streamBytes(t, dbPath(t, db), false)
}

// gunzipFile reads the gzip copy of the index at path, decompressed by the
// standard library (not the compressor that wrote it).
func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(streamBytes(t, path, true)))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// blobsWhere returns the bytes of the blobs matching cond, in id order,
// read through their ranges of the content file.
func blobsWhere(t *testing.T, db *sqlx.DB, cond string, args ...any) []string {
	t.Helper()
	var ranges []struct {
		Offset int64 `db:"offset"`
		Length int64 `db:"length"`
	}
	if err := db.Select(&ranges, `SELECT offset, length FROM blobs WHERE `+cond+` ORDER BY id`, args...); err != nil {
		t.Fatal(err)
	}
	content := contentFile(t, db)
	out := make([]string, len(ranges))
	for i, r := range ranges {
		out[i] = string(content[r.Offset : r.Offset+r.Length])
	}
	return out
}

// propertyValue is a property of a bundle with its value's JSON.
type propertyValue struct{ Type, Value string }

// propertyValues returns the properties matching cond (on properties p), in
// bundle and position order, each value read from where it stands: the
// row, or its range of the bundle's blob in the content file.
func propertyValues(t *testing.T, db *sqlx.DB, cond string, args ...any) []propertyValue {
	t.Helper()
	var rows []struct {
		Type   string         `db:"type"`
		Value  sql.NullString `db:"value"`
		Start  sql.NullInt64  `db:"start"`
		Length sql.NullInt64  `db:"value_length"`
	}
	if err := db.Select(&rows, `SELECT p.type, p.value, b.offset + p.value_start AS start, p.value_length
		FROM properties p JOIN bundles bu ON bu.id = p.bundle_id JOIN blobs b ON b.id = bu.blob_id
		WHERE `+cond+` ORDER BY p.bundle_id, p.position`, args...); err != nil {
		t.Fatal(err)
	}
	content := contentFile(t, db)
	out := make([]propertyValue, len(rows))
	for i, r := range rows {
		out[i] = propertyValue{r.Type, r.Value.String}
		if !r.Value.Valid {
			out[i].Value = string(content[r.Start.Int64 : r.Start.Int64+r.Length.Int64])
		}
	}
	return out
}

// largeObjects is a generated catalog whose bundles carry CRDs of over a
// MiB each: bundle blobs of several MB, which the walk and the loader
// handle apart from small ones (see insertBytes).
func largeObjects(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{
		Packages: 2, Bundles: 8, BundleObjectBytes: 2000, CRDObjectBytes: 1_200_000, Seed: 3,
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testCatalogs are the catalogs tests index: the shared fixtures and one
// of large bundle objects.
var testCatalogs = append(fbcfacts.Fixtures(demoDir), fbcfacts.Fixture{Name: "large-objects", Dir: largeObjects})

// TestBuildMatchesCatalog indexes catalogs and compares every package,
// channel head, bundle and property with what the files say, read by
// fbcfacts (which shares no code with the index).
func TestBuildMatchesCatalog(t *testing.T) {
	for _, tt := range testCatalogs {
		t.Run(tt.Name, func(t *testing.T) {
			dir := tt.Dir(t)
			want := fbcfacts.Load(t, dir)
			db, stats := buildDir(t, dir)
			checkCounts(t, db, stats, want)
			checkPackages(t, db, want)
			checkChannels(t, db, want)
			checkBundles(t, db, want)
			checkBlobs(t, db, want)
			checkPropertySpans(t, db)
		})
	}
}

// checkPropertySpans checks that every bundle has its property spans
// recorded and that they give, sliced from its blob, the properties the
// properties table holds (propertyValues): the fixtures' property types
// have no escapes, the one reason a bundle may have none.
func checkPropertySpans(t *testing.T, db *sqlx.DB) {
	t.Helper()
	var bundles []struct {
		Name   string `db:"name"`
		Offset int64  `db:"offset"`
		Length int64  `db:"length"`
		Spans  []byte `db:"spans"`
	}
	if err := db.Select(&bundles, `SELECT bu.name, b.offset, b.length, s.spans FROM bundles bu
		JOIN blobs b ON b.id = bu.blob_id LEFT JOIN property_spans s ON s.bundle_id = bu.id ORDER BY bu.id`); err != nil {
		t.Fatal(err)
	}
	content := contentFile(t, db)
	var got []propertyValue
	for _, b := range bundles {
		if b.Spans == nil {
			t.Errorf("bundle %q has no property spans", b.Name)
			continue
		}
		blob := content[b.Offset : b.Offset+b.Length]
		if !fbc.EachPropertyIn(blob, b.Spans, func(typ, value []byte) {
			if value == nil {
				value = []byte("null")
			}
			got = append(got, propertyValue{string(typ), string(value)})
		}) {
			t.Errorf("bundle %q: its property spans do not fit its blob", b.Name)
		}
	}
	// In bundle order, as propertyValues reads them.
	if want := propertyValues(t, db, `1 = 1`); !slices.Equal(got, want) {
		t.Errorf("property spans give %d properties, the properties table %d, not the same", len(got), len(want))
	}
}

// TestCommunityFigures pins the figures the shared catalog's README states.
func TestCommunityFigures(t *testing.T) {
	db, _ := buildDir(t, fbcfacts.SharedCommunity(t))
	for _, c := range []struct {
		query string
		want  int
	}{
		{"SELECT count(*) FROM packages", 37},
		{"SELECT count(*) FROM channels", 85},
		{"SELECT count(*) FROM bundles", 803},
		{"SELECT count(*) FROM properties WHERE type = 'olm.gvk'", 6845},
		{"SELECT count(*) FROM (SELECT DISTINCT grp, version, kind FROM provided_gvks)", 266},
		{"SELECT count(*) FROM properties WHERE type = 'olm.gvk.required'", 40},
		{"SELECT count(*) FROM properties WHERE type = 'olm.package.required'", 8},
		{"SELECT count(*) FROM properties WHERE type = 'olm.csv.metadata'", 803},
		{"SELECT count(*) FROM problems", 0},
	} {
		var got int
		if err := db.Get(&got, c.query); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s = %d, want %d", c.query, got, c.want)
		}
	}
}

func count(t *testing.T, db *sqlx.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Get(&n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func checkCounts(t *testing.T, db *sqlx.DB, stats Stats, want *fbcfacts.Catalog) {
	t.Helper()
	gvks, distinct := 0, map[fbcfacts.GVK]bool{}
	props := 0
	for _, bs := range want.Bundles {
		for _, b := range bs {
			props += len(b.Properties)
			for _, g := range b.GVKs("olm.gvk") {
				gvks++
				distinct[g] = true
			}
		}
	}
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"packages", count(t, db, "SELECT count(*) FROM packages"), len(want.Packages)},
		{"channels", count(t, db, "SELECT count(*) FROM channels"), want.CountChannels()},
		{"bundles", count(t, db, "SELECT count(*) FROM bundles"), want.CountBundles()},
		{"blobs", count(t, db, "SELECT count(*) FROM blobs"), len(want.Blobs)},
		{"properties", count(t, db, "SELECT count(*) FROM properties"), props},
		{"olm.gvk properties", count(t, db, "SELECT count(*) FROM properties WHERE type = 'olm.gvk'"), gvks},
		{"provided GVK rows", count(t, db, "SELECT count(*) FROM provided_gvks"), gvks},
		{"distinct GVKs", count(t, db, "SELECT count(*) FROM (SELECT DISTINCT grp, version, kind FROM provided_gvks)"), len(distinct)},
		{"stats bundles", stats.Bundles, want.CountBundles()},
		{"stats blobs", stats.Blobs, len(want.Blobs)},
	} {
		if c.got != c.want {
			t.Errorf("%s: index has %d, catalog has %d", c.what, c.got, c.want)
		}
	}
	schemas := map[string]int{}
	for _, b := range want.Blobs {
		schemas[b.Schema]++
	}
	for schema, n := range schemas {
		if stats.Schemas[schema] != n {
			t.Errorf("schema %s: stats say %d, catalog has %d", schema, stats.Schemas[schema], n)
		}
	}
}

func checkPackages(t *testing.T, db *sqlx.DB, want *fbcfacts.Catalog) {
	t.Helper()
	for name, p := range want.Packages {
		var got struct {
			DefaultChannel string `db:"default_channel"`
			Description    string `db:"description"`
			IconData       []byte `db:"icon_data"`
			IconType       string `db:"icon_media_type"`
		}
		if err := db.Get(&got, `SELECT default_channel, description, icon_data, icon_media_type FROM packages WHERE name = ?`, name); err != nil {
			t.Fatalf("package %s: %v", name, err)
		}
		if got.DefaultChannel != p.DefaultChannel || got.Description != p.Description {
			t.Errorf("package %s: default channel %q, description %d bytes; catalog says %q, %d bytes",
				name, got.DefaultChannel, len(got.Description), p.DefaultChannel, len(p.Description))
		}
		var wantIcon []byte
		var wantType string
		if p.Icon != nil {
			wantIcon, wantType = p.Icon.Data, p.Icon.MediaType
		}
		if !bytes.Equal(got.IconData, wantIcon) || got.IconType != wantType {
			t.Errorf("package %s: icon %d bytes %q, catalog has %d bytes %q", name, len(got.IconData), got.IconType, len(wantIcon), wantType)
		}
	}
}

func checkChannels(t *testing.T, db *sqlx.DB, want *fbcfacts.Catalog) {
	t.Helper()
	for pkg, channels := range want.Channels {
		for name, ch := range channels {
			var head, problem *string
			if err := db.QueryRow(`SELECT head, head_problem FROM channels WHERE package = ? AND name = ?`, pkg, name).Scan(&head, &problem); err != nil {
				t.Fatalf("channel %s/%s: %v", pkg, name, err)
			}
			heads := ch.Heads()
			switch {
			case len(heads) == 1 && (head == nil || *head != heads[0]):
				t.Errorf("channel %s/%s: head %v, catalog says %s", pkg, name, head, heads[0])
			case len(heads) != 1 && (head != nil || problem == nil || !containsAll(*problem, heads)):
				t.Errorf("channel %s/%s: head %v problem %v, catalog has heads %v", pkg, name, head, problem, heads)
			}
			if n := count(t, db, `SELECT count(*) FROM channel_entries WHERE package = ? AND channel = ?`, pkg, name); n != len(ch.Entries) {
				t.Errorf("channel %s/%s: %d entries, catalog has %d", pkg, name, n, len(ch.Entries))
			}
			for i, e := range ch.Entries {
				var got struct {
					Bundle    string `db:"bundle"`
					Replaces  string `db:"replaces"`
					SkipRange string `db:"skip_range"`
					ID        int64  `db:"id"`
				}
				if err := db.Get(&got, `SELECT id, bundle, replaces, skip_range FROM channel_entries WHERE package = ? AND channel = ? AND position = ?`, pkg, name, i); err != nil {
					t.Fatal(err)
				}
				var skips []string
				if err := db.Select(&skips, `SELECT skip FROM channel_entry_skips WHERE entry_id = ? ORDER BY rowid`, got.ID); err != nil {
					t.Fatal(err)
				}
				if got.Bundle != e.Name || got.Replaces != e.Replaces || got.SkipRange != e.SkipRange || strings.Join(skips, ",") != strings.Join(e.Skips, ",") {
					t.Errorf("channel %s/%s entry %d: %+v skips %v, catalog says %+v", pkg, name, i, got, skips, e)
				}
			}
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func checkBundles(t *testing.T, db *sqlx.DB, want *fbcfacts.Catalog) {
	t.Helper()
	for pkg, bundles := range want.Bundles {
		for name, b := range bundles {
			var got struct {
				ID      int64  `db:"id"`
				Version string `db:"version"`
				Image   string `db:"image"`
			}
			if err := db.Get(&got, `SELECT id, version, image FROM bundles WHERE package = ? AND name = ?`, pkg, name); err != nil {
				t.Fatalf("bundle %s/%s: %v", pkg, name, err)
			}
			if got.Version != b.Version() || got.Image != b.Image {
				t.Errorf("bundle %s/%s: version %q image %q, catalog says %q %q", pkg, name, got.Version, got.Image, b.Version(), b.Image)
			}
			props := propertyValues(t, db, `p.bundle_id = ?`, got.ID)
			if len(props) != len(b.Properties) {
				t.Fatalf("bundle %s/%s: %d properties, catalog has %d", pkg, name, len(props), len(b.Properties))
			}
			// Values are exactly the bytes of the stored blob's properties, and
			// mean what the catalog file says.
			data := blobsWhere(t, db, `id = (SELECT blob_id FROM bundles WHERE id = ?)`, got.ID)[0]
			var stored struct {
				Properties []struct {
					Value json.RawMessage `json:"value"`
				} `json:"properties"`
			}
			if err := json.Unmarshal([]byte(data), &stored); err != nil || len(stored.Properties) != len(props) {
				t.Fatalf("bundle %s/%s: stored blob has %d properties (%v)", pkg, name, len(stored.Properties), err)
			}
			for i, p := range props {
				if p.Type != b.Properties[i].Type || !fbcfacts.JSONEqual([]byte(p.Value), b.Properties[i].Value) {
					t.Errorf("bundle %s/%s property %d: %s %.80s, catalog says %s %.80s", pkg, name, i, p.Type, p.Value, b.Properties[i].Type, b.Properties[i].Value)
				}
				if p.Value != string(stored.Properties[i].Value) {
					t.Errorf("bundle %s/%s property %d: value %.80s is not the blob's bytes %.80s", pkg, name, i, p.Value, stored.Properties[i].Value)
				}
			}
			if n := count(t, db, `SELECT count(*) FROM related_images WHERE bundle_id = ?`, got.ID); n != len(b.RelatedImages) {
				t.Errorf("bundle %s/%s: %d related images, catalog has %d", pkg, name, n, len(b.RelatedImages))
			}
			if n := count(t, db, `SELECT count(*) FROM required_gvks WHERE bundle_id = ?`, got.ID); n != len(b.GVKs("olm.gvk.required")) {
				t.Errorf("bundle %s/%s: %d required GVKs, catalog has %d", pkg, name, n, len(b.GVKs("olm.gvk.required")))
			}
		}
	}
}

// checkBlobs compares the stored blobs, in order, with catalogd's encoding
// of the documents, and their offsets with the /all stream's layout.
func checkBlobs(t *testing.T, db *sqlx.DB, want *fbcfacts.Catalog) {
	t.Helper()
	var blobs []struct {
		Offset int64 `db:"offset"`
		Length int64 `db:"length"`
	}
	if err := db.Select(&blobs, `SELECT offset, length FROM blobs ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	content := contentFile(t, db)
	var all bytes.Buffer
	for i, b := range blobs {
		if b.Offset != int64(all.Len()) {
			t.Fatalf("blob %d: offset %d, stream position %d", i, b.Offset, all.Len())
		}
		all.Write(content[b.Offset : b.Offset+b.Length])
	}
	wantAll := want.JSONLines()
	if !bytes.Equal(all.Bytes(), wantAll) || !bytes.Equal(content, wantAll) {
		t.Errorf("blobs differ from the catalogd encoding of the catalog (%d bytes in ranges, %d in the file, want %d)", all.Len(), len(content), len(wantAll))
	}
	if unzipped := gunzipFile(t, dbPath(t, db)); !bytes.Equal(unzipped, wantAll) {
		t.Errorf("the gzip copy holds %d bytes, not the %d of the catalog's blobs", len(unzipped), len(wantAll))
	}
	if n := count(t, db, `SELECT all_size FROM catalog_info`); n != all.Len() {
		t.Errorf("all_size %d, stream has %d bytes", n, all.Len())
	}
}

// buildProblems indexes fsys and returns the open index, its stats and the
// recorded problems by package, in order.
func buildProblems(t testing.TB, fsys fstest.MapFS) (*sqlx.DB, Stats, map[string][]string) {
	t.Helper()
	db, stats := buildFS(t, fsys, "test")
	var rows []struct {
		Package string `db:"package"`
		Message string `db:"message"`
	}
	if err := db.Select(&rows, `SELECT package, message FROM problems ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	problems := map[string][]string{}
	for _, r := range rows {
		problems[r.Package] = append(problems[r.Package], r.Message)
	}
	return db, stats, problems
}

// TestProblemsRecorded: a package that fails validation is indexed and its
// problems kept; blobs of unknown schemas are kept; good packages are clean.
func TestProblemsRecorded(t *testing.T) {
	fsys := fbcgen.ReplacesChain("good", 2, false)
	for k, v := range fbcgen.ReplacesChain("broken", 2, false) {
		fsys[k] = v
	}
	// A channel naming a bundle that does not exist, and a custom schema.
	fsys["broken/extra.json"] = &fstest.MapFile{Data: []byte(
		`{"schema":"olm.channel","name":"fast","package":"broken","entries":[{"name":"broken.v9.9.9"}]}
{"schema":"io.example.custom","package":"broken","name":"note","data":{"x":[1,2,3]}}`)}
	db, stats, problems := buildProblems(t, fsys)
	if len(problems) != 1 || len(problems["broken"]) != 1 || !strings.Contains(problems["broken"][0], "broken.v9.9.9") {
		t.Errorf("problems = %+v, want one for package broken naming broken.v9.9.9", problems)
	}
	if stats.Problems != 1 || stats.Schemas["io.example.custom"] != 1 {
		t.Errorf("stats = %+v", stats)
	}
	if n := count(t, db, `SELECT count(*) FROM bundles WHERE package = 'broken'`); n != 2 {
		t.Errorf("broken package has %d bundles indexed, want 2", n)
	}
	if custom := blobsWhere(t, db, `schema = 'io.example.custom'`)[0]; custom != `{"data":{"x":[1,2,3]},"name":"note","package":"broken","schema":"io.example.custom"}`+"\n" {
		t.Errorf("custom blob stored as %q", custom)
	}
}

// TestPropertyProblems breaks packages in the ways property values can be
// broken and checks that each is rejected exactly when operator-registry
// rejects it, loading the whole package with declcfg.LoadFS, and that the
// problems name each broken property by its position in the bundle.
func TestPropertyProblems(t *testing.T) {
	object := base64.StdEncoding.EncodeToString([]byte(`{"kind":"ConfigMap"}`))
	props := map[string]struct {
		extra string
		want  []string
	}{
		"good":       {`{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}}`, nil},
		"badgvk":     {`{"type":"olm.gvk","value":"not an object"}`, []string{"properties[3] (olm.gvk)"}},
		"badreq":     {`{"type":"olm.gvk.required","value":{"group":1}}`, []string{"properties[3] (olm.gvk.required)"}},
		"badpkgreq":  {`{"type":"olm.package.required","value":["p"]}`, []string{"properties[3] (olm.package.required)"}},
		"badchannel": {`{"type":"olm.channel","value":"stable"}`, []string{"properties[3] (olm.channel)"}},
		"badcsv":     {`{"type":"olm.csv.metadata","value":{"keywords":"k"}}`, []string{"properties[3] (olm.csv.metadata)"}},
		"badobject":  {`{"type":"olm.bundle.object","value":{"data":"!"}}`, []string{"properties[3] (olm.bundle.object)"}},
		"nopkgvalue": {`{"type":"olm.gvk","value":{"kind":"K"}},{"type":"olm.package"}`, []string{"properties[4] (olm.package): the value is missing"}},
		"twobad":     {`{"type":"olm.gvk.required","value":[]},{"type":"olm.gvk","value":7}`, []string{"properties[3] (olm.gvk.required)", "properties[4] (olm.gvk)"}},
	}
	fsys := fstest.MapFS{}
	for pkg, p := range props {
		var b strings.Builder
		fmt.Fprintf(&b, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
		fmt.Fprintf(&b, `{"schema":"olm.channel","name":"stable","package":%q,"entries":[{"name":"%s.v1"},{"name":"%s.v2","replaces":"%s.v1"}]}`+"\n", pkg, pkg, pkg, pkg)
		for i, p := range []string{`{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}}`, p.extra} {
			fmt.Fprintf(&b, `{"schema":"olm.bundle","name":"%s.v%d","package":%q,"image":"example.com/%s:%d","properties":[`+
				`{"type":"olm.package","value":{"packageName":%q,"version":"%d.0.0"}},{"type":"olm.bundle.object","value":{"data":%q}},`+
				`{"type":"olm.csv.metadata","value":{"displayName":"D"}},%s]}`+"\n", pkg, i+1, pkg, pkg, i+1, pkg, i+1, object, p)
		}
		fsys[pkg+"/catalog.json"] = &fstest.MapFile{Data: []byte(b.String())}
	}

	_, _, got := buildProblems(t, fsys)
	for pkg, p := range props {
		_, err := declcfg.LoadFS(context.Background(), fstest.MapFS{"c.json": fsys[pkg+"/catalog.json"]})
		if err == nil {
			cfg, _ := declcfg.LoadFS(context.Background(), fstest.MapFS{"c.json": fsys[pkg+"/catalog.json"]})
			_, err = declcfg.ConvertToModel(*cfg)
		}
		if (err != nil) != (len(got[pkg]) > 0) {
			t.Errorf("package %s: problems %q, operator-registry says %v", pkg, got[pkg], err)
		}
		if len(got[pkg]) != len(p.want) {
			t.Errorf("package %s: problems %q, want %d", pkg, got[pkg], len(p.want))
			continue
		}
		for i, want := range p.want {
			if prefix := fmt.Sprintf("bundle %q: %s", pkg+".v2", want); !strings.HasPrefix(got[pkg][i], prefix) {
				t.Errorf("package %s: problem %q, want it to start with %q", pkg, got[pkg][i], prefix)
			}
		}
	}
}

// TestVersionRank checks semver order, pre-releases included, against an
// order written out by hand.
func TestVersionRank(t *testing.T) {
	versions := []string{"1.10.0", "1.2.0", "2.0.0-rc.1", "2.0.0", "2.0.0-beta.2", "2.0.0-beta.10", "0.9.0", "not-a-version"}
	want := []string{"not-a-version", "0.9.0", "1.2.0", "1.10.0", "2.0.0-beta.2", "2.0.0-beta.10", "2.0.0-rc.1", "2.0.0"}
	var b strings.Builder
	b.WriteString(`{"schema":"olm.package","name":"p","defaultChannel":"c"}` + "\n")
	var entries []string
	for _, v := range versions {
		b.WriteString(`{"schema":"olm.bundle","name":"p.v` + v + `","package":"p","image":"i","properties":[{"type":"olm.package","value":{"packageName":"p","version":"` + v + `"}}]}` + "\n")
		entries = append(entries, `{"name":"p.v`+v+`"}`)
	}
	b.WriteString(`{"schema":"olm.channel","name":"c","package":"p","entries":[` + strings.Join(entries, ",") + `]}`)
	path := filepath.Join(t.TempDir(), "index.db")
	if _, err := Build(context.Background(), path, Content{FS: fstest.MapFS{"c.json": {Data: []byte(b.String())}}, Digest: "sha256:v"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	db := sqlx.MustOpen("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
	defer db.Close()
	var got []string
	if err := db.Select(&got, `SELECT version FROM bundles WHERE package = 'p' ORDER BY version_rank`); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rank order %v, want %v", got, want)
	}
}

// TestRepeatsIndexedOnce: a catalog that repeats what the index keys on (a
// package, channel, bundle, channel entry or GVK) still builds; the first
// one is indexed and validation reports the repeats. (That a repeated
// entry's skipRange gives its upgrade edge once is internal/httpapi's
// TestRepeatedEntryUpgrades: ranges are evaluated when read.)
func TestRepeatsIndexedOnce(t *testing.T) {
	bundle := func(v string) string {
		return `{"schema":"olm.bundle","name":"p.v` + v + `","package":"p","image":"i","properties":[` +
			`{"type":"olm.package","value":{"packageName":"p","version":"` + v + `"}},` +
			`{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}},{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}}]}`
	}
	catalog := strings.Join([]string{
		`{"schema":"olm.package","name":"p","defaultChannel":"c"}`,
		`{"schema":"olm.package","name":"p","defaultChannel":"other"}`,
		bundle("1.0.0"), bundle("2.0.0"), bundle("2.0.0"),
		`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v1.0.0"},` +
			`{"name":"p.v2.0.0","replaces":"p.v1.0.0","skipRange":"<2.0.0"},{"name":"p.v2.0.0","replaces":"p.v1.0.0","skipRange":"<2.0.0"}]}`,
		`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v1.0.0"}]}`,
	}, "\n")
	db, stats, problems := buildProblems(t, fstest.MapFS{"c.json": {Data: []byte(catalog)}})
	if stats.Packages != 1 || stats.Channels != 1 || stats.Bundles != 2 {
		t.Errorf("stats = %+v, want 1 package, 1 channel, 2 bundles", stats)
	}
	if len(problems["p"]) == 0 {
		t.Error("validation reported no problem for the repeats")
	}
	if n := count(t, db, `SELECT count(*) FROM provided_gvks`); n != 4 {
		t.Errorf("%d provided GVK rows, want 2 for each of the 2 indexed bundles", n)
	}
	for _, table := range bundleParts {
		if n := count(t, db, `SELECT count(*) FROM `+table+` WHERE bundle_id NOT IN (SELECT id FROM bundles)`); n != 0 {
			t.Errorf("%s has %d rows of bundles that are not indexed", table, n)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM sqlite_schema WHERE name LIKE 'work%'`); n != 0 {
		t.Errorf("%d work tables left in the index", n)
	}
	var defaultChannel string
	if err := db.Get(&defaultChannel, `SELECT default_channel FROM packages WHERE name = 'p'`); err != nil || defaultChannel != "c" {
		t.Errorf("default channel %q (%v), want the first package's c", defaultChannel, err)
	}
}

// TestCatalogInfo: the file records its schema digest, source, digest,
// build time and build mode; the digest is the source's ReadDigest when it
// has one. ReadInfo reads the same record back.
func TestCatalogInfo(t *testing.T) {
	tests := []struct {
		name       string
		readDigest func() string
		previous   string
		want       string
		wantBuild  BuildMode
	}{
		{name: "digest", want: "sha256:abc", wantBuild: BuildMode{Mode: ModeFull, PackagesRebuilt: 1}},
		{name: "digest of what was read", readDigest: func() string { return "sha256:read" }, want: "sha256:read",
			wantBuild: BuildMode{Mode: ModeFull, PackagesRebuilt: 1}},
		{name: "previous index missing", previous: "/nonexistent/index.db", want: "sha256:abc",
			wantBuild: BuildMode{Mode: ModeFull, Reason: "no previous index", PackagesRebuilt: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "index.db")
			built := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			src := Content{FS: fbcgen.ReplacesChain("x", 1, false), Ref: "quay.io/x:1", Digest: "sha256:abc", ReadDigest: tc.readDigest, Previous: tc.previous}
			stats, err := Build(context.Background(), path, src, built)
			if err != nil {
				t.Fatal(err)
			}
			db := sqlx.MustOpen("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
			defer db.Close()
			var info struct {
				Ref     string `db:"source_ref"`
				Digest  string `db:"content_digest"`
				BuiltAt string `db:"built_at"`
				Schema  string `db:"schema_digest"`
			}
			if err := db.Get(&info, `SELECT source_ref, content_digest, built_at, schema_digest FROM catalog_info`); err != nil {
				t.Fatal(err)
			}
			if info.Ref != "quay.io/x:1" || info.Digest != tc.want || info.BuiltAt != "2026-11-21T12:00:00Z" || info.Schema != migrations.Digest() {
				t.Errorf("catalog info = %+v, want digest %s and schema digest %s", info, tc.want, migrations.Digest())
			}
			if stats.Digest != tc.want {
				t.Errorf("stats digest %s, want %s", stats.Digest, tc.want)
			}
			if stats.Build != tc.wantBuild {
				t.Errorf("stats build %+v, want %+v", stats.Build, tc.wantBuild)
			}
			read, err := ReadInfo(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			wantInfo := Info{SourceRef: "quay.io/x:1", Digest: tc.want, BuiltAt: built, AllBytes: stats.AllBytes, Build: tc.wantBuild}
			if read != wantInfo {
				t.Errorf("ReadInfo = %+v, want %+v", read, wantInfo)
			}
		})
	}
}

// openCounter counts the files opened through it and not yet closed.
type openCounter struct {
	fs.FS
	mu   sync.Mutex
	open int
}

func (c *openCounter) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.open++
	c.mu.Unlock()
	return &countedFile{File: f, c: c}, nil
}

func (c *openCounter) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(c.FS, name) }

func (c *openCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

type countedFile struct {
	fs.File
	c    *openCounter
	once sync.Once
}

func (f *countedFile) Close() error {
	f.once.Do(func() {
		f.c.mu.Lock()
		f.c.open--
		f.c.mu.Unlock()
	})
	return f.File.Close()
}

// TestBuildClosesWhatItOpens: Build asks for ReadDigest only once it has
// read everything, and returns, however it ends, only once every file it
// opened is closed: what it read is then all that ReadDigest counts.
func TestBuildClosesWhatItOpens(t *testing.T) {
	many := fstest.MapFS{}
	for i := range 64 {
		maps.Copy(many, fbcgen.ReplacesChain(fmt.Sprintf("p%02d", i), 50, false))
	}
	broken := maps.Clone(many)
	broken["p00/catalog.json"] = &fstest.MapFile{Data: []byte(`{"schema":"olm.package","name":"p00"}` + "\n" + `{"schema":`)}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		fsys    fstest.MapFS
		wantErr bool
	}{
		{name: "built", ctx: context.Background(), fsys: many},
		{name: "bad content", ctx: context.Background(), fsys: broken, wantErr: true},
		{name: "cancelled", ctx: cancelled, fsys: many, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counter := &openCounter{FS: tc.fsys}
			openAtReadDigest := -1
			src := Content{FS: counter, Digest: "sha256:x", ReadDigest: func() string {
				openAtReadDigest = counter.count()
				return "sha256:read"
			}}
			_, err := Build(tc.ctx, filepath.Join(t.TempDir(), "index.db"), src, time.Now())
			if (err != nil) != tc.wantErr {
				t.Fatalf("build: %v, want an error: %v", err, tc.wantErr)
			}
			if n := counter.count(); n != 0 {
				t.Errorf("%d files still open when Build returned", n)
			}
			if !tc.wantErr && openAtReadDigest != 0 {
				t.Errorf("%d files open when Build asked for ReadDigest, want 0", openAtReadDigest)
			}
		})
	}
}

// schemaObject matches the statements of the schema files that create a named
// object, capturing the kind of object and its name.
var schemaObject = regexp.MustCompile(`(?im)^\s*CREATE\s+(?:UNIQUE\s+)?(?:(VIRTUAL)\s+)?(TABLE|INDEX|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)`)

// createStatement matches the start of every CREATE statement, so that
// TestSchemaApplied notices one that schemaObject does not understand.
var createStatement = regexp.MustCompile(`(?im)^\s*CREATE\s`)

// TestSchemaApplied: a built index holds every table, view and index that the
// schema files create, each of its kind; the expectation is read from the
// files themselves, so it follows any change to them.
func TestSchemaApplied(t *testing.T) {
	want := map[string]string{}
	for _, file := range []string{migrations.Tables, migrations.Indexes, migrations.Counts} {
		data, err := migrations.FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		matches := schemaObject.FindAllStringSubmatch(string(data), -1)
		if creates := len(createStatement.FindAllString(string(data), -1)); creates == 0 || len(matches) != creates {
			t.Fatalf("schema file %s: %d CREATE statements, %d of them recognised by this test", file, creates, len(matches))
		}
		for _, m := range matches {
			// sqlite_schema lists a virtual table as a table.
			want[m[3]] = strings.ToLower(m[2])
		}
	}

	path := filepath.Join(t.TempDir(), "index.db")
	if _, err := Build(context.Background(), path, Content{FS: fbcgen.ReplacesChain("x", 1, false), Ref: "x", Digest: "sha256:abc"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	db := sqlx.MustOpen("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
	defer db.Close()
	var objects []struct {
		Name string `db:"name"`
		Type string `db:"type"`
	}
	if err := db.Select(&objects, `SELECT name, type FROM sqlite_schema`); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range objects {
		got[o.Name] = o.Type
	}
	for name, kind := range want {
		if got[name] != kind {
			t.Errorf("%s %s of the schema files: found as %q in the built index", kind, name, got[name])
		}
	}
}
