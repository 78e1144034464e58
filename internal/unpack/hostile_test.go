package unpack_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/dirtree"
	"github.com/catalogd/catalogd/test/registrytest"
)

// tarBytes writes entries as an uncompressed tar stream.
func tarBytes(t *testing.T, entries ...registrytest.Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.Name, Typeflag: e.Typeflag, Linkname: e.Linkname, Mode: 0o644}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %s: %v", e.Name, err)
		}
		if _, err := tw.Write(e.Body); err != nil {
			t.Fatalf("tar body %s: %v", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipZeros gzips prefix and then n zero bytes, written in chunks, so that a large n costs no
// memory.
func gzipZeros(t *testing.T, prefix []byte, n int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(prefix)
	chunk := make([]byte, 1<<20)
	for n > 0 {
		c := chunk[:min(n, int64(len(chunk)))]
		zw.Write(c)
		n -= int64(len(c))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pushBlobs pushes an image whose layers are the given blobs, byte for byte,
// with the configs label set to label, and returns its digest reference.
func pushBlobs(t *testing.T, reg *registrytest.Registry, repo, label string, blobs ...[]byte) string {
	t.Helper()
	img, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), &v1.ConfigFile{
		OS: "linux", Architecture: "amd64", RootFS: v1.RootFS{Type: "layers"},
		Config: v1.Config{Labels: map[string]string{unpack.ConfigsDirLabel: label}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if img, err = mutate.AppendLayers(img, static.NewLayer(b, types.OCILayer)); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := name.ParseReference(reg.Host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Name() + "@" + d.String()
}

// putManifest stores m as is, whatever blobs it names, and returns its
// digest reference.
func putManifest(t *testing.T, reg *registrytest.Registry, repo string, m *v1.Manifest) string {
	t.Helper()
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := v1.SHA256(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, reg.URL+"/v2/"+repo+"/manifests/"+h.String(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", string(types.OCIManifestSchema1))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("putting manifest: status %d", resp.StatusCode)
	}
	return reg.Host + "/" + repo + "@" + h.String()
}

// manifestOf fetches the manifest of ref.
func manifestOf(t *testing.T, ref string) *v1.Manifest {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fakeHash(s string) v1.Hash {
	h, _, _ := v1.SHA256(strings.NewReader(s))
	return h
}

// wantLimit checks err is a LimitError for limit.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *unpack.LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Errorf("error %v, want a LimitError for %s", err, limit)
	}
	if !unpack.IsTerminal(err) {
		t.Errorf("IsTerminal(%v) = false, want true", err)
	}
}

// Layers whose bytes are hostile as a whole, rather than entry by entry.
func TestUnpackHostileLayers(t *testing.T) {
	reg := registrytest.New(t)
	catalog := tarBytes(t, registrytest.Dir("configs"), registrytest.File("configs/catalog.json", `{"schema":"olm.package","name":"a"}`))
	want := map[string]string{"catalog.json": `{"schema":"olm.package","name":"a"}`}
	var zstdBlob bytes.Buffer
	zw, err := zstd.NewWriter(&zstdBlob)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(catalog)
	zw.Close()
	gz := dirtree.Gzip(t, catalog)
	// 64 MiB of zeros in an entry outside the configs dir, then the tar end:
	// kilobytes of gzip.
	var hdr bytes.Buffer
	if err := tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "var/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	bomb := gzipZeros(t, hdr.Bytes(), 64<<20+1024)
	// A valid catalog tar followed by 64 MiB of padding after its end.
	padded := gzipZeros(t, catalog, 64<<20)

	tests := []struct {
		name     string
		blobs    [][]byte
		opts     unpack.Options
		want     map[string]string
		terminal bool
		check    func(t *testing.T, err error)
	}{
		{name: "gzip layer", blobs: [][]byte{gz}, want: want},
		{name: "zstd layer", blobs: [][]byte{zstdBlob.Bytes()}, want: want},
		{name: "uncompressed layer", blobs: [][]byte{catalog}, want: want},
		{
			name: "decompression bomb outside the configs dir", blobs: [][]byte{gz, bomb},
			opts: unpack.Options{MaxUncompressedBytes: 16 << 20}, terminal: true,
			check: func(t *testing.T, err error) { wantLimit(t, err, "MaxUncompressedBytes") },
		},
		{
			name: "padding after the tar end", blobs: [][]byte{padded},
			opts: unpack.Options{MaxUncompressedBytes: 16 << 20}, terminal: true,
			check: func(t *testing.T, err error) { wantLimit(t, err, "MaxUncompressedBytes") },
		},
		{
			name: "garbage at its digest", blobs: [][]byte{gz, bytes.Repeat([]byte("garbage!"), 1024)}, terminal: true,
			check: func(t *testing.T, err error) {
				var ce *unpack.CorruptLayerError
				if !errors.As(err, &ce) || ce.Layer != 1 {
					t.Errorf("error %v, want a CorruptLayerError for layer 1", err)
				}
			},
		},
		{
			name: "gzip truncated at its digest", blobs: [][]byte{gz[:len(gz)/2]}, terminal: true,
			check: func(t *testing.T, err error) {
				var ce *unpack.CorruptLayerError
				if !errors.As(err, &ce) || ce.Layer != 0 {
					t.Errorf("error %v, want a CorruptLayerError for layer 0", err)
				}
			},
		},
		{
			name: "tar truncated inside an entry at its digest", blobs: [][]byte{dirtree.Gzip(t, catalog[:512+512+10])}, terminal: true,
			check: func(t *testing.T, err error) {
				var ce *unpack.CorruptLayerError
				if !errors.As(err, &ce) {
					t.Errorf("error %v, want a CorruptLayerError", err)
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := pushBlobs(t, reg, fmt.Sprintf("hostile/l%d:v1", i), "/configs", tt.blobs...)
			opts := tt.opts
			opts.InsecureRegistries = []string{reg.Host}
			dst := filepath.Join(t.TempDir(), "dst")
			_, err := newUnpacker(t, opts).Unpack(t.Context(), ref, dst)
			if tt.want != nil {
				if err != nil {
					t.Fatalf("Unpack: %v", err)
				}
				diffTrees(t, tree(t, dst), tt.want)
				return
			}
			if err == nil {
				t.Fatalf("Unpack succeeded with %v", tree(t, dst))
			}
			t.Logf("Unpack error: %v", err)
			if got := unpack.IsTerminal(err); got != tt.terminal {
				t.Errorf("IsTerminal = %v, want %v", got, tt.terminal)
			}
			tt.check(t, err)
			assertNoDst(t, dst)
		})
	}
}

// Manifests that declare more than the limits allow are refused before any
// of the oversized blobs is read.
func TestUnpackHostileManifests(t *testing.T) {
	reg := registrytest.New(t)
	tiny := writeTree(t, tinyFBC)
	good := registrytest.PushCatalog(t, reg.Host, "hostile/good:v1", tiny, registrytest.PushOptions{})
	goodManifest := manifestOf(t, good)

	// A second server that a foreign layer URL points at.
	var foreignHits atomic.Int32
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		foreignHits.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(foreign.Close)
	foreignHost := strings.TrimPrefix(foreign.URL, "http://")

	withConfigSize := func(size int64) *v1.Manifest {
		m := *goodManifest
		m.Config.Size = size
		m.Config.Digest = fakeHash(fmt.Sprint("config ", size))
		return &m
	}
	foreignLayer := *goodManifest
	foreignLayer.Layers = []v1.Descriptor{{
		MediaType: types.OCILayer, Size: 1234, Digest: fakeHash("foreign"),
		URLs: []string{foreign.URL + "/layer.tar.gz"},
	}}
	missingBlob := *goodManifest
	missingBlob.Layers = append([]v1.Descriptor{}, goodManifest.Layers...)
	missingBlob.Layers[0].Digest = fakeHash("missing layer")

	// Blob GETs of the config digests the tests made up: an endless stream,
	// counted, so a reader that does not stop shows up.
	var configBytes atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
			return false
		}
		for _, size := range []int64{64 << 20, 512 << 20} {
			if strings.HasSuffix(r.URL.Path, fakeHash(fmt.Sprint("config ", size)).String()) {
				w.Header().Set("Content-Length", fmt.Sprint(size))
				chunk := make([]byte, 1<<20)
				for sent := int64(0); sent < size; sent += int64(len(chunk)) {
					n, err := w.Write(chunk)
					configBytes.Add(int64(n))
					if err != nil {
						return true
					}
				}
				return true
			}
		}
		return false
	})

	tests := []struct {
		name     string
		manifest *v1.Manifest
		opts     unpack.Options
		terminal bool
		check    func(t *testing.T, err error)
	}{
		{
			name: "config declared at 64 MiB", manifest: withConfigSize(64 << 20), terminal: true,
			check: func(t *testing.T, err error) { wantLimit(t, err, "MaxConfigBytes") },
		},
		{
			name: "config declared at 512 MiB", manifest: withConfigSize(512 << 20), terminal: true,
			check: func(t *testing.T, err error) { wantLimit(t, err, "MaxConfigBytes") },
		},
		{
			name: "layers declared over the download limit", manifest: goodManifest, terminal: true,
			opts:  unpack.Options{MaxDownloadBytes: goodManifest.Config.Size + goodManifest.Layers[0].Size - 1},
			check: func(t *testing.T, err error) { wantLimit(t, err, "MaxDownloadBytes") },
		},
		{
			name: "foreign layer URL", manifest: &foreignLayer, terminal: true,
			check: func(t *testing.T, err error) {
				if !errors.Is(err, unpack.ErrForeignLayer) {
					t.Errorf("error %v, want ErrForeignLayer", err)
				}
				if n := foreignHits.Load(); n != 0 {
					t.Errorf("the foreign URL was requested %d times", n)
				}
			},
		},
		{
			name: "layer blob missing from the registry", manifest: &missingBlob, terminal: false,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "BLOB_UNKNOWN") {
					t.Errorf("error %q does not say the blob is unknown", err)
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := putManifest(t, reg, fmt.Sprintf("hostile/m%d", i), tt.manifest)
			opts := tt.opts
			opts.InsecureRegistries = []string{reg.Host, foreignHost}
			configBytes.Store(0)
			reg.Reset()
			dst := filepath.Join(t.TempDir(), "dst")
			_, err := newUnpacker(t, opts).Unpack(t.Context(), ref, dst)
			if err == nil {
				t.Fatalf("Unpack succeeded with %v", tree(t, dst))
			}
			t.Logf("Unpack error: %v", err)
			if got := unpack.IsTerminal(err); got != tt.terminal {
				t.Errorf("IsTerminal = %v, want %v", got, tt.terminal)
			}
			tt.check(t, err)
			if tt.terminal {
				if c := reg.Counts(); c.BlobGets != 0 {
					t.Errorf("%d blob GETs for an image refused by its manifest: %v", c.BlobGets, reg.Requests())
				}
			}
			if n := configBytes.Load(); n != 0 {
				t.Errorf("read %d bytes of an oversized config", n)
			}
			assertNoDst(t, dst)
		})
	}

	t.Run("manifest body over the limit", func(t *testing.T) {
		for _, chunked := range []bool{false, true} {
			reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/manifests/") {
					return false
				}
				body := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","pad":"` + strings.Repeat("x", 8<<20) + `"}`
				w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
				if !chunked {
					w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				}
				io.WriteString(w, body)
				return true
			})
			_, err := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}}).Unpack(t.Context(), good, filepath.Join(t.TempDir(), "dst"))
			t.Logf("chunked=%v: %v", chunked, err)
			wantLimit(t, err, "MaxManifestBytes")
		}
		reg.Intercept(nil)
	})
}

