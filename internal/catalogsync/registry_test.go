package catalogsync_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/registrytest"
)

// TestMisbehavingRegistryKeepsTheLastIndex: when the registry starts to
// misbehave after a tag moved, the sync fails with an error that says how,
// within the unpacker's bounds; the last index keeps serving; the loop
// retries with its backoff; and once the registry behaves, the new content
// is served.
func TestMisbehavingRegistryKeepsTheLastIndex(t *testing.T) {
	// pullTimeout bounds one fetch: resolve and pull together. slow is
	// what the slow registry takes for each of the two: less than the
	// bound, so that only a bound of the whole fetch catches it.
	const pullTimeout = 2 * time.Second
	const slow = 3 * pullTimeout / 4

	tests := []struct {
		name string
		// misbehave returns the registry's interceptor, given the path of
		// the new content's layer and that layer's bytes; it counts the
		// attempts it spoils in attempts.
		misbehave func(layerPath string, layer []byte, attempts *atomic.Int64) func(http.ResponseWriter, *http.Request) bool
		// wantErr is what lastError says, given the layer's path.
		wantErr func(layerPath string) string
	}{
		{
			name: "layer GET redirected to itself",
			misbehave: func(layerPath string, _ []byte, attempts *atomic.Int64) func(http.ResponseWriter, *http.Request) bool {
				return func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method != http.MethodGet || r.URL.Path != layerPath {
						return false
					}
					if r.URL.RawQuery == "" { // not one of our redirects
						attempts.Add(1)
					}
					http.Redirect(w, r, layerPath+"?again=1", http.StatusTemporaryRedirect)
					return true
				}
			},
			wantErr: func(layerPath string) string {
				return "redirected the request for " + layerPath + " more than 10 times"
			},
		},
		{
			name: "tag resolved slowly and layer dribbled",
			misbehave: func(layerPath string, layer []byte, attempts *atomic.Int64) func(http.ResponseWriter, *http.Request) bool {
				return func(w http.ResponseWriter, r *http.Request) bool {
					switch {
					case r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/"):
						attempts.Add(1)
						select {
						case <-r.Context().Done():
							return true
						case <-time.After(slow):
						}
						return false // the registry answers, late
					case r.Method == http.MethodGet && r.URL.Path == layerPath:
						dribble(w, r, layer, slow)
						return true
					}
					return false
				}
			},
			wantErr: func(string) string { return "timed out after " + pullTimeout.String() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registrytest.New(t)
			first := reg.PushCatalog(t, "catalogs/demo:latest", demoDir, registrytest.PushOptions{})
			u, err := unpack.New(unpack.Options{InsecureRegistries: []string{reg.Host}, PullTimeout: pullTimeout})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := name.ParseReference(reg.Host + "/catalogs/demo:latest")
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, catalogsync.Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
			e.svc.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.ImageFetcher{Ref: ref, Unpacker: u, TempDir: t.TempDir()}})
			e.svc.MarkLoaded()
			e.run(t)
			await.True(t, "the first content to be served", syncWait, func() bool {
				info, ok := e.store.Info("demo")
				return ok && info.SourceRef == first
			})

			second := reg.PushCatalog(t, "catalogs/demo:latest", smallerDemo(t), registrytest.PushOptions{})
			layerPath, layer := firstLayer(t, second)
			var attempts atomic.Int64
			reg.Intercept(tt.misbehave(layerPath, layer, &attempts))
			e.svc.Trigger("demo")

			wantErr := tt.wantErr(layerPath)
			// Longer than a few attempts take, each bounded by
			// pullTimeout, so that only following the registry without a
			// bound runs into it.
			const misbehaving = 10 * pullTimeout
			await.True(t, "lastError to say "+wantErr, misbehaving, func() bool {
				c, _ := e.table.Get("demo")
				return strings.Contains(c.LastError, wantErr)
			})
			// The loop tries again on its own, with its backoff.
			await.True(t, "a retry", misbehaving, func() bool { return attempts.Load() >= 2 })
			if info, ok := e.store.Info("demo"); !ok || info.SourceRef != first || !e.svc.Serving("demo") {
				t.Errorf("while the registry misbehaves: index %+v; want %s still serving", info, first)
			}
			if d := e.svc.Backoff("demo", 0); d == 0 {
				t.Errorf("no backoff after failed syncs")
			}

			reg.Intercept(nil)
			await.True(t, "the new content to be served once the registry behaves", misbehaving, func() bool {
				info, ok := e.store.Info("demo")
				c, _ := e.table.Get("demo")
				return ok && info.SourceRef == second && c.LastError == ""
			})
		})
	}
}

// smallerDemo is the demo catalog without one of its packages: different
// content, as valid.
func smallerDemo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "tidewater-backup")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// firstLayer returns the registry path of the first layer of the image at
// digestRef, and its bytes as the registry serves them.
func firstLayer(t *testing.T, digestRef string) (string, []byte) {
	t.Helper()
	r, err := name.ParseReference(digestRef, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		t.Fatalf("layers of %s: %d, %v", digestRef, len(layers), err)
	}
	digest, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	return "/v2/" + r.Context().RepositoryStr() + "/blobs/" + digest.String(), registrytest.LayerBytes(t, layers[0])
}

// dribble writes body in small pieces spread over about d, as a slow
// registry does, stopping when the client goes away.
func dribble(w http.ResponseWriter, r *http.Request, body []byte, d time.Duration) {
	const pieces = 20
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	step := max(1, len(body)/pieces)
	for i := 0; i < len(body); i += step {
		if _, err := w.Write(body[i:min(i+step, len(body))]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(d / pieces):
		}
	}
}
