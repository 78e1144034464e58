package httpapi

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/catalogdb"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
)

// fullScan matches a plan step that reads a whole table (or a subquery's
// rows, which the test tells apart), not through an index.
var fullScan = regexp.MustCompile(`^SCAN (\w+)$`)

// wholePackage matches a plan step that reads every row of a package
// through an index; wholePackage's tables are those that grow with the
// package's bundles, where an answer of one bundle or one page then costs
// as much as the package is long.
var (
	wholePackage       = regexp.MustCompile(`^SEARCH \w+ USING (?:COVERING )?INDEX (\w+) \(package=\?\)$`)
	wholePackageTables = []string{"bundles", "channel_entries", "channel_entry_skips"}
)

// wholePackageByDesign are the statements that read a package whole on
// purpose: its skipRanges, parsed once per index file and kept.
var wholePackageByDesign = []string{
	"FROM channel_entries e JOIN bundles b ON b.package = e.package AND b.name = e.bundle WHERE e.package = ? AND e.skip_range != ''",
}

// wholeTableByDesign are the statements that read every row on purpose: the
// list of all problems, the unfiltered blob stream, and what is read once
// per index file and kept (packageSummaries).
var wholeTableByDesign = []string{
	"SELECT package, message FROM deprecations WHERE schema = 'olm.package' AND name = '' ORDER BY rowid",
	"SELECT c.package, c.name, c.head, p.default_channel FROM channels c LEFT JOIN packages p ON p.name = c.package",
	"SELECT package, message FROM problems ORDER BY package, id",
	"SELECT data FROM blobs ORDER BY id",
}

// TestQueryPlans runs every endpoint through connections that record each
// statement, then checks with EXPLAIN QUERY PLAN that each one is served by
// an index, so no request grows with the catalog's size, nor reads a
// package whole.
func TestQueryPlans(t *testing.T) {
	store, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ti := &tracingIndexes{store: store, catalogs: map[string]*catalogdb.Catalog{}, seen: &sync.Map{}}
	t.Cleanup(func() {
		for _, db := range ti.dbs {
			db.Close()
		}
	})
	h := newHarnessWith(t, store, ti)
	h.add("demo", demoDir, 0)

	paths := []string{
		"/catalogs", "/catalogs/demo",
		"/catalogs/demo/packages", "/catalogs/demo/packages?name=a&limit=1",
		"/catalogs/demo/packages?q=backup", "/catalogs/demo/packages/aurora-cache",
		"/catalogs/demo/packages/aurora-cache/icon", "/catalogs/demo/packages/aurora-cache/channels",
		"/catalogs/demo/packages/aurora-cache/channels/stable",
		"/catalogs/demo/packages/aurora-cache/bundles?limit=2",
		"/catalogs/demo/packages/aurora-cache/bundles?channel=fast&version=" + url.QueryEscape(">=1.0.0"),
		"/catalogs/demo/packages/aurora-cache/bundles/aurora-cache.v1.3.0",
		"/catalogs/demo/packages/aurora-cache/upgrades?from=aurora-cache.v1.1.0",
		"/catalogs/demo/packages/aurora-cache/upgrades?from=1.0.1&channel=fast",
		"/catalogs/demo/providers?group=observability.example.com&version=v1&kind=ServiceProbe",
		"/providers?group=&version=v1&kind=ConfigMap&latest=true",
		"/catalogs/demo/api/v1/all", "/catalogs/demo/api/v1/metas",
		"/catalogs/demo/api/v1/metas?schema=olm.bundle&package=quarry-db",
		"/catalogs/demo/api/v1/metas?package=quarry-db", "/catalogs/demo/api/v1/metas?name=quarry-db",
	}
	for _, p := range paths {
		if resp := h.get(p, "Accept-Encoding", "identity"); resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", p, resp.StatusCode)
		}
	}
	// The /all reader seeks by offset on Range requests.
	if resp := h.get("/catalogs/demo/api/v1/all", "Range", "bytes=5000-5100"); resp.StatusCode != 206 {
		t.Fatalf("range: status %d", resp.StatusCode)
	}

	snap, err := store.Acquire("demo")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	explain, err := sqlx.Open("sqlite", index.FileURI(snap.Info.Path, url.Values{"mode": {"ro"}, "immutable": {"1"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer explain.Close()
	var tableNames []string
	if err := explain.Select(&tableNames, `SELECT name FROM sqlite_schema WHERE type = 'table'`); err != nil {
		t.Fatal(err)
	}
	var indexes []struct {
		Name  string `db:"name"`
		Table string `db:"tbl_name"`
	}
	if err := explain.Select(&indexes, `SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index'`); err != nil {
		t.Fatal(err)
	}
	indexTable := map[string]string{}
	for _, ix := range indexes {
		indexTable[ix.Name] = ix.Table
	}
	n := 0
	ti.seen.Range(func(k, _ any) bool {
		query := k.(string)
		n++
		// The plan does not depend on the values bound, only on their presence.
		args := make([]any, strings.Count(query, "?"))
		for i := range args {
			args[i] = ""
		}
		rows, err := explain.Queryx("EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			t.Errorf("explain %s: %v", query, err)
			return true
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		flat := strings.Join(strings.Fields(query), " ")
		byDesign, packageByDesign := false, false
		for _, d := range wholeTableByDesign {
			byDesign = byDesign || strings.Contains(flat, d)
		}
		for _, d := range wholePackageByDesign {
			packageByDesign = packageByDesign || strings.Contains(flat, d)
		}
		for _, step := range plan {
			if m := fullScan.FindStringSubmatch(step); m != nil && slices.Contains(tableNames, m[1]) && !byDesign {
				t.Errorf("full scan of %s in:\n%s\nplan: %v", m[1], query, plan)
			}
			if m := wholePackage.FindStringSubmatch(step); m != nil && slices.Contains(wholePackageTables, indexTable[m[1]]) && !packageByDesign {
				t.Errorf("a whole package read (%s) in:\n%s\nplan: %v", step, query, plan)
			}
		}
		return true
	})
	if n < 20 {
		t.Errorf("only %d statements recorded; the tracer missed queries", n)
	}
}