// A registry that accepts a request and then sends nothing must fail the
// pull with an error that says it timed out, not hang it.
func TestUnpackRegistryStalls(t *testing.T) {
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	layer := manifestOf(t, ref).Layers[0].Digest.String()
	isLayer := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, layer)
	}
	stall := func(r *http.Request) { <-r.Context().Done() }
	layerBlob := func() []byte {
		r, _ := name.ParseReference(ref, name.Insecure)
		img, err := remote.Image(r)
		if err != nil {
			t.Fatal(err)
		}
		ls, _ := img.Layers()
		return registrytest.LayerBytes(t, ls[0])
	}()

	tests := []struct {
		name      string
		opts      unpack.Options
		intercept func(w http.ResponseWriter, r *http.Request) bool
	}{
		{
			name: "no response headers for the manifest",
			opts: unpack.Options{RequestTimeout: 200 * time.Millisecond},
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/manifests/") {
					return false
				}
				stall(r)
				return true
			},
		},
		{
			name: "manifest body stops half way",
			opts: unpack.Options{IdleTimeout: 200 * time.Millisecond},
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/manifests/") {
					return false
				}
				w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
				w.Header().Set("Content-Length", "1000")
				io.WriteString(w, `{"schemaVersion":2,`)
				w.(http.Flusher).Flush()
				stall(r)
				return true
			},
		},
		{
			name: "layer blob stops half way",
			opts: unpack.Options{IdleTimeout: 200 * time.Millisecond},
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !isLayer(r) {
					return false
				}
				w.Header().Set("Content-Length", fmt.Sprint(len(layerBlob)))
				w.Write(layerBlob[:len(layerBlob)/2])
				w.(http.Flusher).Flush()
				stall(r)
				return true
			},
		},
		{
			name: "layer blob trickles in slower than the pull timeout allows",
			opts: unpack.Options{PullTimeout: 500 * time.Millisecond, IdleTimeout: time.Minute},
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !isLayer(r) {
					return false
				}
				w.Header().Set("Content-Length", fmt.Sprint(len(layerBlob)))
				for _, b := range layerBlob {
					if _, err := w.Write([]byte{b}); err != nil {
						return true
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return true
					case <-time.After(20 * time.Millisecond):
					}
				}
				return true
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg.Intercept(tt.intercept)
			defer reg.Intercept(nil)
			// A guard, far above the timeouts under test, so that a
			// regression fails rather than hangs.
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			opts := tt.opts
			opts.InsecureRegistries = []string{reg.Host}
			dst := filepath.Join(t.TempDir(), "dst")
			_, err := newUnpacker(t, opts).Unpack(ctx, ref, dst)
			if err == nil {
				t.Fatal("Unpack succeeded")
			}
			t.Logf("Unpack error: %v", err)
			if ctx.Err() != nil {
				t.Fatalf("the unpack ran until the test's own deadline: %v", err)
			}
			var te interface{ Timeout() bool }
			if !errors.As(err, &te) || !te.Timeout() || !strings.Contains(err.Error(), "timeout") && !strings.Contains(err.Error(), "timed out") {
				t.Errorf("error %q is not a timeout error that says so", err)
			}
			if unpack.IsTerminal(err) {
				t.Errorf("IsTerminal = true, want a retryable timeout")
			}
			assertNoDst(t, dst)
		})
	}
}

