package catalogcli_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/test/registrytest"
)

// TestImagePullTimeout: --pull-timeout bounds an offline --image pull, so a
// registry that stops answering ends the command with an error that says
// how long the pull was allowed, and a timeout that is not positive is
// refused.
func TestImagePullTimeout(t *testing.T) {
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	reg.StallBlobs()
	for _, tc := range []struct {
		timeout, wantErr string
	}{
		{timeout: "1s", wantErr: "timed out after 1s"},
		{timeout: "0s", wantErr: "--pull-timeout 0s: want a positive duration"},
	} {
		c := newCLI(t, "--image", reg.Host+"/catalogs/demo:v1", "--insecure-registry", reg.Host, "--pull-timeout", tc.timeout)
		_, errOut, ok := c.run(t, "packages")
		if ok || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("--pull-timeout %s: succeeded %v, stderr %q; want a failure saying %q", tc.timeout, ok, errOut, tc.wantErr)
		}
	}
}

// TestImageTakesPrebuiltIndex: with an index published beside the image
// (catalogd index publish), an offline --image answers from it without
// downloading the image's own blobs, which the test makes hang; with
// --prebuilt-index=false the same command pulls them and times out.
func TestImageTakesPrebuiltIndex(t *testing.T) {
	reg := registrytest.New(t, registrytest.WithReferrers())
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	image := reg.Host + "/catalogs/demo:v1"

	// What a pull of the image alone downloads.
	if _, errOut, ok := newCLI(t, "--image", image, "--insecure-registry", reg.Host, "--prebuilt-index=false").run(t, "packages"); !ok {
		t.Fatalf("packages from the image: %s", errOut)
	}
	imageBlobs := map[string]bool{}
	for _, r := range reg.Requests() {
		if r.Method == http.MethodGet && strings.Contains(r.Path, "/blobs/sha256:") {
			imageBlobs[r.Path] = true
		}
	}
	if out, err := exec.Command(catalogd, "index", "publish", image, "--insecure-registry", reg.Host).CombinedOutput(); err != nil {
		t.Fatalf("catalogd index publish: %v\n%s", err, out)
	}
	reg.Intercept(func(_ http.ResponseWriter, req *http.Request) bool {
		if !imageBlobs[req.URL.Path] {
			return false
		}
		<-req.Context().Done()
		return true
	})
	for _, tc := range []struct {
		flag   string
		wantOK bool
	}{
		{flag: "--prebuilt-index=true", wantOK: true},
		{flag: "--prebuilt-index=false"},
	} {
		c := newCLI(t, "--image", image, "--insecure-registry", reg.Host, "--pull-timeout", "2s", tc.flag)
		out, errOut, ok := c.run(t, "packages", "-o", "name")
		if ok != tc.wantOK || (ok && !strings.Contains(out, "aurora-cache")) {
			t.Errorf("%s: succeeded %v (want %v); stdout %q, stderr %q", tc.flag, ok, tc.wantOK, out, errOut)
		}
	}
}
