package httpapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/tlstest"
)

// BenchmarkHTTP serves three copies of the benchmark catalog over loopback
// HTTP and reports p50/p99 latency per endpoint, the request rate with
// concurrent clients, and the peak RSS while serving.
func BenchmarkHTTP(b *testing.B) {
	dir := benchenv.Catalog(b)
	var cats []benchCatalog
	for i, name := range []string{"one", "two", "three"} {
		cats = append(cats, benchCatalog{name, index.Content{FS: os.DirFS(dir), Ref: dir, Digest: fmt.Sprintf("sha256:%d", i)}})
	}
	store, srv := benchServer(b, cats...)

	snap, err := store.Acquire("one")
	if err != nil {
		b.Fatal(err)
	}
	// The answers measured are those of a real catalog's shape: a package
	// with a channel of 100 or more entries (the shortest such), upgrades
	// from its oldest bundle, the GVK that about 95 bundles provide (see
	// BENCH_GEN_FLAGS), a typical GVK (the median by providers) and the
	// widest one (thousands of providers).
	var pkg, channel, head, from, group, version, kind, tgroup, tversion, tkind string
	// Picking the answers to measure takes SQL of its own, on a connection
	// of the benchmark's.
	db, err := sqlx.Open("sqlite", index.FileURI(snap.Info.Path, url.Values{"mode": {"ro"}, "immutable": {"1"}}))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(db.QueryRow(`SELECT package, channel FROM channel_entries GROUP BY package, channel HAVING count(*) >= 100 ORDER BY count(*), package LIMIT 1`).Scan(&pkg, &channel))
	must(db.Get(&head, `SELECT head FROM channels WHERE package = ? AND name = ?`, pkg, channel))
	must(db.Get(&from, `SELECT name FROM bundles WHERE package = ? ORDER BY version_rank LIMIT 1`, pkg))
	const byProviders = `SELECT grp, version, kind FROM provided_gvks GROUP BY grp, version, kind ORDER BY count(DISTINCT bundle_id) DESC, kind LIMIT 1 OFFSET ?`
	var distinct, wide int
	must(db.Get(&distinct, `SELECT count(*) FROM (SELECT DISTINCT grp, version, kind FROM provided_gvks)`))
	must(db.QueryRow(byProviders, 0).Scan(&group, &version, &kind))
	must(db.QueryRow(byProviders, distinct/2).Scan(&tgroup, &tversion, &tkind))
	w := fbcgen.WideGVK
	must(db.Get(&wide, `SELECT count(DISTINCT bundle_id) FROM provided_gvks WHERE grp = ? AND version = ? AND kind = ?`, w.Group, w.Version, w.Kind))
	snap.Release()
	if wide < 90 {
		b.Logf("only %d bundles provide %s/%s %s; generate the catalog with -wide-gvk-bundles (make bench does)", wide, w.Group, w.Version, w.Kind)
	}

	widest := "group=" + url.QueryEscape(group) + "&version=" + version + "&kind=" + kind
	typical := "group=" + url.QueryEscape(tgroup) + "&version=" + tversion + "&kind=" + tkind
	wideGVK := "group=" + url.QueryEscape(w.Group) + "&version=" + w.Version + "&kind=" + w.Kind
	base := "/catalogs/one/packages/" + pkg
	endpoints := []struct{ name, path string }{
		{"catalogs", "/catalogs"},
		{"catalog", "/catalogs/one"},
		{"packages-50", "/catalogs/one/packages?limit=50"},
		{"packages-100", "/catalogs/one/packages?limit=100"},
		{"search", "/catalogs/one/packages?q=operator&limit=20"},
		{"package", base},
		{"channels-with-heads", base + "/channels"},
		{"channel-100-entries", base + "/channels/" + channel},
		{"bundles-100", base + "/bundles?limit=100"},
		{"bundles-version-20", base + "/bundles?limit=20&version=" + url.QueryEscape(">=0.0.0")},
		{"bundle", base + "/bundles/" + head},
		{"upgrades-from-oldest", base + "/upgrades?from=" + from},
		{"providers-typical", "/catalogs/one/providers?" + typical},
		{"providers-typical-latest", "/catalogs/one/providers?latest=true&" + typical},
		{"providers-all-catalogs-typical", "/providers?" + typical},
		{"providers-wide", "/catalogs/one/providers?" + wideGVK},
		{"providers-all-catalogs-wide", "/providers?" + wideGVK},
		{"providers-widest", "/catalogs/one/providers?" + widest},
		{"metas-package", "/catalogs/one/api/v1/metas?schema=olm.package"},
	}
	debug.FreeOSMemory()
	benchenv.ResetPeakRSS(b)
	for _, ep := range endpoints {
		b.Run(ep.name, func(b *testing.B) {
			for b.Loop() {
				reportLatency(b, srv.URL+ep.path, 1000)
			}
		})
	}
	b.Run("rate", func(b *testing.B) {
		for b.Loop() {
			var done atomic.Int64
			deadline := time.Now().Add(3 * time.Second)
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := w; time.Now().Before(deadline); i++ {
						benchGet(b, srv.URL+endpoints[4+i%12].path)
						done.Add(1)
					}
				}(w)
			}
			wg.Wait()
			b.ReportMetric(float64(done.Load())/3, "req/s")
		}
	})
	// The peak since the indexes were built: serving the three catalogs,
	// with the load generator in the same process.
	b.Run("memory", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(benchenv.PeakRSSMiB(), "serving-peak-RSS-MiB")
	})
}

