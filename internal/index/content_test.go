package index

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/fbc"
)

// Catalog pieces for TestBadContent, one package p with channel c.
const (
	pkgP    = `{"schema":"olm.package","name":"p","defaultChannel":"c"}`
	chanP12 = `{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v1"},{"name":"p.v2","replaces":"p.v1"}]}`
)

func bundleP(name, version, extraProps string) string {
	return fmt.Sprintf(`{"schema":"olm.bundle","name":%q,"package":"p","image":"example.com/p:%s","properties":[{"type":"olm.package","value":{"packageName":"p","version":%q}}%s]}`,
		name, version, version, extraProps)
}

func lines(docs ...string) []byte { return []byte(strings.Join(docs, "\n") + "\n") }

// nested is a document nested depth levels deep.
func nested(depth int) string {
	return `{"schema":"x","v":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"
}

// aliasBomb is a YAML document whose aliases expand to 10^10 strings.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("schema: x\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// hugeBlob is a custom blob of about n bytes.
func hugeBlob(n int) string {
	return `{"schema":"io.example.huge","name":"h","data":"` + strings.Repeat("A", n) + `"}`
}

// tinyFiles is a catalog of n files of one small blob each, in one
// directory.
func tinyFiles(n int) map[string]string {
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("tiny/%07d.json", i)] = fmt.Sprintf(`{"schema":"io.example.tiny","name":"t%d"}`, i)
	}
	return files
}

// TestBadContent builds catalogs that are wrong in one way each. Content
// that is not a catalog fails the build with an error naming the file and
// saying what is wrong; a package that is a catalog but not a valid one is
// indexed with operator-registry's problem recorded. Either way nothing but
// the index file (after a success) is left in its directory.
func TestBadContent(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		limits fbc.Limits
		// wantErr are what the build's error must say; none means success.
		wantErr []string
		// wantProblem is what the problem of package p must say; "" means
		// none (only on success).
		wantProblem []string
		check       func(t *testing.T, db *sqlx.DB)
	}{
		{name: "malformed JSON", files: map[string]string{"p/c.json": pkgP + "\n" + `{"schema":"olm.channel","name":"c",`},
			wantErr: []string{"parse p/c.json", "invalid catalog"}},
		{name: "malformed YAML", files: map[string]string{"p/c.yaml": "schema: olm.package\nname: [p\n"},
			wantErr: []string{"parse p/c.yaml", "invalid catalog", "yaml"}},
		{name: "blob without schema", files: map[string]string{"c.json": `{"name":"p"}`},
			wantErr: []string{"parse c.json", "blob without a schema"}},
		{name: "binary file", files: map[string]string{"logo.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
			wantErr: []string{"parse logo.png", "not a text file"}},
		{name: "NUL bytes, 4096", files: map[string]string{"z.json": strings.Repeat("\x00", 4096)},
			wantErr: []string{"parse z.json", "not a text file", "offset 0"}},
		{name: "NUL bytes, 8192", files: map[string]string{"z.yaml": strings.Repeat("\x00", 8192)},
			wantErr: []string{"parse z.yaml", "not a text file"}},
		{name: "NUL bytes, 100", files: map[string]string{"z.json": strings.Repeat("\x00", 100)},
			wantErr: []string{"parse z.json", "not a text file"}},
		{name: "NUL after a good blob", files: map[string]string{"c.json": pkgP + "\n" + strings.Repeat("\x00", 5000)},
			wantErr: []string{"parse c.json", "not a text file", fmt.Sprintf("offset %d", len(pkgP)+1)}},
		{name: "duplicate packages",
			files:       map[string]string{"c.json": string(lines(pkgP, pkgP, chanP12, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "2.0.0", "")))},
			wantProblem: []string{`olm.package "p" is defined 2 times`}},
		{name: "channel with two heads",
			files: map[string]string{"c.json": string(lines(pkgP, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "2.0.0", ""),
				`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v1"},{"name":"p.v2"}]}`))},
			wantProblem: []string{`channel "c" has 2 heads`, `"p.v1", "p.v2"`}},
		{name: "replaces cycle",
			files: map[string]string{"c.json": string(lines(pkgP, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "2.0.0", ""), bundleP("p.v3", "3.0.0", ""),
				`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v3","replaces":"p.v2"},{"name":"p.v2","replaces":"p.v1"},{"name":"p.v1","replaces":"p.v2"}]}`))},
			wantProblem: []string{`channel "c": the replaces chain from the head loops`, "p.v2 -> p.v1 -> p.v2"}},
		{name: "bundle in no channel",
			files:       map[string]string{"c.json": string(lines(pkgP, chanP12, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "2.0.0", ""), bundleP("p.v3", "3.0.0", "")))},
			wantProblem: []string{`bundle "p.v3" is in no channel`}},
		{name: "bad version",
			files:       map[string]string{"c.json": string(lines(pkgP, chanP12, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "two", "")))},
			wantProblem: []string{"p.v2", "two"}},
		{name: "bad skipRange",
			files: map[string]string{"c.json": string(lines(pkgP, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "2.0.0", ""),
				`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v1"},{"name":"p.v2","replaces":"p.v1","skipRange":">=1.0.0 <"}]}`))},
			check: func(t *testing.T, db *sqlx.DB) {
				// operator-registry does not check skipRange syntax; the
				// range is kept as written and matches nothing.
				if n := count(t, db, `SELECT count(*) FROM channel_entries WHERE skip_range = '>=1.0.0 <'`); n != 1 {
					t.Errorf("%d entries keep the bad skipRange, want 1", n)
				}
			}},
		// A property without a value is kept as null, but operator-registry
		// rejects it.
		{name: "property values of every JSON type, and none",
			wantProblem: []string{`bundle "p.v2": properties[7] (x.none): the value is missing`},
			files: map[string]string{"c.json": string(lines(pkgP, chanP12, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "2.0.0",
				`,{"type":"x.null","value":null},{"type":"x.bool","value":true},{"type":"x.number","value":-1.5e3},{"type":"x.string","value":"s\"q\u00e9"},`+
					`{"type":"x.array","value":[1,"a",null]},{"type":"x.object","value":{"b":{"c":[]}}},{"type":"x.none"}`)))},
			check: func(t *testing.T, db *sqlx.DB) {
				want := map[string]string{"x.null": "null", "x.bool": "true", "x.number": "-1500", "x.string": `"s\"qé"`,
					"x.array": `[1,"a",null]`, "x.object": `{"b":{"c":[]}}`, "x.none": "null"}
				rows := propertyValues(t, db, `bu.name = 'p.v2' AND p.type LIKE 'x.%'`)
				got := map[string]string{}
				for _, r := range rows {
					got[r.Type] = r.Value
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("property values %v, want %v", got, want)
				}
			}},
		{name: "unknown schemas kept",
			files: map[string]string{"c.json": string(lines(pkgP, chanP12, bundleP("p.v1", "1.0.0", ""), bundleP("p.v2", "2.0.0", ""),
				`{"schema":"io.example.note","package":"p","name":"n","data":[true,{"z":1,"a":2}]}`, `{"schema":"io.example.other"}`))},
			check: func(t *testing.T, db *sqlx.DB) {
				got := blobsWhere(t, db, `schema LIKE 'io.example.%'`)
				want := []string{`{"data":[true,{"a":2,"z":1}],"name":"n","package":"p","schema":"io.example.note"}` + "\n", `{"schema":"io.example.other"}` + "\n"}
				if !slices.Equal(got, want) {
					t.Errorf("unknown-schema blobs stored as %q, want %q", got, want)
				}
			}},
		{name: "blob over the default limit", files: map[string]string{"big/c.json": pkgP + "\n" + hugeBlob(int(fbc.DefaultBlobBytes))},
			wantErr: []string{"parse big/c.json", fmt.Sprintf("limit of %d bytes per blob", fbc.DefaultBlobBytes)}},
		{name: "blob over a set limit", limits: fbc.Limits{BlobBytes: 4096}, files: map[string]string{"c.json": pkgP + "\n" + hugeBlob(5000)},
			wantErr: []string{"parse c.json", "limit of 4096 bytes per blob", "parse c.json:2:1:"}},
		{name: "YAML document over a set limit", limits: fbc.Limits{BlobBytes: 4096},
			files:   map[string]string{"c.yaml": "schema: olm.package\nname: p\n---\nschema: io.example.huge\ndata: " + strings.Repeat("A", 5000) + "\n"},
			wantErr: []string{"parse c.yaml", "limit of 4096 bytes per blob"}},
		{name: "blob at a set limit", limits: fbc.Limits{BlobBytes: int64(len(hugeBlob(5000)))},
			files: map[string]string{"c.json": hugeBlob(5000) + "\n"}},
		{name: "file over a set limit", limits: fbc.Limits{FileBytes: 100},
			files:   map[string]string{"a/small.json": pkgP, "b/c.json": string(lines(pkgP, pkgP))},
			wantErr: []string{"parse b/c.json", "limit of 100 bytes per catalog file"}},
		{name: "more entries than a set limit", limits: fbc.Limits{Files: 3},
			files:   map[string]string{"a/c.json": `{"schema":"io.example.note"}`, "b/d.json": `{"schema":"io.example.note"}`},
			wantErr: []string{"more than 3 files and directories, the limit per catalog"}},
		{name: "entries at a set limit", limits: fbc.Limits{Files: 4},
			files: map[string]string{"a/c.json": `{"schema":"io.example.note"}`, "b/d.json": `{"schema":"io.example.note"}`}},
		{name: "ignored files count against the limit", limits: fbc.Limits{Files: 2},
			files:   map[string]string{".indexignore": "ignored.json\n", "ignored.json": pkgP, "c.json": pkgP},
			wantErr: []string{"more than 2 files and directories"}},
		{name: "more entries than the default limit", files: tinyFiles(fbc.DefaultFiles + 1),
			wantErr: []string{fmt.Sprintf("more than %d files and directories, the limit per catalog", fbc.DefaultFiles)}},
		{name: "JSON nested 100,000 deep", files: map[string]string{"n.json": nested(100_000)},
			wantErr: []string{"parse n.json", "exceeded max depth"}},
		{name: "YAML nested 100,000 deep", files: map[string]string{"n.yaml": "schema: x\nv: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"},
			wantErr: []string{"parse n.yaml", "exceeded max depth"}},
		{name: "YAML alias bomb", files: map[string]string{"bomb.yaml": aliasBomb()},
			wantErr: []string{"parse bomb.yaml", "excessive aliasing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			root := t.TempDir()
			path := filepath.Join(root, "index.db")
			_, err := Build(context.Background(), path, Content{FS: fsys, Digest: "sha256:bad", Limits: tt.limits}, time.Now())
			var left []string
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				left = append(left, e.Name())
			}
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("build succeeded, want an error saying %q", tt.wantErr)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %.300q does not say %q", err, s)
					}
				}
				if !errors.Is(err, ErrInvalidCatalog) {
					t.Errorf("error %.300q is not ErrInvalidCatalog", err)
				}
				if len(left) > 0 {
					t.Errorf("failed build left %v", left)
				}
				return
			}
			if err != nil {
				t.Fatalf("build: %.500v", err)
			}
			var want []string
			for _, f := range Files(path) {
				want = append(want, filepath.Base(f))
			}
			if !slices.Equal(left, want) {
				t.Errorf("build left %v, want only %v", left, want)
			}
			db := sqlx.MustOpen("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
			defer db.Close()
			var problems []string
			if err := db.Select(&problems, `SELECT message FROM problems WHERE package = 'p'`); err != nil {
				t.Fatal(err)
			}
			switch {
			case len(tt.wantProblem) == 0 && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case len(tt.wantProblem) > 0 && len(problems) != 1:
				t.Errorf("problems %q, want one saying %q", problems, tt.wantProblem)
			case len(tt.wantProblem) > 0:
				for _, s := range tt.wantProblem {
					if !strings.Contains(problems[0], s) {
						t.Errorf("problem %q does not say %q", problems[0], s)
					}
				}
			}
			if tt.check != nil {
				tt.check(t, db)
			}
		})
	}
}
