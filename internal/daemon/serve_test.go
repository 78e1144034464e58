package daemon

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/test/apivalidate"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/gittest"
	"github.com/catalogd/catalogd/test/registrytest"
)

// TestServeKeepsRunningWithABrokenCatalog serves a good and a broken
// catalog: the good one answers, the broken one says why it does not, and
// that it is Failed: its content cannot index, so waiting does not help.
func TestServeKeepsRunningWithABrokenCatalog(t *testing.T) {
	broken := t.TempDir()
	writeFile(t, filepath.Join(broken, "catalog.json"), brokenJSON)
	facts := fbcfacts.Load(t, demoDir)

	srv := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--catalog", "demo="+demoDir, "--catalog", "broken="+broken, "--priority", "broken=5")
	api := apivalidate.NewClient(t, srv.base)

	out := srv.out.String()
	for _, want := range []string{
		"catalogd serving " + srv.base,
		"demo: 5 packages, 13 channels, 30 bundles",
		"broken: NOT INDEXED (Failed)",
		"parse catalog.json",
		"curl -s " + srv.base + "/catalogs/demo/packages | jq",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up output lacks %q:\n%s", want, out)
		}
	}

	list := listCatalogs(t, api)
	if got := list["broken"]; got.State != "Failed" || !strings.Contains(got.LastError, "catalog.json") || got.Priority != 5 {
		t.Errorf("broken = %+v; want Failed, priority 5, lastError naming the file", got)
	}
	demo := getCatalog(t, api, "demo")
	if demo.State != "Serving" || demo.LastError != "" ||
		demo.Counts.Packages != len(facts.Packages) || demo.Counts.Channels != facts.CountChannels() || demo.Counts.Bundles != facts.CountBundles() {
		t.Errorf("demo = %+v; want Serving with the demo's counts", demo)
	}
	resp, err := api.ListPackagesWithResponse(context.Background(), "broken", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != 503 || resp.HTTPResponse.Header.Get("Retry-After") != "" {
		t.Errorf("packages of the never-indexed catalog: %d, Retry-After %q; want 503 without Retry-After", resp.StatusCode(), resp.HTTPResponse.Header.Get("Retry-After"))
	}
}

// TestServeDataDirFromAnotherRun restarts on the same --data-dir with a
// different command line: the kept index serves without a rebuild while
// left-over unpacks (unpack/, and tmp/ of an older manager) are cleared, an
// index built from another source is not served under the same name, and
// catalogs no longer listed are removed.
func TestServeDataDirFromAnotherRun(t *testing.T) {
	data := t.TempDir()
	first := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0",
		"--catalog", "demo="+demoDir, "--catalog", "gone="+demoDir)
	first.stop()
	// What a crash leaves mid-unpack, and where an older manager unpacked.
	leftovers := []string{filepath.Join(data, "unpack", "unpack-1", "fbc"), filepath.Join(data, "tmp", "unpack-2", "fbc")}
	for _, dir := range leftovers {
		writeFile(t, filepath.Join(dir, "catalog.json"), extraPackage)
	}

	// Same source again: served from the kept index without a rebuild.
	again := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--catalog", "demo="+demoDir)
	if out := again.out.String(); !strings.Contains(out, "unchanged since the last run") {
		t.Errorf("restart on the same source rebuilt the index:\n%s", out)
	}
	for _, dir := range leftovers {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("left-over unpack %s is still there after a restart: %v", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "index", "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("index of the catalog no longer listed is still there: %v", err)
	}
	again.stop()

	broken := t.TempDir()
	writeFile(t, filepath.Join(broken, "catalog.json"), brokenJSON)
	other := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--catalog", "demo="+broken)
	got := getCatalog(t, apivalidate.NewClient(t, other.base), "demo")
	if got.State != "Failed" || got.Counts.Packages != 0 || got.LastError == "" {
		t.Errorf("demo from a broken directory = %+v; want Failed without the other directory's index", got)
	}
}

// TestServeImage serves the demo catalog from an image in a registry, and
// on restart does not pull it again.
func TestServeImage(t *testing.T) {
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	ref := reg.Host + "/catalogs/demo:v1"
	data := t.TempDir()
	args := []string{"--data-dir", data, "--listen", "127.0.0.1:0", "--catalog", "demo=" + ref, "--insecure-registry", reg.Host}

	first := startServe(t, args...)
	got := getCatalog(t, apivalidate.NewClient(t, first.base), "demo")
	facts := fbcfacts.Load(t, demoDir)
	if got.State != "Serving" || got.Source != ref || got.Counts.Bundles != facts.CountBundles() || !strings.HasPrefix(got.ResolvedDigest, "sha256:") {
		t.Errorf("demo from %s = %+v", ref, got)
	}
	first.stop()
	if entries, err := os.ReadDir(filepath.Join(data, "unpack")); err == nil && len(entries) > 0 {
		t.Errorf("unpacked images left behind: %v", entries)
	}

	reg.Reset()
	second := startServe(t, args...)
	if out := second.out.String(); !strings.Contains(out, "unchanged since the last run") {
		t.Errorf("restart re-indexed an unchanged image:\n%s", out)
	}
	if n := reg.Counts().BlobGets; n != 0 {
		t.Errorf("restart on an unchanged tag fetched %d blobs, want 0", n)
	}
}

