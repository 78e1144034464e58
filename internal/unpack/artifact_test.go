package unpack_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"oras.land/oras-go/v2"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/registrytest"
)

// prefixed is files with every path under dir, and dir itself.
func prefixed(dir string, files map[string]string) map[string]string {
	out := map[string]string{dir: dirMark}
	for k, v := range files {
		out[dir+"/"+k] = v
	}
	return out
}

// TestUnpackArtifact: an artifact pushed with oras-go unpacks to what was
// pushed, file by file, and says it was an artifact; a catalog image says
// it was an image.
func TestUnpackArtifact(t *testing.T) {
	reg := registrytest.New(t)
	demo := tree(t, demoDir)
	demoAbs, err := filepath.Abs(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	files := writeTree(t, map[string]string{
		"package.json": `{"schema":"olm.package","name":"solo"}`,
		"channel.yaml": "schema: olm.channel\npackage: solo\nname: stable\n",
	})
	const fbcType = "application/vnd.catalogd.fbc.v1"
	for _, tc := range []struct {
		name    string
		version oras.PackManifestVersion
		layers  []registrytest.ArtifactLayer
		want    map[string]string
	}{
		{
			name:    "directory as oras pushes it",
			version: oras.PackManifestVersion1_1,
			layers:  []registrytest.ArtifactLayer{{Name: "catalog", Path: demoAbs}},
			want:    prefixed("catalog", demo),
		},
		{
			name:    "files titled, default and own media types",
			version: oras.PackManifestVersion1_1,
			layers: []registrytest.ArtifactLayer{
				{Name: "package.json", Path: filepath.Join(files, "package.json")},
				{Name: "channel.yaml", MediaType: "application/yaml", Path: filepath.Join(files, "channel.yaml")},
			},
			want: map[string]string{
				"package.json": `{"schema":"olm.package","name":"solo"}`,
				"channel.yaml": "schema: olm.channel\npackage: solo\nname: stable\n",
			},
		},
		{
			name:    "artifact type as config media type (manifest 1.0)",
			version: oras.PackManifestVersion1_0,
			layers:  []registrytest.ArtifactLayer{{Name: "one.json", MediaType: "application/json", Path: filepath.Join(files, "package.json")}},
			want:    map[string]string{"one.json": `{"schema":"olm.package","name":"solo"}`},
		},
		{
			name:    "a file in a subdirectory, and an untitled tar layer",
			version: oras.PackManifestVersion1_1,
			layers: []registrytest.ArtifactLayer{
				{Raw: []byte(`{"a":1}`), MediaType: "application/json", Annotations: map[string]string{unpack.TitleAnnotation: "sub/a.json"}},
				{Raw: tarOf(t, map[string]string{"b.json": `{"b":2}`}), MediaType: "application/vnd.oci.image.layer.v1.tar"},
			},
			want: map[string]string{"sub": dirMark, "sub/a.json": `{"a":1}`, "b.json": `{"b":2}`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := "artifacts/" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			repo = strings.NewReplacer("(", "", ")", "", ",", "", ".", "").Replace(repo)
			desc := registrytest.PackArtifact(t, reg.OrasRepository(t, repo), "v1", tc.version, fbcType, tc.layers)
			u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})
			dst := filepath.Join(t.TempDir(), "fbc")
			res, err := u.Unpack(context.Background(), reg.Host+"/"+repo+"@"+desc.Digest.String(), dst)
			if err != nil {
				t.Fatal(err)
			}
			diffTrees(t, tree(t, dst), tc.want)
			checkFileHashes(t, dst, res)
			if res.Form != source.FormArtifact || res.Digest != desc.Digest.String() {
				t.Errorf("Form %q, Digest %s; want %q, %s", res.Form, res.Digest, source.FormArtifact, desc.Digest)
			}
		})
	}

	t.Run("image", func(t *testing.T) {
		ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
		u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})
		res, err := u.Unpack(context.Background(), ref, filepath.Join(t.TempDir(), "fbc"))
		if err != nil || res.Form != source.FormImage {
			t.Errorf("Form %q, %v; want %q", res.Form, err, source.FormImage)
		}
	})
}

// tarOf is a tar stream of files.
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnpackArtifactRefused: what cannot be placed safely, or at all, is
// refused terminally, leaving nothing behind.
func TestUnpackArtifactRefused(t *testing.T) {
	reg := registrytest.New(t)
	for _, tc := range []struct {
		name    string
		layers  []registrytest.ArtifactLayer
		opts    unpack.Options
		wantErr string
	}{
		{"title leaves the catalog", []registrytest.ArtifactLayer{{Raw: []byte("{}"), MediaType: "application/json", Annotations: map[string]string{unpack.TitleAnnotation: "../x"}}}, unpack.Options{}, "not a clean path inside the catalog"},
		{"absolute title", []registrytest.ArtifactLayer{{Raw: []byte("{}"), MediaType: "application/json", Annotations: map[string]string{unpack.TitleAnnotation: "/etc/x"}}}, unpack.Options{}, "absolute path"},
		{"directory title, not a tar", []registrytest.ArtifactLayer{{Raw: []byte("{}"), MediaType: "application/json", Annotations: map[string]string{unpack.TitleAnnotation: "dir", "io.deis.oras.content.unpack": "true"}}}, unpack.Options{}, "is not a tar archive"},
		{"untitled file", []registrytest.ArtifactLayer{{Raw: []byte("{}"), MediaType: "application/json"}}, unpack.Options{}, "needs an org.opencontainers.image.title annotation"},
		{"no layer", nil, unpack.Options{}, "the artifact holds no file"},
		{"file over MaxTotalBytes", []registrytest.ArtifactLayer{{Raw: bytes.Repeat([]byte("x"), 2048), MediaType: "application/json", Annotations: map[string]string{unpack.TitleAnnotation: "big.json"}}}, unpack.Options{MaxTotalBytes: 1024}, "MaxTotalBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := "refused/" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			repo = strings.ReplaceAll(repo, ",", "")
			desc := registrytest.PackArtifact(t, reg.OrasRepository(t, repo), "v1", oras.PackManifestVersion1_1, "application/vnd.catalogd.fbc.v1", tc.layers)
			tc.opts.InsecureRegistries = []string{reg.Host}
			u := newUnpacker(t, tc.opts)
			dst := filepath.Join(t.TempDir(), "fbc")
			_, err := u.Unpack(context.Background(), reg.Host+"/"+repo+"@"+desc.Digest.String(), dst)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !unpack.IsTerminal(err) {
				t.Fatalf("err = %v, want a terminal error saying %q", err, tc.wantErr)
			}
			var unsafe *unpack.UnsafeEntryError
			if strings.Contains(tc.name, "title") && !errors.As(err, &unsafe) {
				t.Errorf("err = %T, want an UnsafeEntryError", err)
			}
			assertNoDst(t, dst)
		})
	}
}
