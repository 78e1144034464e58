package registrytest

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ConfigsDirLabel is the image label that tells where a catalog image keeps
// its FBC.
const ConfigsDirLabel = "operators.operatorframework.io.index.configs.v1"

// DefaultConfigsDir is where PushCatalog puts the FBC unless told otherwise.
const DefaultConfigsDir = "/configs"

// Entry is one raw tar entry. Names are written exactly as given, so entries
// can be unsafe on purpose (absolute paths, "..", devices, escaping links).
// The zero Typeflag means a regular file.
type Entry struct {
	Name     string
	Typeflag byte
	Linkname string
	// Mode defaults to 0644 for files and 0755 for directories.
	Mode int64
	Body []byte
}

// File is a regular file entry.
func File(name, body string) Entry {
	return Entry{Name: name, Typeflag: tar.TypeReg, Body: []byte(body)}
}

// Dir is a directory entry.
func Dir(name string) Entry {
	return Entry{Name: strings.TrimSuffix(name, "/") + "/", Typeflag: tar.TypeDir}
}

// Symlink is a symbolic link entry name -> target.
func Symlink(name, target string) Entry {
	return Entry{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}
}

// Hardlink is a hard link entry; target is a path from the image root.
func Hardlink(name, target string) Entry {
	return Entry{Name: name, Typeflag: tar.TypeLink, Linkname: target}
}

// Whiteout is the OCI whiteout entry that deletes p from lower layers.
func Whiteout(p string) Entry {
	dir, base := path.Split(p)
	return Entry{Name: dir + ".wh." + base, Typeflag: tar.TypeReg}
}

// Opaque is the OCI opaque-directory marker that hides everything lower
// layers put in dir.
func Opaque(dir string) Entry {
	return Entry{Name: path.Join(dir, ".wh..wh..opq"), Typeflag: tar.TypeReg}
}

// PushOptions shapes the image PushCatalog builds. The zero value gives a
// single linux/amd64 OCI image with the FBC under /configs and the label set.
type PushOptions struct {
	// ConfigsDir is where the FBC directory goes in the image, and what the
	// label says unless Label is set. Default "/configs".
	ConfigsDir string
	// Label overrides the label value, for an image whose label and content
	// disagree.
	Label string
	// NoLabel leaves the configs label out.
	NoLabel bool
	// Extra entries are appended verbatim to the first layer, after the FBC.
	// Use them for files outside the configs directory or unsafe entries.
	Extra []Entry
	// Layers are further layers applied in order after the first, for
	// whiteouts and overrides. Names are written verbatim.
	Layers [][]Entry
	// Platforms, when set, pushes an image index with one image per platform
	// (same layers, different config); otherwise a single linux/amd64 image.
	Platforms []v1.Platform
	// Auth authenticates the push to a WithBasicAuth registry.
	Auth authn.Authenticator
	// Transport is used for the push; set it to Registry.Client().Transport
	// for a WithTLS registry. Registry.PushCatalog fills in both.
	Transport http.RoundTripper
}

// PushCatalog builds a catalog image from the FBC directory dir (may be "" for
// none), pushes it to host/repoTag (for example "catalogs/demo:v1") over plain
// HTTP, and returns its digest reference host/repo@sha256:... . The build is
// deterministic: the same inputs give the same digest.
func PushCatalog(t testing.TB, host, repoTag, dir string, opts PushOptions) string {
	t.Helper()
	nameOpts := []name.Option{}
	if opts.Transport == nil {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(host+"/"+repoTag, nameOpts...)
	if err != nil {
		t.Fatalf("registrytest: parsing %s/%s: %v", host, repoTag, err)
	}
	layers := buildLayers(t, dir, opts)

	remoteOpts := []remote.Option{}
	if opts.Auth != nil {
		remoteOpts = append(remoteOpts, remote.WithAuth(opts.Auth))
	}
	if opts.Transport != nil {
		remoteOpts = append(remoteOpts, remote.WithTransport(opts.Transport))
	}

	var digest v1.Hash
	if len(opts.Platforms) == 0 {
		img := buildImage(t, layers, v1.Platform{OS: "linux", Architecture: "amd64"}, opts)
		if err := remote.Write(ref, img, remoteOpts...); err != nil {
			t.Fatalf("registrytest: pushing %s: %v", ref, err)
		}
		if digest, err = img.Digest(); err != nil {
			t.Fatalf("registrytest: digest of %s: %v", ref, err)
		}
	} else {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, p := range opts.Platforms {
			img := buildImage(t, layers, p, opts)
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
				Add:        img,
				Descriptor: v1.Descriptor{Platform: &p},
			})
		}
		if err := remote.WriteIndex(ref, idx, remoteOpts...); err != nil {
			t.Fatalf("registrytest: pushing index %s: %v", ref, err)
		}
		if digest, err = idx.Digest(); err != nil {
			t.Fatalf("registrytest: digest of %s: %v", ref, err)
		}
	}
	return ref.Context().Name() + "@" + digest.String()
}