// BenchmarkBulk measures the bulk answers a catalog client downloads whole
// (/api/v1/all plain and gzip, every bundle, a big package's blobs) against
// their floor in the same run: http.ServeFile of the same bytes, each
// answer written to a file once, on a second loopback server, fetched by
// the same client. Each is measured over plain HTTP, where net/http sends
// files with sendfile, and over TLS (-tls), the deployed mode, where every
// byte is read into user space and encrypted (crypto/tls has no sendfile):
// the API and the floor each have a TLS listener too, with the server's
// TLS settings (internal/server). It reports p50/p99 latency and
// throughput per answer and per floor, then the peak RSS of the process
// while 8 clients pull /all and every bundle in a loop, over each.
func BenchmarkBulk(b *testing.B) {
	dir := benchenv.Catalog(b)
	_, srv := benchServer(b, benchCatalog{"one", index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:bulk"}})
	// The client takes answers as they come: no transparent gzip.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
	b.Cleanup(client.CloseIdleConnections)
	base := srv.URL + "/catalogs/one/api/v1/"
	floorDir := b.TempDir()
	bulkSave(b, client, base+"all", "identity", filepath.Join(floorDir, "all"))
	big := biggestPackage(b, filepath.Join(floorDir, "all"))
	answers := []struct{ name, path, encoding string }{
		{"all", "all", "identity"},
		{"all-gzip", "all", "gzip"},
		{"metas-bundles", "metas?schema=olm.bundle", "identity"},
		{"metas-bundles-gzip", "metas?schema=olm.bundle", "gzip"},
		{"metas-big-package", "metas?package=" + url.QueryEscape(big), "identity"},
	}
	floors := http.NewServeMux()
	for _, a := range answers {
		file := filepath.Join(floorDir, a.name)
		bulkSave(b, client, base+a.path, a.encoding, file)
		floors.HandleFunc("/"+a.name, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, file) })
	}
	floorSrv := httptest.NewServer(floors)
	b.Cleanup(floorSrv.Close)
	tlsConfig, tlsClient := benchTLS(b)
	tlsSrv := benchTLSServer(b, srv.Config.Handler, tlsConfig)
	tlsFloorSrv := benchTLSServer(b, floors, tlsConfig)
	tlsBase := tlsSrv.URL + "/catalogs/one/api/v1/"
	for _, a := range answers {
		b.Run(a.name, func(b *testing.B) {
			for b.Loop() {
				reportBulk(b, client, base+a.path, a.encoding)
			}
		})
		b.Run(a.name+"-floor", func(b *testing.B) {
			for b.Loop() {
				reportBulk(b, client, floorSrv.URL+"/"+a.name, "identity")
			}
		})
		b.Run(a.name+"-tls", func(b *testing.B) {
			for b.Loop() {
				reportBulk(b, tlsClient, tlsBase+a.path, a.encoding)
			}
		})
		b.Run(a.name+"-tls-floor", func(b *testing.B) {
			for b.Loop() {
				reportBulk(b, tlsClient, tlsFloorSrv.URL+"/"+a.name, "identity")
			}
		})
	}
	// /all, then every bundle.
	pulled := []string{base + answers[0].path, base + answers[2].path}
	b.Run("memory-8-clients", func(b *testing.B) {
		for b.Loop() {
			reportBulkMemory(b, client, pulled)
		}
	})
	b.Run("memory-8-clients-tls", func(b *testing.B) {
		for b.Loop() {
			reportBulkMemory(b, tlsClient, []string{tlsBase + answers[0].path, tlsBase + answers[2].path})
		}
	})
}

