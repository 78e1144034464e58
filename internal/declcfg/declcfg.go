// Package declcfg holds the blob types of a file-based catalog that
// catalogd decodes: the olm.package, olm.channel, olm.bundle and
// olm.deprecations schemas, and Meta, any blob by its schema, package and
// name. Their JSON is the catalog format's, field for field as
// operator-registry's alpha/declcfg reads it, and they carry the same
// names, so that code reads the same either way.
//
// They are defined here rather than imported because importing
// operator-registry's declcfg links its whole registry package with it
// (gRPC, CEL, container image libraries), whose package initialisation
// every catalogd process pays for at start-up whatever its command: about
// 12 MiB resident, a fifth of an idle server's (see docs/architecture.md,
// "What the binary links"). operator-registry's alpha/property and
// alpha/model are light and stay imported; tests keep comparing with
// operator-registry's declcfg, which a test binary may link.
package declcfg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/prettyunmarshaler"
	"golang.org/x/text/cases"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The schemas catalogd interprets.
const (
	SchemaPackage     = "olm.package"
	SchemaChannel     = "olm.channel"
	SchemaBundle      = "olm.bundle"
	SchemaDeprecation = "olm.deprecations"
)

// DeclarativeConfig is a set of blobs by schema.
type DeclarativeConfig struct {
	Packages     []Package
	Channels     []Channel
	Bundles      []Bundle
	Deprecations []Deprecation
	Others       []Meta
}

// Package is an olm.package blob.
type Package struct {
	Schema         string              `json:"schema"`
	Name           string              `json:"name"`
	DefaultChannel string              `json:"defaultChannel"`
	Icon           *Icon               `json:"icon,omitempty"`
	Description    string              `json:"description,omitempty"`
	Properties     []property.Property `json:"properties,omitempty"`
}

// Icon is a package's icon: its bytes, base64 in the JSON, and media type.
type Icon struct {
	Data      []byte `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// Channel is an olm.channel blob.
type Channel struct {
	Schema     string              `json:"schema"`
	Name       string              `json:"name"`
	Package    string              `json:"package"`
	Entries    []ChannelEntry      `json:"entries"`
	Properties []property.Property `json:"properties,omitempty"`
}

// ChannelEntry is one bundle of a channel and the upgrade edges into it.
type ChannelEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// Bundle is an olm.bundle blob.
type Bundle struct {
	Schema        string              `json:"schema"`
	Name          string              `json:"name,omitempty"`
	Package       string              `json:"package,omitempty"`
	Image         string              `json:"image"`
	Properties    []property.Property `json:"properties,omitempty"`
	RelatedImages []RelatedImage      `json:"relatedImages,omitempty"`
}

// RelatedImage is an image a bundle's operator uses.
type RelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// Deprecation is an olm.deprecations blob: what a package deprecates.
type Deprecation struct {
	Schema  string             `json:"schema"`
	Package string             `json:"package"`
	Entries []DeprecationEntry `json:"entries"`
}

// DeprecationEntry deprecates the package, a channel or a bundle.
type DeprecationEntry struct {
	Reference PackageScopedReference `json:"reference"`
	Message   string                 `json:"message"`
}

// PackageScopedReference names the package (schema olm.package, no name),
// or one of its channels or bundles.
type PackageScopedReference struct {
	Schema string `json:"schema"`
	Name   string `json:"name,omitempty"`
}

// Meta is any blob: its schema, package and name, and the blob itself in
// the encoding UnmarshalJSON gives it.
type Meta struct {
	Schema  string
	Package string
	Name    string

	Blob json.RawMessage
}

// MarshalJSON gives the blob as it is.
func (m Meta) MarshalJSON() ([]byte, error) { return m.Blob, nil }

// prettyError is encoding/json's error told as operator-registry's Meta
// tells it, with the JSON error kept in the chain: its offset says where
// the fault stands, which the message only shows in a copy of the blob.
type prettyError struct {
	msg string
	err error
}

func (e *prettyError) Error() string { return e.msg }
func (e *prettyError) Unwrap() error { return e.err }

// UnmarshalJSON reads a blob as operator-registry does, so that a catalog
// is accepted or refused alike and the refusal reads the same: the blob
// must be a JSON object whose keys stay distinct when case is folded
// (encoding/json matches fields without regard to case, so "Name" beside
// "name" would be ambiguous); schema, package and name are the values of
// those keys, in any case, and must be strings where present. Blob is the
// object encoded again by encoding/json from its decoded form: keys
// sorted, no space, HTML characters left as they are, numbers as float64
// writes them, and a newline at the end.
func (m *Meta) UnmarshalJSON(blob []byte) error {
	var fields map[string]any
	if err := json.Unmarshal(blob, &fields); err != nil {
		return &prettyError{msg: prettyunmarshaler.NewJSONUnmarshalError(blob, err).Pretty(), err: err}
	}
	fold := cases.Fold()
	byFolded := map[string][]string{}
	for key := range fields {
		f := fold.String(key)
		byFolded[f] = append(byFolded[f], key)
	}
	var dups []error
	for _, f := range slices.Sorted(maps.Keys(byFolded)) {
		if keys := byFolded[f]; len(keys) > 1 {
			slices.Sort(keys)
			dups = append(dups, fmt.Errorf("duplicate keys for key %q: %v", f, keys))
		}
	}
	if len(dups) > 0 {
		return utilerrors.NewAggregate(dups)
	}
	for _, field := range []struct {
		key string
		to  *string
	}{{"schema", &m.Schema}, {"package", &m.Package}, {"name", &m.Name}} {
		keys, ok := byFolded[fold.String(field.key)]
		if !ok {
			continue
		}
		v, ok := fields[keys[0]].(string)
		if !ok {
			// operator-registry's words, verb and all, so that the
			// refusal reads the same.
			return fmt.Errorf("expected value for key %q to be a string, got %t: %v", keys[0], fields[keys[0]], fields[keys[0]])
		}
		*field.to = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return fmt.Errorf("encode blob: %w", err)
	}
	m.Blob = buf.Bytes()
	return nil
}
