// Package fbcfacts reads a file-based catalog directory into plain Go values
// for tests, without any of catalogd's own code and without operator-
// registry's declcfg, so that what tests expect is computed independently of
// what they check.
package fbcfacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/joelanford/ignore"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Entry is a channel entry.
type Entry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

// Channel is an olm.channel blob.
type Channel struct {
	Package string  `json:"package"`
	Name    string  `json:"name"`
	Entries []Entry `json:"entries"`
}

// Heads returns the channel's heads: the entries no other entry names in
// replaces or skips.
func (c Channel) Heads() []string {
	named := map[string]bool{}
	for _, e := range c.Entries {
		named[e.Replaces] = true
		for _, s := range e.Skips {
			named[s] = true
		}
	}
	var heads []string
	for _, e := range c.Entries {
		if !named[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	sort.Strings(heads)
	return heads
}

// Head returns the head of a package's channel that a client can install:
// its single head (see Channel.Heads) when that names a bundle of the
// package with a version, else "".
func (c *Catalog) Head(pkg, channel string) string {
	if heads := c.Channels[pkg][channel].Heads(); len(heads) == 1 {
		if b, ok := c.Bundles[pkg][heads[0]]; ok && b.Version() != "" {
			return heads[0]
		}
	}
	return ""
}

// Property is a bundle property with its raw value.
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Bundle is an olm.bundle blob.
type Bundle struct {
	Package       string     `json:"package"`
	Name          string     `json:"name"`
	Image         string     `json:"image"`
	Properties    []Property `json:"properties"`
	RelatedImages []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	} `json:"relatedImages"`
}

// Version returns the version of the bundle's olm.package property.
func (b Bundle) Version() string {
	for _, p := range b.Properties {
		if p.Type == "olm.package" {
			var v struct {
				Version string `json:"version"`
			}
			_ = json.Unmarshal(p.Value, &v)
			return v.Version
		}
	}
	return ""
}

// GVK is a group/version/kind.
type GVK struct{ Group, Version, Kind string }

// GVKs returns the values of the bundle's properties of type typ
// (olm.gvk or olm.gvk.required).
func (b Bundle) GVKs(typ string) []GVK {
	var out []GVK
	for _, p := range b.Properties {
		if p.Type != typ {
			continue
		}
		var g struct{ Group, Version, Kind string }
		if json.Unmarshal(p.Value, &g) == nil {
			out = append(out, GVK(g))
		}
	}
	return out
}

// Package is an olm.package blob.
type Package struct {
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
	Description    string `json:"description"`
	Icon           *struct {
		Data      []byte `json:"base64data"`
		MediaType string `json:"mediatype"`
	} `json:"icon"`
}

// Blob is one document of the catalog, in walk order.
type Blob struct {
	Schema, Package, Name string
	// Doc is the document decoded into generic JSON values.
	Doc map[string]any
}

// Catalog is everything read from a catalog directory.
type Catalog struct {
	Blobs    []Blob
	Packages map[string]Package
	// Channels by package, then channel name.
	Channels map[string]map[string]Channel
	// Bundles by package, then bundle name.
	Bundles map[string]map[string]Bundle
}

// Load reads the catalog in dir, honouring .indexignore files.
func Load(t testing.TB, dir string) *Catalog {
	t.Helper()
	c, err := load(dir)
	if err != nil {
		t.Fatalf("read catalog %s: %v", dir, err)
	}
	return c
}

// SharedCommunity returns the path of the real community catalog beside the
// project, skipping the test when it is absent (a clone on its own), and
// with -short (make race, where a 15 MB catalog takes minutes per test).
func SharedCommunity(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short leaves out the real-catalog test (community-v4.20)")
	}
	dir, ok := FindSharedCommunity()
	if !ok {
		t.Skip("../shared/catalogs/community-v4.20 is absent (a clone on its own): skipping the real-catalog test")
	}
	return dir
}

// FindSharedCommunity returns the path of the real community catalog beside
// the project, and whether it is there, for tests that fall back to
// generated content rather than skip.
func FindSharedCommunity() (string, bool) {
	for _, rel := range []string{"../shared", "../../shared", "../../../shared"} {
		dir := filepath.Join(rel, "catalogs", "community-v4.20")
		if _, err := os.Stat(dir); err == nil {
			return dir, true
		}
	}
	return "", false
}

func load(dir string) (*Catalog, error) {
	c := &Catalog{
		Packages: map[string]Package{},
		Channels: map[string]map[string]Channel{},
		Bundles:  map[string]map[string]Bundle{},
	}
	root := os.DirFS(dir)
	matcher, err := ignore.NewMatcher(root, ".indexignore")
	if err != nil {
		return nil, err
	}
	err = fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".indexignore" || matcher.Match(path, false) {
			return err
		}
		data, err := fs.ReadFile(root, path)
		if err != nil {
			return err
		}
		return c.addFile(path, data)
	})
	return c, err
}

func (c *Catalog) addFile(path string, data []byte) error {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		str := func(k string) string { s, _ := doc[k].(string); return s }
		c.Blobs = append(c.Blobs, Blob{Schema: str("schema"), Package: str("package"), Name: str("name"), Doc: doc})
		switch str("schema") {
		case "olm.package":
			var p Package
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			c.Packages[p.Name] = p
		case "olm.channel":
			var ch Channel
			if err := json.Unmarshal(raw, &ch); err != nil {
				return err
			}
			if c.Channels[ch.Package] == nil {
				c.Channels[ch.Package] = map[string]Channel{}
			}
			c.Channels[ch.Package][ch.Name] = ch
		case "olm.bundle":
			var b Bundle
			if err := json.Unmarshal(raw, &b); err != nil {
				return err
			}
			if c.Bundles[b.Package] == nil {
				c.Bundles[b.Package] = map[string]Bundle{}
			}
			c.Bundles[b.Package][b.Name] = b
		}
	}
}

// CountBundles returns the number of bundles.
func (c *Catalog) CountBundles() int {
	n := 0
	for _, bs := range c.Bundles {
		n += len(bs)
	}
	return n
}

// CountChannels returns the number of channels.
func (c *Catalog) CountChannels() int {
	n := 0
	for _, cs := range c.Channels {
		n += len(cs)
	}
	return n
}

// JSONLines encodes every blob as catalogd serves it: compact JSON, keys
// sorted, HTML characters unescaped, one per line, in walk order.
func (c *Catalog) JSONLines() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, b := range c.Blobs {
		_ = enc.Encode(b.Doc)
	}
	return buf.Bytes()
}

// JSONEqual reports whether two JSON texts hold the same value.
func JSONEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