// benchTLS returns the TLS settings of internal/server (TLS 1.2 at least,
// HTTP/1.1 only) with a certificate for 127.0.0.1, and a client that
// trusts it and takes answers as they come.
func benchTLS(b *testing.B) (*tls.Config, *http.Client) {
	certPEM, keyPEM := tlstest.SelfSigned(b, "127.0.0.1")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	client := &http.Client{Transport: &http.Transport{
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
		TLSClientConfig:     &tls.Config{RootCAs: roots},
	}}
	b.Cleanup(client.CloseIdleConnections)
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}, client
}

// benchTLSServer serves handler over TLS on loopback until the benchmark
// ends.
func benchTLSServer(b *testing.B, handler http.Handler, config *tls.Config) *httptest.Server {
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = config
	srv.StartTLS()
	b.Cleanup(srv.Close)
	return srv
}

// reportBulkMemory has 8 clients fetch the addresses in turn for 5 s,
// reading each answer and dropping it, and reports the process's peak RSS
// meanwhile.
func reportBulkMemory(b *testing.B, client *http.Client, addrs []string) {
	debug.FreeOSMemory()
	benchenv.ResetPeakRSS(b)
	deadline := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := c; time.Now().Before(deadline); i++ {
				// Read and dropped: the process's RSS is the server's.
				resp, err := client.Get(addrs[i%len(addrs)])
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(benchenv.PeakRSSMiB(), "peak-RSS-MiB")
}

// bulkSave fetches addr asking for encoding into a new file at path; the
// answer must be a 200 in that encoding.
func bulkSave(b *testing.B, client *http.Client, addr, encoding, path string) {
	req, err := http.NewRequest(http.MethodGet, addr, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || (encoding == "gzip") != (resp.Header.Get("Content-Encoding") == "gzip") {
		b.Fatalf("%s: status %d, Content-Encoding %q", addr, resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Fatal(err)
	}
}

// biggestPackage returns the package whose blobs take the most bytes of
// the /all stream saved at path.
func biggestPackage(b *testing.B, path string) string {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	bytesOf := map[string]int{}
	for r := bufio.NewReader(f); ; {
		line, err := r.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			b.Fatal(err)
		}
		var blob struct {
			Schema, Package, Name string
		}
		if err := json.Unmarshal(line, &blob); err != nil {
			b.Fatal(err)
		}
		pkg := blob.Package
		if blob.Schema == "olm.package" {
			pkg = blob.Name
		}
		bytesOf[pkg] += len(line)
	}
	var big string
	for pkg, n := range bytesOf {
		if n > bytesOf[big] || (n == bytesOf[big] && pkg < big) {
			big = pkg
		}
	}
	return big
}

// reportBulk fetches addr 20 times, one after the other, or fewer (5 at
// least) when that takes over 15 s (answers of a GiB catalog), reading each
// answer to the end without keeping it, and reports the p50 and p99
// latency (of 20 requests, the slowest) and the throughput at the p50.
func reportBulk(b *testing.B, client *http.Client, addr, encoding string) {
	var lat []time.Duration
	var size int64
	for began := time.Now(); len(lat) < 20 && (len(lat) < 5 || time.Since(began) < 15*time.Second); {
		req, err := http.NewRequest(http.MethodGet, addr, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", encoding)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		size, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d, %v", addr, resp.StatusCode, err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	n := len(lat)
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(size)/(1<<20)/lat[n/2].Seconds(), "MiB/s")
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// BenchmarkBundleManyProperties reads one bundle of 20,000 properties (a
// blob of about 1 MB), which took seconds per request while each
// property's value was cut from a fresh copy of the whole blob.
func BenchmarkBundleManyProperties(b *testing.B) {
	const n = 20000
	props := make([]string, 0, n+1)
	props = append(props, `{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}`)
	for i := range n - 1 {
		props = append(props, fmt.Sprintf(`{"type":"example.com/p%d","value":{"index":%d,"text":"some filler text"}}`, i, i))
	}
	dir := b.TempDir()
	catalog := `{"schema":"olm.package","name":"p","defaultChannel":"c"}` + "\n" +
		`{"schema":"olm.bundle","name":"p.v1.0.0","package":"p","image":"i","properties":[` + strings.Join(props, ",") + "]}\n" +
		`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v1.0.0"}]}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "c.json"), []byte(catalog), 0o644); err != nil {
		b.Fatal(err)
	}
	_, srv := benchServer(b, benchCatalog{"one", index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:1"}})
	for b.Loop() {
		resp, err := http.Get(srv.URL + "/catalogs/one/packages/p/bundles/p.v1.0.0")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkReplacesChainHTTP serves one package whose single channel is a
// replaces chain of 50,000 bundles (the catalog BenchmarkBuildReplacesChain
// builds) over loopback HTTP and reports p50/p99 latency of what a client
// of such a package asks: the upgrades from the oldest bundle and from one
// in the middle (each one edge and the head, which must not cost more for
// a longer chain), the channel (all 50,000 entries: the endpoint has no
// limit) and the channel's bundles a page of 100 at a time.
func BenchmarkReplacesChainHTTP(b *testing.B) {
	const n = 50_000
	fsys := fbcgen.ReplacesChain("chain", n, false)
	_, srv := benchServer(b, benchCatalog{"one", index.Content{FS: fsys, Ref: "chain", Digest: "sha256:chain"}})
	base := srv.URL + "/catalogs/one/packages/chain"
	// The answers are checked once, so that a fast wrong answer cannot pass
	// for a fast one.
	for _, from := range []int{1, n / 2} {
		var list client.UpgradeList
		benchGetJSON(b, fmt.Sprintf("%s/upgrades?from=chain.v1.0.%d", base, from), &list)
		want := fmt.Sprintf("chain.v1.0.%d", from+1)
		if len(list.Items) != 1 || list.Items[0].Name != want || len(list.Heads) != 1 || list.Heads[0].Name != fmt.Sprintf("chain.v1.0.%d", n) {
			b.Fatalf("upgrades from chain.v1.0.%d: %+v, want %s and the head chain.v1.0.%d", from, list, want, n)
		}
	}
	var ch client.Channel
	if benchGetJSON(b, base+"/channels/stable", &ch); len(ch.Entries) != n {
		b.Fatalf("channel stable has %d entries, want %d", len(ch.Entries), n)
	}
	endpoints := []struct {
		name, path string
		requests   int
	}{
		{"upgrades-from-oldest", fmt.Sprintf("/upgrades?from=chain.v1.0.%d", 1), 1000},
		{"upgrades-from-middle", fmt.Sprintf("/upgrades?from=chain.v1.0.%d", n/2), 1000},
		{"upgrades-from-middle-by-version", fmt.Sprintf("/upgrades?from=1.0.%d", n/2), 1000},
		{"channel-50000-entries", "/channels/stable", 50},
		{"channel-bundles-100", "/bundles?channel=stable&limit=100", 1000},
	}
	for _, ep := range endpoints {
		b.Run(ep.name, func(b *testing.B) {
			for b.Loop() {
				reportLatency(b, base+ep.path, ep.requests)
			}
		})
	}
}

// benchCatalog is a catalog benchServer serves.
type benchCatalog struct {
	name string
	src  index.Content
}

// benchServer indexes the catalogs and serves them over loopback HTTP until
// the benchmark ends.
func benchServer(b *testing.B, cats ...benchCatalog) (*store.Store, *httptest.Server) {
	b.Helper()
	indexes, err := store.New(b.TempDir(), logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { indexes.Close() })
	reg := catalogs.NewTable()
	for _, c := range cats {
		if _, _, _, err := indexes.Update(context.Background(), c.name, c.src); err != nil {
			b.Fatal(err)
		}
		reg.Put(catalogs.Catalog{Name: c.name, Source: c.src.Ref})
	}
	api := New(reg, indexes, Options{Log: logr.Discard()})
	srv := httptest.NewServer(api)
	b.Cleanup(srv.Close)
	return indexes, srv
}

// benchGet fetches addr and reads the answer, which must be a 200.
func benchGet(b *testing.B, addr string) []byte {
	resp, err := http.Get(addr)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: status %d, %v", addr, resp.StatusCode, err)
	}
	return body
}

// benchGetJSON fetches addr and decodes its JSON answer into v.
func benchGetJSON(b *testing.B, addr string, v any) {
	if err := json.Unmarshal(benchGet(b, addr), v); err != nil {
		b.Fatalf("%s: %v", addr, err)
	}
}

// reportLatency fetches addr n times, one after the other, and reports the
// p50 and p99 latency.
func reportLatency(b *testing.B, addr string, n int) {
	lat := make([]time.Duration, n)
	for i := range lat {
		start := time.Now()
		benchGet(b, addr)
		lat[i] = time.Since(start)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkChanges swaps in a second version of the benchmark catalog in
// which 10 packages changed (a deprecation added to each) and reports the
// p50 and p99 latency of /changes since the first, over loopback HTTP, and
// of a package's channels beside it.
func BenchmarkChanges(b *testing.B) {
	dir := benchenv.Catalog(b)
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	// The second version links the first's files, but for the changed
	// packages' catalog files, rewritten with a deprecation added.
	v2 := filepath.Join(b.TempDir(), "v2")
	changed := map[string]bool{}
	for i, e := range entries {
		if e.IsDir() && len(changed) < 10 && i%7 == 0 {
			changed[e.Name()] = true
		}
	}
	if len(changed) < 10 {
		b.Fatalf("only %d package directories to change in %s", len(changed), dir)
	}
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		target := filepath.Join(v2, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		pkg, _, _ := strings.Cut(rel, string(filepath.Separator))
		if !changed[pkg] {
			return os.Link(path, target)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data = append(data, fmt.Sprintf(`{"schema":"olm.deprecations","package":%q,"entries":[{"reference":{"schema":"olm.package"},"message":"changed for the benchmark"}]}`+"\n", pkg)...)
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	store, srv := benchServer(b, benchCatalog{"one", index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:v1"}})
	if _, _, _, err := store.Update(context.Background(), "one", index.Content{FS: os.DirFS(v2), Ref: v2, Digest: "sha256:v2"}); err != nil {
		b.Fatal(err)
	}
	addr := srv.URL + "/catalogs/one/changes?since=sha256:v1"
	var got client.Changes
	benchGetJSON(b, addr, &got)
	if len(got.Changed) != len(changed) || len(got.Added)+len(got.Removed) != 0 {
		b.Fatalf("changes: %d changed, %d added, %d removed; want %d changed", len(got.Changed), len(got.Added), len(got.Removed), len(changed))
	}
	// The baseline is an answer of one package read from the same index,
	// for the machine's floor at the time of the measurement.
	baseline := srv.URL + "/catalogs/one/packages/" + url.PathEscape(got.Changed[0].Package) + "/channels"
	for _, m := range []struct{ name, addr string }{{"changes", addr}, {"baseline-channels", baseline}} {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				reportLatency(b, m.addr, 500)
			}
		})
	}
}
