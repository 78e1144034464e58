package catalogcli_test

import (
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
