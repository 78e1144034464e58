package registrytest_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogd/catalogd/test/registrytest"
)

func TestPushCatalogIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"schema":"olm.package","name":"a"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	host := registrytest.Start(t)
	first := registrytest.PushCatalog(t, host, "catalogs/a:v1", dir, registrytest.PushOptions{})
	second := registrytest.PushCatalog(t, host, "catalogs/a:v2", dir, registrytest.PushOptions{})
	if !strings.HasPrefix(first, host+"/catalogs/a@sha256:") {
		t.Errorf("digest ref %s, want %s/catalogs/a@sha256:...", first, host)
	}
	if first[strings.Index(first, "@"):] != second[strings.Index(second, "@"):] {
		t.Errorf("same content pushed twice gave %s and %s", first, second)
	}
	changed := registrytest.PushCatalog(t, host, "catalogs/a:v3", dir, registrytest.PushOptions{
		Layers: [][]registrytest.Entry{{registrytest.Whiteout("configs/catalog.json")}},
	})
	if changed[strings.Index(changed, "@"):] == first[strings.Index(first, "@"):] {
		t.Error("an extra layer did not change the digest")
	}
}

// A catalog given as a symbolic link to its directory is pushed as the
// directory: the same digest, not an image of the link alone.
func TestPushCatalogFollowsALinkedRoot(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "catalog")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"schema":"olm.package","name":"a"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	host := registrytest.Start(t)
	direct := registrytest.PushCatalog(t, host, "catalogs/a:direct", dir, registrytest.PushOptions{})
	linked := registrytest.PushCatalog(t, host, "catalogs/a:linked", link, registrytest.PushOptions{})
	if direct[strings.Index(direct, "@"):] != linked[strings.Index(linked, "@"):] {
		t.Errorf("the catalog pushed through a link is %s, directly %s", linked, direct)
	}
}

func TestCounts(t *testing.T) {
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/a:v1", "", registrytest.PushOptions{})
	if c := reg.Counts(); c.ManifestPuts != 1 || c.Uploads == 0 {
		t.Errorf("push counted as %+v", c)
	}
	reg.Reset()

	tag, err := name.ParseReference(reg.Host+"/catalogs/a:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Head(tag); err != nil {
		t.Fatalf("HEAD: %v", err)
	}
	digest, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(digest)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if _, err := img.RawConfigFile(); err != nil {
		t.Fatalf("config: %v", err)
	}
	c := reg.Counts()
	want := registrytest.Counts{Pings: 2, ManifestHeads: 1, ManifestGets: 1, BlobGets: 1, Total: 5}
	if c != want {
		t.Errorf("counts %+v, want %+v; requests %v", c, want, reg.Requests())
	}
}

func TestInterceptAndAuth(t *testing.T) {
	reg := registrytest.New(t, registrytest.WithBasicAuth("u", "p"))
	reg.PushCatalog(t, "catalogs/a:v1", "", registrytest.PushOptions{})

	tag, err := name.ParseReference(reg.Host+"/catalogs/a:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Head(tag); err == nil {
		t.Error("anonymous HEAD succeeded on a registry with basic auth")
	}
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusTeapot)
		return true
	})
	resp, err := http.Get(reg.URL + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d, want the interceptor's %d", resp.StatusCode, http.StatusTeapot)
	}
}
