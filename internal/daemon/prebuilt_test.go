package daemon

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/test/apivalidate"
	"github.com/catalogd/catalogd/test/registrytest"
	"github.com/catalogd/catalogd/test/syncbuf"
)

// publish runs `catalogd index publish` of ref against reg and returns
// what it printed.
func publish(t *testing.T, reg *registrytest.Registry, ref string) string {
	t.Helper()
	var opts PublishOptions
	rest, err := parseArgs([]string{"--insecure-registry", reg.Host, ref}, opts.BindFlags)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := opts.Validate(rest)
	if err != nil {
		t.Fatal(err)
	}
	out := &syncbuf.Buffer{}
	if err := Publish(context.Background(), cfg, out, testr.New(t)); err != nil {
		t.Fatalf("publish %s: %v", ref, err)
	}
	return out.String()
}

// TestPublishThenServe: `catalogd index publish` pushes the index beside
// the image, a second run pushes (and pulls) nothing, and serve then
// takes it without pulling the image (build.mode prebuilt), with the
// referrers API and with the fallback tag; --prebuilt-index=false builds.
func TestPublishThenServe(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "fallback tag"}[referrers], func(t *testing.T) {
			var opts []registrytest.Option
			if referrers {
				opts = append(opts, registrytest.WithReferrers())
			}
			reg := registrytest.New(t, opts...)
			reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
			ref := reg.Host + "/catalogs/demo:v1"
			if out := publish(t, reg, ref); !strings.Contains(out, "published for") {
				t.Fatalf("publish printed %q", out)
			}
			reg.Reset()
			if out := publish(t, reg, ref); !strings.Contains(out, "already published") {
				t.Errorf("publish again printed %q", out)
			}
			if c := reg.Counts(); c.Uploads != 0 || c.ManifestPuts != 0 || c.BlobGets != 0 {
				t.Errorf("publish again: %+v; want no upload, manifest push or blob download", c)
			}

			pulled := registrytest.Blobs(t, ref)
			reg.Reset()
			srv := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--catalog", "demo="+ref, "--insecure-registry", reg.Host)
			got := getCatalog(t, apivalidate.NewClient(t, srv.base), "demo")
			if got.State != "Serving" || got.Build.Mode != "prebuilt" || got.Build.NotPrebuilt != "" {
				t.Errorf("demo = %+v; want Serving a prebuilt index", got)
			}
			for _, r := range reg.Requests() {
				if _, ok := pulled[registrytest.BlobDigest(r.Path)]; ok && r.Method == http.MethodGet {
					t.Errorf("serve pulled the image's blob %s, though it took the prebuilt index", r.Path)
				}
			}

			off := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--catalog", "demo="+ref, "--insecure-registry", reg.Host,
				"--prebuilt-index=false")
			if got := getCatalog(t, apivalidate.NewClient(t, off.base), "demo"); got.Build.Mode != "full" || got.Build.NotPrebuilt != "" {
				t.Errorf("with --prebuilt-index=false: build %+v; want full, not looked for", got.Build)
			}
		})
	}
}

// TestServeBuildsWithoutPrebuilt: a catalog with no index published, and
// a registry that never answers the referrers query, are built, and
// build.notPrebuilt says why; the query waits no longer than its bound.
func TestServeBuildsWithoutPrebuilt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall bool
		want  string
	}{
		{name: "none published", want: "no prebuilt index is published"},
		{name: "referrers query stalls", stall: true, want: "no answer within 3s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := registrytest.New(t, registrytest.WithReferrers())
			reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
			if tc.stall {
				reg.Intercept(func(_ http.ResponseWriter, req *http.Request) bool {
					if !strings.Contains(req.URL.Path, "/referrers/") {
						return false
					}
					<-req.Context().Done()
					return true
				})
			}
			srv := startServe(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--catalog", "demo="+reg.Host+"/catalogs/demo:v1",
				"--insecure-registry", reg.Host)
			got := getCatalog(t, apivalidate.NewClient(t, srv.base), "demo")
			if got.State != "Serving" || got.Build.Mode != "full" || !strings.Contains(got.Build.NotPrebuilt, tc.want) {
				t.Errorf("demo = %+v; want Serving a full build, notPrebuilt saying %q", got, tc.want)
			}
		})
	}
}
