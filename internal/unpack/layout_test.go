package unpack_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"oras.land/oras-go/v2"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/registrytest"
)

// layoutFiles is the catalog the layouts of these tests hold.
var layoutFiles = map[string]string{
	"solo/package.json": `{"schema":"olm.package","name":"solo"}`,
	"solo/channel.yaml": "schema: olm.channel\npackage: solo\nname: stable\n",
}

// catalogImage is a catalog image, as an image builder makes one: the
// label and the FBC under /configs.
func catalogImage(t *testing.T, files map[string]string) v1.Image {
	t.Helper()
	inImage := map[string]string{}
	for k, v := range files {
		inImage["configs/"+k] = v
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(base, &v1.ConfigFile{
		OS: "linux", Architecture: runtime.GOARCH,
		Config: v1.Config{Labels: map[string]string{unpack.ConfigsDirLabel: "/configs"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.AppendLayers(img, static.NewLayer(tarOf(t, inImage), types.OCIUncompressedLayer))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// writeLayouts writes a layout with go-containerregistry's layout package
// (a catalog image tagged "image", an index of it tagged "multi") and
// returns its directory.
func writeGGCRLayout(t *testing.T) (string, v1.Hash, v1.Hash) {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	img := catalogImage(t, layoutFiles)
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "image"})); err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "multi"})); err != nil {
		t.Fatal(err)
	}
	imgDigest, _ := img.Digest()
	idxDigest, _ := idx.Digest()
	return dir, imgDigest, idxDigest
}

// TestLayout: a layout written by oras-go's OCI store or by
// go-containerregistry unpacks, by tag, by digest, or as its only manifest;
// an image index in it gets the platform choice of a registry's.
func TestLayout(t *testing.T) {
	ctx := context.Background()
	src := writeTree(t, layoutFiles)
	store := t.TempDir()
	orasStore, err := orasoci.New(store)
	if err != nil {
		t.Fatal(err)
	}
	artifact := registrytest.PackArtifact(t, orasStore, "v1", oras.PackManifestVersion1_1, "application/vnd.catalogd.fbc.v1",
		[]registrytest.ArtifactLayer{{Name: "catalog", Path: src}})
	ggcr, imgDigest, idxDigest := writeGGCRLayout(t)

	for _, tc := range []struct {
		name, dir, ref      string
		wantDigest          string
		wantForm, wantImage string
		want                map[string]string
	}{
		{"oras, the only manifest", store, "", artifact.Digest.String(), source.FormArtifact, artifact.Digest.String(), prefixed("catalog", tree(t, src))},
		{"oras, by tag", store, "v1", artifact.Digest.String(), source.FormArtifact, artifact.Digest.String(), prefixed("catalog", tree(t, src))},
		{"oras, by digest", store, artifact.Digest.String(), artifact.Digest.String(), source.FormArtifact, artifact.Digest.String(), prefixed("catalog", tree(t, src))},
		{"ggcr image by tag", ggcr, "image", imgDigest.String(), source.FormImage, imgDigest.String(), tree(t, src)},
		{"ggcr index by tag", ggcr, "multi", idxDigest.String(), source.FormImage, imgDigest.String(), tree(t, src)},
		{"ggcr by digest", ggcr, imgDigest.String(), imgDigest.String(), source.FormImage, imgDigest.String(), tree(t, src)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnpacker(t, unpack.Options{})
			digest, err := u.ResolveLayout(tc.dir, tc.ref)
			if err != nil || digest != tc.wantDigest {
				t.Fatalf("ResolveLayout = %s, %v; want %s", digest, err, tc.wantDigest)
			}
			dst := filepath.Join(t.TempDir(), "fbc")
			res, err := u.UnpackLayout(ctx, tc.dir, digest, dst)
			if err != nil {
				t.Fatal(err)
			}
			diffTrees(t, tree(t, dst), tc.want)
			checkFileHashes(t, dst, res)
			if res.Form != tc.wantForm || res.ImageDigest != tc.wantImage || res.Ref != "oci:"+tc.dir+":"+digest {
				t.Errorf("Form %q, ImageDigest %s, Ref %s; want %q, %s, oci:%s:%s", res.Form, res.ImageDigest, res.Ref, tc.wantForm, tc.wantImage, tc.dir, digest)
			}
		})
	}
}

// TestLayoutRefused: a layout that does not say which manifest, or whose
// blobs are not what its descriptors say, or lead out of it, is refused
// with a message that says so.
func TestLayoutRefused(t *testing.T) {
	ggcr, imgDigest, _ := writeGGCRLayout(t)
	u := newUnpacker(t, unpack.Options{})
	for _, tc := range []struct {
		name, ref, wantErr string
	}{
		{"ambiguous", "", "holds 2 manifests: name one as oci:" + ggcr + ":TAG or oci:" + ggcr + ":sha256:DIGEST (its tags: image, multi)"},
		{"unknown tag", "v9", `has no manifest tagged "v9" (its tags: image, multi)`},
		{"unknown digest", "sha256:" + strings.Repeat("0", 64), "has no manifest sha256:0000"},
	} {
		if _, err := u.ResolveLayout(ggcr, tc.ref); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if _, err := u.ResolveLayout(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "is not an OCI image layout") {
		t.Errorf("no layout: err = %v", err)
	}

	// The image's one layer: tampered with, then replaced by a link out.
	img, err := layout.Path(ggcr).Image(imgDigest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(ggcr, "blobs", "sha256", m.Layers[0].Digest.Hex)
	outside := filepath.Join(t.TempDir(), "outside")
	original, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte{}, original...)
	copy(tampered[len(tampered)-1100:], "X")
	for _, tc := range []struct {
		name    string
		prepare func()
		wantErr string
	}{
		{"tampered layer", func() { write(t, blob, tampered) }, "does not match its digest"},
		{"longer layer", func() { write(t, blob, append(append([]byte{}, original...), 'x')) }, "larger than its descriptor's"},
		{"link out of the layout", func() {
			write(t, outside, original)
			if err := os.Remove(blob); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, blob); err != nil {
				t.Fatal(err)
			}
		}, "opening blob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.prepare()
			dst := filepath.Join(t.TempDir(), "fbc")
			_, err := u.UnpackLayout(context.Background(), ggcr, imgDigest.String(), dst)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			assertNoDst(t, dst)
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
