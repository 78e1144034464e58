package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/syncbuf"
)

// demoDir is the demo catalog, from this package's directory.
var demoDir = filepath.Join("..", "..", "test", "testdata", "demo")

// copyDemo copies the demo catalog to a new directory the test may edit.
func copyDemo(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(dst, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// extraPackage is a small valid package to add to a catalog.
const extraPackage = `{"schema":"olm.package","name":"extra","defaultChannel":"stable"}
{"schema":"olm.channel","package":"extra","name":"stable","entries":[{"name":"extra.v1.0.0"}]}
{"schema":"olm.bundle","package":"extra","name":"extra.v1.0.0","image":"example.com/extra:1.0.0",
 "properties":[{"type":"olm.package","value":{"packageName":"extra","version":"1.0.0"}}]}
`

// brokenJSON does not parse.
const brokenJSON = `{"schema":"olm.package","name":"extra",`

func getCatalog(t *testing.T, c *client.ClientWithResponses, name string) client.CatalogDetail {
	t.Helper()
	resp, err := c.GetCatalogWithResponse(context.Background(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.JSON200 == nil {
		t.Fatalf("GET /catalogs/%s: %d %s", name, resp.StatusCode(), resp.Body)
	}
	return *resp.JSON200
}

func listCatalogs(t *testing.T, c *client.ClientWithResponses) map[string]client.CatalogSummary {
	t.Helper()
	resp, err := c.ListCatalogsWithResponse(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.JSON200 == nil {
		t.Fatalf("GET /catalogs: %d %s", resp.StatusCode(), resp.Body)
	}
	out := map[string]client.CatalogSummary{}
	for _, s := range resp.JSON200.Items {
		out[s.Name] = s
	}
	return out
}

func packageNames(t *testing.T, c *client.ClientWithResponses, catalog string) []string {
	t.Helper()
	resp, err := c.ListPackagesWithResponse(context.Background(), catalog, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.JSON200 == nil {
		t.Fatalf("GET /catalogs/%s/packages: %d %s", catalog, resp.StatusCode(), resp.Body)
	}
	var names []string
	for _, p := range resp.JSON200.Items {
		names = append(names, p.Name)
	}
	return names
}

// running is a serve started in-process by startServe.
type running struct {
	base string
	out  *syncbuf.Buffer
	// stop ends serve and waits for it; the test's cleanup calls it too.
	stop func()
}

// startServe runs Serve with args on 127.0.0.1:0 until the test ends, and
// waits for the start-up summary (every catalog tried once).
func startServe(t *testing.T, args ...string) running {
	t.Helper()
	cfg, err := parseServe(args)
	if err != nil {
		t.Fatalf("parseServe(%q): %v", args, err)
	}
	ln, err := netListen(t)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, out, testr.New(t)) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	})
	t.Cleanup(stop)
	await.True(t, "serve printed its summary", 30*time.Second, func() bool { return strings.Contains(out.String(), "Try:") })
	return running{base: "http://" + ln.Addr().String(), out: out, stop: stop}
}

// grpcPackages lists the packages of catalog through the registry API at
// addr.
func grpcPackages(t *testing.T, addr, catalog string) []string {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(catalog+".catalogd:50051"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := api.NewRegistryClient(conn).ListPackages(context.Background(), &api.ListPackageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.GetName())
	}
}
