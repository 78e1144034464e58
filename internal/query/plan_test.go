package query_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/query"
)

// fullScan matches a plan step that reads a whole table (or a subquery's
// rows, which the test tells apart), not through an index. Plans name a
// table by its alias in the query, if it has one (tableAlias).
var (
	fullScan   = regexp.MustCompile(`^SCAN (\w+)$`)
	tableAlias = regexp.MustCompile(`(?:FROM|JOIN) (\w+) (?:AS )?(\w+)`)
)

// wholePackage matches a plan step that reads every row of a package
// through an index; wholePackage's tables are those that grow with the
// package's bundles, where an answer of one bundle or one page then costs
// as much as the package is long.
var (
	wholePackage       = regexp.MustCompile(`^SEARCH \w+ USING (?:COVERING )?INDEX (\w+) \(package=\?\)$`)
	wholePackageTables = []string{"bundles", "channel_entries", "channel_entry_skips"}
)

// wholePackageByDesign are the statements that read a package whole on
// purpose: its skipRanges, parsed once per index file and kept, and what
// resolution judges (every bundle of the package, with its entries, read
// once per file), and whether a package without an olm.package blob has a
// bundle, which stops at the first.
var wholePackageByDesign = []string{
	"FROM channel_entries e JOIN bundles b ON b.package = e.package AND b.name = e.bundle WHERE e.package = ? AND e.skip_range != ''",
	// The names of a changed package's bundles, for a changes answer.
	"SELECT name FROM bundles WHERE package = ? ORDER BY name",
	"SELECT name, version, release, image, channels FROM bundles WHERE package = ? ORDER BY blob_id",
	"WHERE b.package = ? AND b.release = '' AND instr(b.version, '+') > 0 AND p.type = 'olm.package'",
	"WHERE b.package = ? AND p.type IN (?, ?, ?) ORDER BY b.id, p.position",
	"SELECT id, channel, bundle, replaces, skip_range FROM channel_entries WHERE package = ? ORDER BY channel, position",
	"SELECT entry_id, skip FROM channel_entry_skips WHERE package = ?",
	"SELECT count(*) > 0 FROM (SELECT 1 FROM bundles WHERE package = ? LIMIT 1)",
}

// wholeTableByDesign are the statements that read every row on purpose: the
// list of all problems, the unfiltered blob stream, and what is read once
// per index file and kept (packageSummaries).
var wholeTableByDesign = []string{
	"SELECT package, message FROM deprecations WHERE schema = 'olm.package' AND name = '' ORDER BY rowid",
	"SELECT c.package, c.name, c.head, p.default_channel FROM channels c LEFT JOIN packages p ON p.name = c.package",
	"SELECT package, position, message FROM problems ORDER BY package, id",
	"SELECT coalesce((SELECT offset + length FROM blobs ORDER BY id DESC LIMIT 1), 0)",
	// Every blob, once per index file, for the GraphQL schema's discovery.
	"SELECT schema, offset, length FROM blobs ORDER BY id",
}

// noSortByDesign are the statements that page through many rows and so
// must read them in order through an index rather than sort them first:
// a sort costs as much as the schema is long, whatever the page.
var noSortByDesign = []string{
	"SELECT offset, length FROM blobs WHERE schema = ? ORDER BY id LIMIT ? OFFSET ?",
	// Every entry of the catalog, in the registry's order, a page at a
	// time (ListBundles).
	strings.Join(strings.Fields(query.ListPageQuery), " "),
}

