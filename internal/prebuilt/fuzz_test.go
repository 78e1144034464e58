package prebuilt_test

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/catalogd/catalogd/internal/prebuilt"
)

// FuzzCheckManifest feeds manifests a registry could serve to the checks
// Download makes before writing any file: whatever passes names the
// catalog as its subject and in its annotation, is of the client's
// schema, has one database layer, names only files directly inside the
// content directory, so that no layer is written elsewhere, and records
// the size of every compressed layer's file, which bounds what it is
// decompressed to.
func FuzzCheckManifest(f *testing.F) {
	const catalog = "sha256:" + "5c868a873b22d9d3612295ebbb169f14f18afe9a32994617d05a7bfc928e3d32"
	c := prebuilt.New(nil, prebuilt.Options{})
	layer := func(title, mediaType string) map[string]any {
		return map[string]any{"mediaType": mediaType, "size": 3, "digest": "sha256:" + strings.Repeat("0", 64),
			"annotations": map[string]string{"org.opencontainers.image.title": title}}
	}
	valid := map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "artifactType": prebuilt.ArtifactType,
		"config":      map[string]any{"mediaType": prebuilt.ArtifactType, "size": 2, "digest": "sha256:" + strings.Repeat("1", 64)},
		"subject":     map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 9, "digest": catalog},
		"annotations": map[string]string{prebuilt.AnnotationSchema: c.Schema(), prebuilt.AnnotationCatalog: catalog},
		"layers": []any{layer("index.db", prebuilt.DatabaseMediaType), layer("content/segments.json", prebuilt.ContentMediaType),
			layer("content/000000.all", prebuilt.ContentMediaType+prebuilt.ZstdSuffix)},
	}
	valid["layers"].([]any)[2].(map[string]any)["annotations"].(map[string]string)[prebuilt.AnnotationSize] = "30"
	seed, err := json.Marshal(valid)
	if err != nil {
		f.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(seed, &m); err != nil {
		f.Fatal(err)
	}
	if err := c.CheckManifest(&m, catalog); err != nil {
		f.Fatalf("the valid seed fails: %v", err)
	}
	f.Add(seed)
	for _, title := range []string{"content/../x", "content/", "content/.hidden", "../index.db", "content/a/b", `content/a\b`} {
		bad := strings.Replace(string(seed), "content/000000.all", title, 1)
		f.Add([]byte(bad))
	}
	f.Add([]byte(strings.Replace(string(seed), `"index.db"`, `"content/index.db"`, 1)))
	f.Add([]byte(`{"layers":null}`))
	for _, size := range []string{`"30"`, `"-1"`, `"x"`, `""`, `"99999999999999999999"`} {
		f.Add([]byte(strings.Replace(string(seed), `"30"`, size, 1)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m v1.Manifest
		if json.Unmarshal(data, &m) != nil {
			return
		}
		if c.CheckManifest(&m, catalog) != nil {
			return
		}
		if m.Subject == nil || m.Subject.Digest.String() != catalog || m.Annotations[prebuilt.AnnotationCatalog] != catalog {
			t.Errorf("passed with subject %v, annotation %q; want the catalog", m.Subject, m.Annotations[prebuilt.AnnotationCatalog])
		}
		if m.Annotations[prebuilt.AnnotationSchema] != c.Schema() {
			t.Errorf("passed with schema %q", m.Annotations[prebuilt.AnnotationSchema])
		}
		databases := 0
		for _, l := range m.Layers {
			title := l.Annotations["org.opencontainers.image.title"]
			if strings.HasSuffix(string(l.MediaType), prebuilt.ZstdSuffix) {
				if n, err := strconv.ParseInt(l.Annotations[prebuilt.AnnotationSize], 10, 64); err != nil || n < 0 {
					t.Errorf("passed with compressed layer %s recording size %q", title, l.Annotations[prebuilt.AnnotationSize])
				}
			}
			if title == "index.db" {
				databases++
				continue
			}
			file, ok := strings.CutPrefix(title, "content/")
			if !ok || file == "" || path.Clean(file) != file || strings.ContainsAny(file, `/\`) || file == ".." || file == "." {
				t.Errorf("passed with a layer named %q, not a file of the content directory", title)
			}
		}
		if databases != 1 {
			t.Errorf("passed with %d database layers", databases)
		}
	})
}