// PushCatalog is the package PushCatalog with the registry's credentials and,
// for a WithTLS registry, its trusted transport filled in.
func (r *Registry) PushCatalog(t testing.TB, repoTag, dir string, opts PushOptions) string {
	t.Helper()
	if opts.Auth == nil && r.username != "" {
		opts.Auth = &authn.Basic{Username: r.username, Password: r.password}
	}
	if opts.Transport == nil && r.tls {
		opts.Transport = r.Client().Transport
	}
	return PushCatalog(t, r.Host, repoTag, dir, opts)
}

func buildImage(t testing.TB, layers []v1.Layer, p v1.Platform, opts PushOptions) v1.Image {
	t.Helper()
	cfg := &v1.ConfigFile{
		OS:           p.OS,
		Architecture: p.Architecture,
		Variant:      p.Variant,
		RootFS:       v1.RootFS{Type: "layers"},
	}
	if !opts.NoLabel {
		label := opts.Label
		if label == "" {
			label = configsDir(opts)
		}
		cfg.Config.Labels = map[string]string{ConfigsDirLabel: label}
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	base, err := mutate.ConfigFile(base, cfg)
	if err != nil {
		t.Fatalf("registrytest: setting image config: %v", err)
	}
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		t.Fatalf("registrytest: appending layers: %v", err)
	}
	return img
}

func configsDir(opts PushOptions) string {
	if opts.ConfigsDir == "" {
		return DefaultConfigsDir
	}
	return opts.ConfigsDir
}

func buildLayers(t testing.TB, dir string, opts PushOptions) []v1.Layer {
	t.Helper()
	first := fbcEntries(t, dir, strings.Trim(path.Clean(configsDir(opts)), "/"))
	first = append(first, opts.Extra...)
	layers := []v1.Layer{newLayer(t, first)}
	for _, entries := range opts.Layers {
		layers = append(layers, newLayer(t, entries))
	}
	return layers
}

// fbcEntries lists dir's tree under prefix, with a directory entry for every
// ancestor of prefix as image builders write them.
func fbcEntries(t testing.TB, dir, prefix string) []Entry {
	t.Helper()
	var entries []Entry
	parts := strings.Split(prefix, "/")
	for i := range parts {
		entries = append(entries, Dir(strings.Join(parts[:i+1], "/")))
	}
	if dir == "" {
		return entries
	}
	// A catalog given as a symbolic link (to a shared copy, say) is
	// pushed as what it points to: WalkDir would list the link alone, and
	// a benchmark would measure an empty catalog without noticing.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatalf("registrytest: reading %s: %v", dir, err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		name := prefix + "/" + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			entries = append(entries, Dir(name))
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			entries = append(entries, Symlink(name, target))
		case d.Type().IsRegular():
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entries = append(entries, Entry{Name: name, Typeflag: tar.TypeReg, Body: body})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("registrytest: reading FBC directory %s: %v", dir, err)
	}
	return entries
}

func newLayer(t testing.TB, entries []Entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:     e.Name,
			Typeflag: e.Typeflag,
			Linkname: e.Linkname,
			Mode:     e.Mode,
			Size:     int64(len(e.Body)),
		}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
			if hdr.Typeflag == tar.TypeDir {
				hdr.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("registrytest: writing tar header %q: %v", e.Name, err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write(e.Body); err != nil {
				t.Fatalf("registrytest: writing tar entry %q: %v", e.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("registrytest: closing tar: %v", err)
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatalf("registrytest: creating layer: %v", err)
	}
	return layer
}

// Blobs returns the config and layers of the image or artifact manifest
// at ref (on a plain-HTTP registry), digest to size: what a pull of it
// downloads, so that a test can tell which blob requests were for it.
func Blobs(t testing.TB, ref string) map[string]int64 {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatalf("registrytest: parsing %s: %v", ref, err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatalf("registrytest: fetching %s: %v", ref, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		t.Fatalf("registrytest: manifest of %s: %v", ref, err)
	}
	out := map[string]int64{m.Config.Digest.String(): m.Config.Size}
	for _, l := range m.Layers {
		out[l.Digest.String()] = l.Size
	}
	return out
}

// LayerBytes reads the blob of l, as the registry stores it.
func LayerBytes(t testing.TB, l v1.Layer) []byte {
	t.Helper()
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BlobDigest is the digest a blob request's path names, or "" for a path
// that is not a blob's.
func BlobDigest(path string) string {
	i := strings.LastIndex(path, "/blobs/")
	if i < 0 || strings.Contains(path, "/blobs/uploads") {
		return ""
	}
	return path[i+len("/blobs/"):]
}
