package catalogsync_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"oras.land/oras-go/v2"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/dirtree"
	"github.com/catalogd/catalogd/test/registrytest"
)

// demoFiles reads the demo catalog's files.
func demoFiles(t *testing.T) map[string]string {
	t.Helper()
	return dirtree.Files(t, os.DirFS(demoDir))
}

func sameFiles(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %.40q, want %.40q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s", k)
		}
	}
}

// TestLayoutFetcher: a layout's tag resolves to its manifest's digest,
// pinned in Ref; a live digest is not unpacked; what is unpacked is the
// artifact's content, and says it was an artifact.
func TestLayoutFetcher(t *testing.T) {
	demo, err := filepath.Abs(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, err := orasoci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	desc := registrytest.PackArtifact(t, store, "v1", oras.PackManifestVersion1_1, "application/vnd.catalogd.fbc.v1",
		[]registrytest.ArtifactLayer{{Name: "demo", Path: demo}})
	u, err := unpack.New(unpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	f := catalogsync.LayoutFetcher{Layout: source.Layout{Dir: dir, Ref: "v1"}, Unpacker: u, TempDir: tmp}
	wantRef := "oci:" + dir + ":" + desc.Digest.String()

	live, err := f.Fetch(context.Background(), func(d string) bool { return d == desc.Digest.String() })
	if err != nil || live.FS != nil || live.Ref != wantRef || live.Digest != desc.Digest.String() {
		t.Fatalf("live digest: %+v, %v; want only Ref %s and Digest", live.Content, err, wantRef)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("live digest unpacked into %s", entries[0].Name())
	}

	got, err := f.Fetch(context.Background(), func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if got.Ref != wantRef || got.Form != source.FormArtifact || !got.Pulled {
		t.Errorf("Ref %s, Form %q, Pulled %v; want %s, %q, true", got.Ref, got.Form, got.Pulled, wantRef, source.FormArtifact)
	}
	want := map[string]string{}
	for k, v := range demoFiles(t) {
		want["demo/"+k] = v
	}
	sameFiles(t, dirtree.Files(t, got.FS), want)
	got.Release()
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("Release left %s", entries[0].Name())
	}

	for ref, wantBuilt := range map[string]bool{
		wantRef:                true,
		"oci:" + dir:           true,
		"oci:" + dir + ":v1":   true,
		"oci:" + dir + "x:v1":  false,
		"oci:/elsewhere:v1":    false,
		dir + "@" + "sha256:0": false,
	} {
		if f.Built(ref) != wantBuilt {
			t.Errorf("Built(%s) = %v, want %v", ref, !wantBuilt, wantBuilt)
		}
	}
}

// TestImageFetcherSaysArtifact: an artifact pushed with oras-go to a
// registry is fetched by ImageFetcher, which says it was one.
func TestImageFetcherSaysArtifact(t *testing.T) {
	demo, err := filepath.Abs(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.New(t)
	registrytest.PackArtifact(t, reg.OrasRepository(t, "catalogs/art"), "v1", oras.PackManifestVersion1_1, "application/vnd.catalogd.fbc.v1",
		[]registrytest.ArtifactLayer{{Name: "demo", Path: demo}})
	u, err := unpack.New(unpack.Options{InsecureRegistries: []string{reg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.Host+"/catalogs/art:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := catalogsync.ImageFetcher{Ref: ref, Unpacker: u, TempDir: t.TempDir()}.Fetch(context.Background(), func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.Form != source.FormArtifact {
		t.Errorf("Form = %q, want %q", got.Form, source.FormArtifact)
	}
}