// Blob downloads are often redirected to storage URLs that carry a signed
// token in their query. Whatever goes wrong there, the token must not reach
// the error text, which ends up in status conditions.
func TestUnpackErrorsHideSignedURLs(t *testing.T) {
	const secret = "S3CR3T-SIGNATURE"
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	layer := manifestOf(t, ref).Layers[0].Digest.String()

	tests := []struct {
		name    string
		opts    unpack.Options
		storage http.HandlerFunc
	}{
		{
			name: "storage refuses and echoes the URL",
			storage: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<Error><Code>AccessDenied</Code><URL>"+"http://"+r.Host+r.URL.String()+"</URL></Error>", http.StatusForbidden)
			},
		},
		{
			name:    "storage drops the connection",
			storage: func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) },
		},
		{
			name:    "storage never answers",
			opts:    unpack.Options{RequestTimeout: 200 * time.Millisecond},
			storage: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storage := httptest.NewServer(tt.storage)
			storage.Config.ErrorLog = nil
			defer storage.Close()
			reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, layer) {
					http.Redirect(w, r, storage.URL+"/blob?X-Amz-Credential=key&X-Amz-Signature="+secret, http.StatusTemporaryRedirect)
					return true
				}
				return false
			})
			defer reg.Intercept(nil)
			opts := tt.opts
			opts.InsecureRegistries = []string{reg.Host, strings.TrimPrefix(storage.URL, "http://")}
			dst := filepath.Join(t.TempDir(), "dst")
			_, err := newUnpacker(t, opts).Unpack(t.Context(), ref, dst)
			if err == nil {
				t.Fatal("Unpack succeeded")
			}
			t.Logf("Unpack error: %v", err)
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error reveals the signed URL's token: %v", err)
			}
			if unpack.IsTerminal(err) {
				t.Errorf("IsTerminal = true, want retryable")
			}
			assertNoDst(t, dst)
		})
	}
}

// Resolve is bounded the same way: a registry that never answers a
// manifest request fails it with a timeout.
func TestResolveRegistryStalls(t *testing.T) {
	reg := registrytest.New(t)
	registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/manifests/") {
			return false
		}
		<-r.Context().Done()
		return true
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}, RequestTimeout: 200 * time.Millisecond})
	_, err := u.Resolve(ctx, reg.Host+"/catalogs/demo:v1")
	t.Logf("Resolve error: %v", err)
	if ctx.Err() != nil {
		t.Fatalf("Resolve ran until the test's own deadline: %v", err)
	}
	var te interface{ Timeout() bool }
	if !errors.As(err, &te) || !te.Timeout() || unpack.IsTerminal(err) {
		t.Errorf("error %v, want a retryable timeout", err)
	}
}
