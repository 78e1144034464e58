package registrytest

import (
	"maps"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// PublishIndex runs `catalogd index publish image` with the binary at
// catalogd, talking plain HTTP to r, with args after, and returns the
// reference of the artifact it pushed and the sizes of the image's and
// the artifact's blobs by digest, for DownloadedBytes.
func (r *Registry) PublishIndex(t testing.TB, catalogd, image string, args ...string) (artifact string, sizes map[string]int64) {
	t.Helper()
	var stderr strings.Builder
	publish := exec.Command(catalogd, append([]string{"index", "publish", image, "--insecure-registry", r.Host}, args...)...)
	publish.Stderr = &stderr
	out, err := publish.Output()
	if err != nil {
		t.Fatalf("catalogd index publish: %v\n%s", err, stderr.String())
	}
	// It prints REF: published for IMAGE (N bytes).
	artifact, _, _ = strings.Cut(string(out), ": ")
	sizes = Blobs(t, image)
	maps.Copy(sizes, Blobs(t, artifact))
	return artifact, sizes
}

// DownloadedBytes is how many bytes of the blobs in sizes r served to GET
// requests since it was last Reset.
func (r *Registry) DownloadedBytes(sizes map[string]int64) int64 {
	var n int64
	for _, req := range r.Requests() {
		if req.Method == http.MethodGet {
			n += sizes[BlobDigest(req.Path)]
		}
	}
	return n
}