// TestServeImageNotInsecure refuses plain HTTP to a registry that was not
// listed with --insecure-registry, and says so in lastError.
func TestServeImageNotInsecure(t *testing.T) {
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	srv := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--catalog", "demo="+reg.Host+"/catalogs/demo:v1")
	got := getCatalog(t, apivalidate.NewClient(t, srv.base), "demo")
	if got.State != "Pending" || !strings.Contains(got.LastError, "plain HTTP") {
		t.Errorf("demo = %+v; want Pending with a plain-HTTP error", got)
	}
}

// TestServeImagePullTimeout: --pull-timeout reaches the unpacker, so a
// registry that stops answering fails the sync with an error that says how
// long the pull was allowed.
func TestServeImagePullTimeout(t *testing.T) {
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	reg.StallBlobs()
	srv := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--catalog", "demo="+reg.Host+"/catalogs/demo:v1",
		"--insecure-registry", reg.Host, "--pull-timeout", "1s")
	got := getCatalog(t, apivalidate.NewClient(t, srv.base), "demo")
	if got.State != "Pending" || !strings.Contains(got.LastError, "timed out after 1s") {
		t.Errorf("demo = %+v; want Pending with a pull timeout of 1s", got)
	}
}

// TestServeMaxCatalogBytes: --max-catalog-bytes reaches the unpacker, so
// an image whose files are more than it allows is refused, naming the
// limit, and the catalog is Failed: its content, not the fetch, is at fault.
func TestServeMaxCatalogBytes(t *testing.T) {
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	srv := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--catalog", "demo="+reg.Host+"/catalogs/demo:v1",
		"--insecure-registry", reg.Host, "--max-catalog-bytes", "1Ki")
	got := getCatalog(t, apivalidate.NewClient(t, srv.base), "demo")
	if got.State != "Failed" || !strings.Contains(got.LastError, "MaxTotalBytes (1024)") {
		t.Errorf("demo = %+v; want Failed, over the limit of 1024 bytes", got)
	}
}

// TestListenAddressInUse checks that a second catalogd on a busy address
// is told which flag picks another.
func TestListenAddressInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, err = Config{DataDir: t.TempDir(), Listen: busy.Addr().String()}.Complete(logr.Discard())
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("error %v; want it to say the address is in use and name --listen", err)
	}
}

// TestServeGit serves the demo catalog from a directory of a local git
// repository, named as a person names it (git::file://…//DIR?ref=main):
// the digest is git's own tree hash of that directory, and a restart on
// the same commit indexes nothing.
func TestServeGit(t *testing.T) {
	repo := gittest.NewRepo(t, t.TempDir(), "catalogs")
	repo.CopyDir("catalogs/demo", demoDir)
	commit := repo.Commit(map[string]string{"README.md": "catalogs\n"})
	repo.Push("main")
	src := "git::file://" + repo.Bare + "//catalogs/demo?ref=main"
	data := t.TempDir()
	args := []string{"--data-dir", data, "--listen", "127.0.0.1:0", "--catalog", "demo=" + src}

	first := startServe(t, args...)
	got := getCatalog(t, apivalidate.NewClient(t, first.base), "demo")
	facts := fbcfacts.Load(t, demoDir)
	if want := "git-tree:" + repo.Tree(commit, "catalogs/demo"); got.State != "Serving" || got.Counts.Bundles != facts.CountBundles() || got.ResolvedDigest != want {
		t.Errorf("demo from %s = %+v; want Serving %d bundles at %s", src, got, facts.CountBundles(), want)
	}
	first.stop()

	second := startServe(t, args...)
	if out := second.out.String(); !strings.Contains(out, "unchanged since the last run") {
		t.Errorf("restart re-indexed an unchanged commit:\n%s", out)
	}
}

// TestServeGRPC serves the demo catalog with --grpc-listen: OLM v0's
// registry API answers on that address for the catalog named by the host
// a client dials, beside the query API.
func TestServeGRPC(t *testing.T) {
	srv := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--catalog", "demo="+demoDir)
	m := regexp.MustCompile(`registry API \(gRPC\) on (127\.0\.0\.1:\d+)`).FindStringSubmatch(srv.out.String())
	if m == nil {
		t.Fatalf("serve did not say where the registry API listens:\n%s", srv.out.String())
	}
	got := grpcPackages(t, m[1], "demo")
	want := slices.Sorted(maps.Keys(fbcfacts.Load(t, demoDir).Packages))
	if !slices.Equal(got, want) {
		t.Errorf("ListPackages of demo: %v, want %v", got, want)
	}
}
