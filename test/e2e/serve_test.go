// Package e2e runs the catalogd binary as a user would, on 127.0.0.1, and
// talks to it with the generated client, every answer checked against
// openapi.yaml.
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/apivalidate"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// demoDir is the demo catalog, from this package's directory.
var demoDir = filepath.Join("..", "testdata", "demo")

// binary and managerBinary are catalogd and catalogd-manager (catalogd
// with the ClusterCatalog controllers, -tags manager), which TestMain
// builds once for all tests.
var binary, managerBinary string

func TestMain(m *testing.M) {
	os.Exit(catalogdproc.MainWith(m, map[string]*string{"catalogd": &binary, "catalogd-manager": &managerBinary}))
}

// server is a running catalogd serve.
type server struct {
	base string
	*catalogdproc.Process
}

// startServer runs `catalogd serve --listen 127.0.0.1:0 args...` and waits
// until it has tried every catalog once.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	p, base := catalogdproc.Serve(t, binary, args...)
	return &server{base: base, Process: p}
}

// stop sends SIGTERM and expects a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited:
		if s.ExitErr != nil {
			t.Errorf("catalogd exited with %v after SIGTERM, want exit code 0", s.ExitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("catalogd did not exit after SIGTERM")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func packageNames(t *testing.T, api *client.ClientWithResponses) []string {
	t.Helper()
	resp, err := api.ListPackagesWithResponse(context.Background(), "demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.JSON200 == nil {
		t.Fatalf("GET /catalogs/demo/packages: %d %s", resp.StatusCode(), resp.Body)
	}
	var names []string
	for _, p := range resp.JSON200.Items {
		names = append(names, p.Name)
	}
	return names
}

func getDemo(t *testing.T, api *client.ClientWithResponses) client.CatalogDetail {
	t.Helper()
	resp, err := api.GetCatalogWithResponse(context.Background(), "demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.JSON200 == nil {
		t.Fatalf("GET /catalogs/demo: %d %s", resp.StatusCode(), resp.Body)
	}
	return *resp.JSON200
}

func TestServeDemo(t *testing.T) {
	facts := fbcfacts.Load(t, demoDir)
	srv := startServer(t, "--data-dir", t.TempDir(), "--catalog", "demo="+demoDir)
	api := apivalidate.NewClient(t, srv.base)
	ctx := context.Background()

	want := fmt.Sprintf("demo: %d packages, %d channels, %d bundles", len(facts.Packages), facts.CountChannels(), facts.CountBundles())
	if !strings.Contains(srv.Stdout.String(), want) {
		t.Errorf("start-up summary lacks %q:\n%s", want, srv.Stdout)
	}

	health, err := api.GetHealthzWithResponse(ctx)
	if err != nil || health.StatusCode() != http.StatusOK {
		t.Errorf("GET /healthz: %v %v", health, err)
	}

	list, err := api.ListCatalogsWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil {
		t.Fatalf("GET /catalogs: %v %v", list, err)
	}
	if len(list.JSON200.Items) != 1 || list.JSON200.Items[0].Name != "demo" {
		t.Fatalf("GET /catalogs: %+v; want demo alone", list.JSON200.Items)
	}
	sum := list.JSON200.Items[0]
	wantCounts := client.CatalogCounts{Packages: len(facts.Packages), Channels: facts.CountChannels(), Bundles: facts.CountBundles()}
	if sum.State != client.CatalogStateServing || sum.Counts != wantCounts || sum.LastError != "" {
		t.Errorf("GET /catalogs: demo = %+v; want Serving with %+v", sum, wantCounts)
	}
	abs, err := filepath.Abs(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Source != abs {
		t.Errorf("source %q, want the catalog's absolute path %q", sum.Source, abs)
	}

	detail := getDemo(t, api)
	if detail.Counts != wantCounts || detail.ResolvedDigest != sum.ResolvedDigest || detail.IndexedAt == nil {
		t.Errorf("GET /catalogs/demo = %+v; want the list's counts and digest", detail)
	}
	if len(detail.Problems) != 0 {
		t.Errorf("problems in the demo catalog: %+v", detail.Problems)
	}
	schemas := map[string]int{}
	for _, b := range facts.Blobs {
		schemas[b.Schema]++
	}
	for _, s := range detail.Schemas {
		if s.Count != schemas[s.Schema] {
			t.Errorf("schema %s: %d blobs, want %d", s.Schema, s.Count, schemas[s.Schema])
		}
		delete(schemas, s.Schema)
	}
	if len(schemas) != 0 {
		t.Errorf("schemas missing from GET /catalogs/demo: %v", schemas)
	}

	if got, want := packageNames(t, api), sortedKeys(facts.Packages); !slices.Equal(got, want) {
		t.Errorf("packages %v, want %v", got, want)
	}
	srv.stop(t)
}

// TestServeWatch edits a served catalog: a broken edit shows in lastError
// while the last good index keeps answering, and fixing it clears the error.
func TestServeWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	facts := fbcfacts.Load(t, dir)
	wantPackages := sortedKeys(facts.Packages)
	file := filepath.Join(dir, "tidewater-backup", "catalog.json")
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	broken := good[:len(good)/2]

	srv := startServer(t, "--data-dir", t.TempDir(), "--catalog", "demo="+dir, "--watch")
	api := apivalidate.NewClient(t, srv.base)
	before := getDemo(t, api)
	if before.State != client.CatalogStateServing || before.LastError != "" {
		t.Fatalf("before the edit: %+v", before)
	}

	// Break the file, and see the error while the old index still answers.
	// The file is written again now and then, in case the watch was not in
	// place yet when the first write happened; the server has no way of
	// saying that it is.
	writeUntil(t, file, broken, "lastError names the broken file", func() bool {
		return strings.Contains(getDemo(t, api).LastError, "tidewater-backup/catalog.json")
	})
	broke := getDemo(t, api)
	if broke.State != client.CatalogStateServing || broke.ResolvedDigest != before.ResolvedDigest || broke.Counts != before.Counts {
		t.Errorf("while broken: %+v; want the last good index serving", broke)
	}
	list, err := api.ListCatalogsWithResponse(context.Background(), nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Items) != 1 || list.JSON200.Items[0].LastError != broke.LastError {
		t.Errorf("GET /catalogs while broken: %+v, %v; want demo's lastError there too", list, err)
	}
	if got := packageNames(t, api); !slices.Equal(got, wantPackages) {
		t.Errorf("packages while broken: %v, want %v", got, wantPackages)
	}

	// Fix it: the error clears. The content is back to that of the live
	// index, so nothing needs rebuilding.
	writeUntil(t, file, good, "lastError clears", func() bool { return getDemo(t, api).LastError == "" })
	fixed := getDemo(t, api)
	if fixed.State != client.CatalogStateServing || fixed.ResolvedDigest != before.ResolvedDigest {
		t.Errorf("after the fix: %+v", fixed)
	}
	if got := packageNames(t, api); !slices.Equal(got, wantPackages) {
		t.Errorf("packages after the fix: %v, want %v", got, wantPackages)
	}
	srv.stop(t)
}

// writeUntil writes content to path and polls until cond holds, writing it
// again every few seconds (longer than the server's debounce period).
func writeUntil(t *testing.T, path string, content []byte, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		for again := time.Now().Add(3 * time.Second); time.Now().Before(again); time.Sleep(50 * time.Millisecond) {
			if cond() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// TestServeNotACatalog is `catalogd serve --catalog x=docs --watch`: the
// summary and GET /catalogs/x say the catalog is Failed and why, once (the
// server looks again only for a change, silently); its data endpoints
// answer 503 without Retry-After; a catalog written into the directory
// makes it serve.
func TestServeNotACatalog(t *testing.T) {
	const hint = "no olm.package, olm.channel or olm.bundle blob was found"
	dir := filepath.Join(t.TempDir(), "docs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prose, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "architecture.md"), prose, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "--data-dir", t.TempDir(), "--catalog", "demo="+dir, "--watch")
	api := apivalidate.NewClient(t, srv.base)
	if out := srv.Stdout.String(); !strings.Contains(out, "demo: NOT INDEXED (Failed)") || !strings.Contains(out, hint) {
		t.Errorf("start-up summary does not say demo Failed and why:\n%s", out)
	}
	failed := getDemo(t, api)
	if failed.State != client.CatalogStateFailed || !strings.Contains(failed.LastError, hint) || failed.IndexedAt != nil {
		t.Errorf("GET /catalogs/demo: %+v; want Failed with lastError saying %q", failed, hint)
	}
	resp, err := api.ListPackagesWithResponse(context.Background(), "demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusServiceUnavailable || resp.ApplicationproblemJSON503 == nil ||
		resp.ApplicationproblemJSON503.Type != "/problems/catalog-failed" || !strings.Contains(resp.ApplicationproblemJSON503.Detail, hint) {
		t.Errorf("GET /catalogs/demo/packages: %d %s; want 503 catalog-failed saying why", resp.StatusCode(), resp.Body)
	}
	if ra := resp.HTTPResponse.Header.Get("Retry-After"); ra != "" {
		t.Errorf("Retry-After %q for a catalog that fails until its source changes", ra)
	}

	// The server looks again after 1 s, 2 s, ... of backoff: it stays
	// Failed and says nothing new, as the content did not change.
	for end := time.Now().Add(3500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if d := getDemo(t, api); d.State != client.CatalogStateFailed || d.LastError != failed.LastError {
			t.Fatalf("GET /catalogs/demo while the content is unchanged: %+v; want it Failed as before", d)
		}
	}

	// The catalog is written in, one package directory at a time, each
	// moved in whole: every state the watch sees is a valid catalog.
	if err := os.Remove(filepath.Join(dir, "architecture.md")); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(filepath.Dir(dir), "staging")
	if err := os.CopyFS(staging, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(staging)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	want := sortedKeys(fbcfacts.Load(t, demoDir).Packages)
	deadline := time.Now().Add(60 * time.Second)
	for {
		d := getDemo(t, api)
		if d.State == client.CatalogStateServing && d.LastError == "" && slices.Equal(packageNames(t, api), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fixed directory is not served: %+v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.stop(t)
	if n := strings.Count(srv.Stdout.String()+srv.Stderr.String(), hint); n != 1 {
		t.Errorf("the reason was said %d times, want once:\n%s\n%s", n, srv.Stdout, srv.Stderr)
	}
}
