package packageapi

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/query"
)

// FuzzCSVOf feeds csvOf, the one parser of catalog content here, property
// values it cannot trust: an olm.csv.metadata value, and the same bytes
// as the document of an olm.bundle.object. It must not panic, and what it
// answers keeps its promises: the bundle's version, related images sorted,
// unique and non-empty.
func FuzzCSVOf(f *testing.F) {
	b, err := os.ReadFile("testdata/main/catalog.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var blob struct {
			Properties []struct {
				Type  string          `json:"type"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		}
		if json.Unmarshal([]byte(line), &blob) != nil {
			continue
		}
		for _, p := range blob.Properties {
			switch p.Type {
			case "olm.csv.metadata":
				f.Add([]byte(p.Value))
			case "olm.bundle.object":
				var obj struct{ Data []byte }
				if json.Unmarshal(p.Value, &obj) == nil {
					f.Add(obj.Data)
				}
			}
		}
	}
	f.Add([]byte(`kind: ClusterServiceVersion
spec: {relatedImages: [{image: ""}, {image: b}, {image: a}, {image: b}]}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		object, _ := json.Marshal(map[string]string{"data": base64.StdEncoding.EncodeToString(value)})
		for _, prop := range []query.Property{
			{Type: "olm.csv.metadata", Value: value},
			{Type: "olm.bundle.object", Value: object},
		} {
			b := query.BundleDetail{Name: "b.v1.0.0", Version: "1.0.0", Properties: []query.Property{prop},
				RelatedImages: []query.RelatedImage{{Image: "z"}, {Image: ""}}}
			c := csvOf(b, "package description")
			if c == nil {
				continue
			}
			if c.desc.Version != b.Version {
				t.Errorf("%s: version %q, want the bundle's %q", prop.Type, c.desc.Version, b.Version)
			}
			imgs := c.desc.RelatedImages
			if !slices.IsSorted(imgs) || len(slices.Compact(slices.Clone(imgs))) != len(imgs) || slices.Contains(imgs, "") {
				t.Errorf("%s: related images %q: want sorted, unique, non-empty", prop.Type, imgs)
			}
		}
	})
}
