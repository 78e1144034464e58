package httpapi

import (
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/benchenv"
)

// BenchmarkResolve reports p50/p99 latency of /resolve over two copies of
// the benchmark catalog (priorities 1 and 0, so every answer is a bundle),
// for a typical package (the median by bundles) and the widest one, with
// and without an installed version, a channel and a range.
func BenchmarkResolve(b *testing.B) {
	dir := benchenv.Catalog(b)
	indexes, err := store.New(b.TempDir(), logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { indexes.Close() })
	reg := catalogs.NewTable()
	for i, name := range []string{"one", "two"} {
		if _, _, _, err := indexes.Update(context.Background(), name, index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:" + name}); err != nil {
			b.Fatal(err)
		}
		reg.Put(catalogs.Catalog{Name: name, Priority: int32(1 - i)})
	}
	reg.MarkLoaded()
	srv := httptest.NewServer(New(reg, indexes, Options{Log: logr.Discard()}))
	b.Cleanup(srv.Close)

	snap, err := indexes.Acquire("one")
	if err != nil {
		b.Fatal(err)
	}
	db, err := sqlx.Open("sqlite", index.FileURI(snap.Info.Path, url.Values{"mode": {"ro"}, "immutable": {"1"}}))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	type pick struct {
		Package string `db:"package"`
		Bundles int    `db:"bundles"`
		Oldest  string `db:"oldest"`
		Channel string `db:"channel"`
	}
	const byBundles = `SELECT b.package, count(*) AS bundles,
		(SELECT version FROM bundles o WHERE o.package = b.package ORDER BY version_rank LIMIT 1) AS oldest,
		(SELECT default_channel FROM packages p WHERE p.name = b.package) AS channel
		FROM bundles b GROUP BY b.package ORDER BY count(*) DESC, b.package LIMIT 1 OFFSET ?`
	var packages int
	var widest, typical pick
	if err := db.Get(&packages, `SELECT count(*) FROM packages`); err != nil {
		b.Fatal(err)
	}
	if err := db.Get(&widest, byBundles, 0); err != nil {
		b.Fatal(err)
	}
	if err := db.Get(&typical, byBundles, packages/2); err != nil {
		b.Fatal(err)
	}
	snap.Release()
	b.Logf("typical package %s (%d bundles), widest %s (%d bundles)", typical.Package, typical.Bundles, widest.Package, widest.Bundles)

	for _, p := range []struct {
		name string
		pick pick
	}{{"typical", typical}, {"widest", widest}} {
		plain := "package=" + url.QueryEscape(p.pick.Package)
		constrained := plain + "&channels=" + url.QueryEscape(p.pick.Channel) + "&installed=" + url.QueryEscape(p.pick.Oldest) +
			"&upgradeConstraintPolicy=SelfCertified&version=" + url.QueryEscape(">="+p.pick.Oldest)
		successors := plain + "&installed=" + url.QueryEscape(p.pick.Oldest)
		for _, ep := range []struct{ name, path string }{
			{"all-catalogs", "/resolve?" + plain},
			{"all-catalogs-installed", "/resolve?" + successors + "&upgradeConstraintPolicy=SelfCertified"},
			{"all-catalogs-channel-range", "/resolve?" + constrained},
			{"one-catalog", "/catalogs/one/resolve?" + plain},
		} {
			b.Run(p.name+"-"+ep.name, func(b *testing.B) {
				for b.Loop() {
					reportLatency(b, srv.URL+ep.path, 1000)
				}
			})
		}
	}
}
