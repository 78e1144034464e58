package registrytest

import (
	"bytes"
	"context"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/file"
	"oras.land/oras-go/v2/content/memory"
	orasremote "oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// ArtifactLayer is one layer of an artifact: a path added through oras's
// file store, as `oras push NAME[:TYPE]` adds it (a directory becomes a
// tar+gzip layer with oras's unpack annotation, a file a blob titled by
// its name), or raw bytes with annotations of the test's choosing.
type ArtifactLayer struct {
	// Name, MediaType and Path are given to the file store's Add: the
	// name becomes the title; an empty media type is oras's default.
	Name, MediaType, Path string
	// Raw, when Path is empty, is pushed as is, with Annotations.
	Raw         []byte
	Annotations map[string]string
}

// PackArtifact packs layers into an artifact manifest of artifactType with
// oras-go, as `oras push` does, and copies it to target under tag.
func PackArtifact(t testing.TB, target oras.Target, tag string, version oras.PackManifestVersion, artifactType string, layers []ArtifactLayer) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	fileStore, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fileStore.Close()
	mem := memory.New()
	var descs []ocispec.Descriptor
	for _, l := range layers {
		var desc ocispec.Descriptor
		if l.Path != "" {
			if desc, err = fileStore.Add(ctx, l.Name, l.MediaType, l.Path); err != nil {
				t.Fatal(err)
			}
			rc, err := fileStore.Fetch(ctx, desc)
			if err != nil {
				t.Fatal(err)
			}
			err = mem.Push(ctx, desc, rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
		} else {
			desc = ocispec.Descriptor{MediaType: l.MediaType, Digest: digest.FromBytes(l.Raw), Size: int64(len(l.Raw)), Annotations: l.Annotations}
			if err := mem.Push(ctx, desc, bytes.NewReader(l.Raw)); err != nil {
				t.Fatal(err)
			}
		}
		descs = append(descs, desc)
	}
	manifest, err := oras.PackManifest(ctx, mem, version, artifactType, oras.PackManifestOptions{
		Layers:              descs,
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "2026-01-01T00:00:00Z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Tag(ctx, manifest, tag); err != nil {
		t.Fatal(err)
	}
	if _, err := oras.Copy(ctx, mem, tag, target, tag, oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// OrasRepository is repo of reg, spoken to by oras-go.
func (r *Registry) OrasRepository(t testing.TB, repo string) *orasremote.Repository {
	t.Helper()
	repository, err := orasremote.NewRepository(r.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	repository.PlainHTTP = !r.tls
	if r.tls {
		repository.Client = &auth.Client{Client: r.Client()}
	}
	if r.username != "" {
		repository.Client = &auth.Client{Client: r.Client(), Credential: auth.StaticCredential(r.Host, auth.Credential{Username: r.username, Password: r.password})}
	}
	return repository
}