// TestQueryPlans runs every read of the API through connections that
// record each statement, then checks with EXPLAIN QUERY PLAN that each one
// is served by an index, so no answer grows with the catalog's size, nor
// reads a package whole. The reads are those the HTTP API makes for each of
// its endpoints; a new read belongs here too.
func TestQueryPlans(t *testing.T) {
	c, explain, trace := openIndex(t, os.DirFS(demoDir))
	ctx := context.Background()
	pkg, err := c.Package(ctx, "aurora-cache")
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.BundleByName(ctx, "aurora-cache", "aurora-cache.v1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name string
		read func() error
	}{
		{"counts", func() error { _, err := c.Counts(ctx); return err }},
		{"schema counts", func() error { _, err := c.SchemaCounts(ctx); return err }},
		{"all problems", func() error { _, err := c.Problems(ctx, ""); return err }},
		{"package problems", func() error { _, err := c.Problems(ctx, "aurora-cache"); return err }},
		{"package summaries", func() error { _, err := c.PackageSummaries(ctx); return err }},
		{"search", func() error { _, err := c.SearchPackages(ctx, `"backup"*`, "a", 10, 0); return err }},
		{"icon", func() error { _, _, err := c.Icon(ctx, "aurora-cache"); return err }},
		{"package deprecation", func() error { _, err := c.Deprecation(ctx, "aurora-cache", "olm.package", ""); return err }},
		{"channels", func() error { _, err := c.Channels(ctx, pkg); return err }},
		{"channel", func() error { _, err := c.Channel(ctx, pkg, "stable"); return err }},
		{"has channel", func() error { _, err := c.HasChannel(ctx, "aurora-cache", "fast"); return err }},
		{"bundles", func() error {
			page, err := c.Bundles(ctx, "aurora-cache", "", 1<<62, 3)
			if err == nil {
				_, err = c.BundleSummaries(ctx, "aurora-cache", page)
			}
			return err
		}},
		{"bundles of a channel", func() error { _, err := c.Bundles(ctx, "aurora-cache", "fast", 1<<62, -1); return err }},
		{"bundles by version", func() error { _, err := c.BundlesByVersion(ctx, "aurora-cache", "1.0.1"); return err }},
		{"bundle", func() error { _, err := c.BundleDetail(ctx, "aurora-cache", "aurora-cache.v1.3.0"); return err }},
		{"upgrades", func() error { _, err := c.UpgradesFrom(ctx, "aurora-cache", src, ""); return err }},
		{"upgrades in a channel", func() error { _, err := c.UpgradesFrom(ctx, "aurora-cache", src, "fast"); return err }},
		{"providers", func() error {
			_, err := c.Providers(ctx, query.GVK{Group: "observability.example.com", Version: "v1", Kind: "ServiceProbe"}, false)
			return err
		}},
		{"resolve", func() error {
			req, err := query.NewResolveRequest(query.ResolveParams{Package: "aurora-cache", Channels: []string{"stable"}, Version: ">=1.0.0", Installed: "1.1.0"})
			if err == nil {
				_, err = c.ResolvePackage(ctx, req)
			}
			return err
		}},
		{"resolve an unknown package", func() error {
			_, err := c.ResolvePackage(ctx, query.ResolveRequest{Package: "nope"})
			return err
		}},
		{"all blobs", func() error { _, err := c.BlobRanges(ctx, query.BlobFilter{}); return err }},
		{"blobs by schema and package", func() error {
			_, err := c.BlobRanges(ctx, query.BlobFilter{Schema: "olm.bundle", Package: "quarry-db"})
			return err
		}},
		{"blobs by package", func() error { _, err := c.BlobRanges(ctx, query.BlobFilter{Package: "quarry-db"}); return err }},
		{"blobs by name", func() error { _, err := c.BlobRanges(ctx, query.BlobFilter{Name: "quarry-db"}); return err }},
		{"package digests", func() error { _, err := c.PackageDigests(ctx); return err }},
		{"every blob", func() error { return c.EachBlob(ctx, func(string, []byte) error { return nil }) }},
		{"a page of a schema's blobs", func() error {
			return c.BlobPage(ctx, query.BlobFilter{Schema: "olm.bundle"}, query.Page{Offset: 5, Limit: 3}, func([]byte) error { return nil })
		}},
		{"a page of a package's blobs of a schema", func() error {
			return c.BlobPage(ctx, query.BlobFilter{Schema: "olm.bundle", Package: "quarry-db"}, query.Page{Limit: 3}, func([]byte) error { return nil })
		}},
		{"a page of blobs of a schema by name", func() error {
			return c.BlobPage(ctx, query.BlobFilter{Schema: "olm.bundle", Name: "quarry-db.v1.0.0"}, query.Page{Limit: 3}, func([]byte) error { return nil })
		}},
		{"package facts", func() error { _, err := c.PackageFacts(ctx, "aurora-cache"); return err }},
		{"entries replacing a bundle", func() error { _, err := c.EntriesReplacing(ctx, "aurora-cache.v1.1.0"); return err }},
		{"bundles of a channel replacing a bundle", func() error {
			_, err := c.BundlesReplacing(ctx, "aurora-cache", "stable", "aurora-cache.v1.1.0")
			return err
		}},
		{"channel head", func() error { _, _, err := c.ChannelHead(ctx, "aurora-cache", "stable"); return err }},
		{"entries providing a GVK", func() error {
			_, err := c.EntriesProviding(ctx, query.GVK{Group: "observability.example.com", Version: "v1", Kind: "ServiceProbe"}, false)
			return err
		}},
		{"heads providing a GVK", func() error {
			_, err := c.EntriesProviding(ctx, query.GVK{Group: "observability.example.com", Version: "v1", Kind: "ServiceProbe"}, true)
			return err
		}},
		{"in channel", func() error { _, err := c.InChannel(ctx, "aurora-cache", "stable", "aurora-cache.v1.1.0"); return err }},
		{"every bundle listed", func() error { return c.EachListedBundle(ctx, func(query.ChannelBundle) error { return nil }) }},
		{"related images", func() error { _, err := c.RelatedImages(ctx, "aurora-cache", "aurora-cache.v1.3.0"); return err }},
		{"a bundle of a channel", func() error {
			_, err := c.ChannelBundle(ctx, "aurora-cache", "stable", "aurora-cache.v1.3.0")
			return err
		}},
	}
	for _, r := range reads {
		if err := r.read(); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	}

	statements := trace.Statements()
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
	for _, query := range statements {
		// The plan does not depend on the values bound, only on their presence.
		args := make([]any, strings.Count(query, "?"))
		for i := range args {
			args[i] = ""
		}
		var steps []struct {
			ID      int    `db:"id"`
			Parent  int    `db:"parent"`
			NotUsed int    `db:"notused"`
			Detail  string `db:"detail"`
		}
		if err := explain.Select(&steps, "EXPLAIN QUERY PLAN "+query, args...); err != nil {
			t.Errorf("explain %s: %v", query, err)
			continue
		}
		var plan []string
		for _, step := range steps {
			plan = append(plan, step.Detail)
		}
		flat := strings.Join(strings.Fields(query), " ")
		byDesign, packageByDesign := false, false
		for _, d := range wholeTableByDesign {
			byDesign = byDesign || strings.Contains(flat, d)
		}
		for _, d := range wholePackageByDesign {
			packageByDesign = packageByDesign || strings.Contains(flat, d)
		}
		tables := map[string]string{}
		for _, m := range tableAlias.FindAllStringSubmatch(flat, -1) {
			tables[m[2]] = m[1]
		}
		for _, step := range plan {
			if strings.Contains(step, "TEMP B-TREE") && slices.Contains(noSortByDesign, flat) {
				t.Errorf("a sort (%s) in:\n%s\nplan: %v", step, query, plan)
			}
			if m := fullScan.FindStringSubmatch(step); m != nil && (slices.Contains(tableNames, m[1]) || slices.Contains(tableNames, tables[m[1]])) && !byDesign {
				t.Errorf("full scan of %s in:\n%s\nplan: %v", m[1], query, plan)
			}
			if m := wholePackage.FindStringSubmatch(step); m != nil && slices.Contains(wholePackageTables, indexTable[m[1]]) && !packageByDesign {
				t.Errorf("a whole package read (%s) in:\n%s\nplan: %v", step, query, plan)
			}
		}
	}
	if len(statements) < 20 {
		t.Errorf("only %d statements recorded; the tracer missed queries", len(statements))
	}
}
