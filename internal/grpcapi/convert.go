package grpcapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/catalogd/catalogd/internal/query"
)

// This file is the one place where query's domain values become
// operator-registry's api messages, field for field as `opm serve` makes
// them from the same catalog (operator-registry v1.74.0's cache, which
// converts its model with api.ConvertModelBundleToAPIBundle).

// Property types the registry API treats apart.
const (
	typeBundleObject = "olm.bundle.object"
	typeCSVMetadata  = "olm.csv.metadata"
	csvKind          = "ClusterServiceVersion"
)

// packageMessage is a package with its channels (by name, each with its
// head) and deprecations.
func packageMessage(p query.Package, channels []query.ChannelSummary, deprecation string) *api.Package {
	out := &api.Package{Name: p.Name, DefaultChannelName: p.DefaultChannel, Deprecation: deprecationMessage(deprecation),
		Channels: make([]*api.Channel, 0, len(channels))}
	for _, ch := range channels {
		out.Channels = append(out.Channels, &api.Channel{Name: ch.Name, CsvName: ch.Head.Name, Deprecation: deprecationMessage(ch.Deprecation)})
	}
	return out
}

// deprecationMessage is nil for "", as the registry leaves out what is not
// deprecated.
func deprecationMessage(msg string) *api.Deprecation {
	if msg == "" {
		return nil
	}
	return &api.Deprecation{Message: msg}
}

// packageFacts is what a bundle's CSV borrows, when it is made from
// olm.csv.metadata, from its package (description and icon) and from the
// rest of the bundle (its related images).
type packageFacts struct {
	RelatedImages []query.RelatedImage
	Description   string
	// HasIcon says the package gave an icon; Icon and MediaType are it.
	HasIcon   bool
	Icon      []byte
	MediaType string
}

// objectParts are the properties a bundle's objects and CSV are made from
// (objectsAndCSV).
type objectParts struct{ objects, metadata []json.RawMessage }

// bundleMessage converts a bundle as a channel lists it, all but its
// objects and CSV, and returns what they are made from, and whether the
// answer has them (see appendBundle): the message appendBundle encodes,
// decoded, so that the Get methods answer exactly what ListBundles sends.
func bundleMessage(b query.ChannelBundle, listing bool) (*api.Bundle, objectParts, bool, error) {
	wire, parts, withObjects, err := appendBundle(nil, b, listing)
	if err != nil {
		return nil, objectParts{}, false, err
	}
	out := &api.Bundle{}
	if err := proto.Unmarshal(wire, out); err != nil {
		return nil, objectParts{}, false, fmt.Errorf("bundle %q: decode its message: %w", b.Bundle, err)
	}
	return out, parts, withObjects, nil
}

// The numbers of the fields of operator-registry's api.Bundle that
// appendBundle encodes, and of the messages it holds, whose fields are
// all strings numbered from 1 (appendStrings): Property, Dependency
// {type, value}, GroupVersionKind {group, version, kind}, Deprecation
// {message}. TestBundleFieldNumbers checks them against api.Bundle's
// descriptor.
const (
	fieldCsvName      protowire.Number = 1
	fieldPackageName  protowire.Number = 2
	fieldChannelName  protowire.Number = 3
	fieldCsvJSON      protowire.Number = 4
	fieldObject       protowire.Number = 5
	fieldBundlePath   protowire.Number = 6
	fieldProvidedApis protowire.Number = 7
	fieldRequiredApis protowire.Number = 8
	fieldVersion      protowire.Number = 9
	fieldSkipRange    protowire.Number = 10
	fieldDependencies protowire.Number = 11
	fieldProperties   protowire.Number = 12
	fieldReplaces     protowire.Number = 13
	fieldSkips        protowire.Number = 14
	fieldDeprecation  protowire.Number = 15
)

// appendBundle appends to dst a bundle as a channel lists it, all but its
// objects and CSV, in protobuf's wire encoding of an api.Bundle, and
// returns what they are made from, and whether the answer has them.
// listing makes it as ListBundles sends it: with the entry's replaces and
// skips, and without CSV and objects when the bundle has an image (the
// registry leaves them to the image then); otherwise as the Get methods
// answer, with them and without the edges. It encodes the message rather
// than build an api.Bundle: ListBundles sends one per channel entry of the
// catalog, and making each message's structs and strings and marshalling
// them by reflection was half of a stream's cost; here the values are
// copied from the blob the bundle was read from. Fields are in the
// message's order but for the properties and what they give (version,
// APIs, dependencies), which come in the properties' order; a decoder
// reads either the same.
func appendBundle(dst []byte, b query.ChannelBundle, listing bool) ([]byte, objectParts, bool, error) {
	dst = appendString(dst, fieldCsvName, b.Bundle)
	dst = appendString(dst, fieldPackageName, b.Package)
	dst = appendString(dst, fieldChannelName, b.Channel)
	dst = appendString(dst, fieldBundlePath, b.Image)
	dst = appendString(dst, fieldSkipRange, b.SkipRange)
	var (
		packages int
		parts    objectParts
	)
	for _, p := range b.Properties {
		// Values are decoded as operator-registry's property.Parse decodes
		// them, but only the types the answer needs: the CSV metadata, the
		// largest, only when no object is a CSV (objectsAndCSV).
		switch p.Type {
		case property.TypePackage:
			version, err := packageVersion(p.Value)
			if err != nil {
				return nil, objectParts{}, false, fmt.Errorf("bundle %q: parse olm.package: %w", b.Bundle, err)
			}
			if packages++; packages == 1 && len(version) > 0 {
				dst = protowire.AppendTag(dst, fieldVersion, protowire.BytesType)
				dst = protowire.AppendBytes(dst, version)
			}
		case property.TypeGVK:
			group, version, kind, err := gvkOf(p.Value)
			if err != nil {
				return nil, objectParts{}, false, fmt.Errorf("bundle %q: parse olm.gvk: %w", b.Bundle, err)
			}
			dst = appendStrings(dst, fieldProvidedApis, group, version, kind)
		case property.TypeGVKRequired:
			group, version, kind, err := gvkOf(p.Value)
			if err != nil {
				return nil, objectParts{}, false, fmt.Errorf("bundle %q: parse olm.gvk.required: %w", b.Bundle, err)
			}
			dst = appendStrings(dst, fieldRequiredApis, group, version, kind)
			dst = appendStrings(dst, fieldDependencies, []byte(property.TypeGVK), normalizedBytes(p))
		case property.TypePackageRequired:
			var req property.PackageRequired
			if err := json.Unmarshal(p.Value, &req); err != nil {
				return nil, objectParts{}, false, fmt.Errorf("bundle %q: parse olm.package.required: %w", b.Bundle, err)
			}
			dep := property.MustBuildPackage(req.PackageName, req.VersionRange)
			dst = appendStrings(dst, fieldDependencies, []byte(dep.Type), dep.Value)
		case typeBundleObject:
			parts.objects = append(parts.objects, p.Value)
		case typeCSVMetadata:
			parts.metadata = append(parts.metadata, p.Value)
		}
		if p.Type != typeBundleObject && p.Type != typeCSVMetadata {
			// Left out of properties: clients copy properties into a CSV
			// annotation, and these would double its size.
			dst = appendStrings(dst, fieldProperties, []byte(p.Type), normalizedBytes(p))
		}
	}
	if packages != 1 {
		return nil, objectParts{}, false, fmt.Errorf("bundle %q: want exactly one olm.package property, found %d", b.Bundle, packages)
	}
	if len(parts.metadata) > 1 {
		return nil, objectParts{}, false, fmt.Errorf("bundle %q: want at most one olm.csv.metadata property, found %d", b.Bundle, len(parts.metadata))
	}
	if b.Deprecation != "" {
		dst = appendStrings(dst, fieldDeprecation, []byte(b.Deprecation))
	}
	if listing {
		dst = appendString(dst, fieldReplaces, b.Replaces)
		for _, skip := range b.Skips {
			// A repeated field's elements are encoded even when empty.
			dst = protowire.AppendTag(dst, fieldSkips, protowire.BytesType)
			dst = protowire.AppendString(dst, skip)
		}
		if b.Image != "" {
			return dst, parts, false, nil
		}
	}
	return dst, parts, true, nil
}

// appendObjects appends a bundle's objects and CSV to its message
// (appendBundle).
func appendObjects(dst []byte, objects []string, csv string) []byte {
	dst = appendString(dst, fieldCsvJSON, csv)
	for _, o := range objects {
		dst = protowire.AppendTag(dst, fieldObject, protowire.BytesType)
		dst = protowire.AppendString(dst, o)
	}
	return dst
}

// appendString appends field num holding s, unless s is empty: proto3
// leaves a field at its default out.
func appendString(dst []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, s)
}

// appendStrings appends field num holding a message whose fields 1, 2, ...
// are the strings given (the empty ones left out). The message is encoded
// even when all are empty, as a repeated field's element or a message set
// is.
func appendStrings(dst []byte, num protowire.Number, fields ...[]byte) []byte {
	size := 0
	for i, f := range fields {
		if len(f) > 0 {
			size += protowire.SizeTag(protowire.Number(i+1)) + protowire.SizeBytes(len(f))
		}
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(size))
	for i, f := range fields {
		if len(f) > 0 {
			dst = protowire.AppendTag(dst, protowire.Number(i+1), protowire.BytesType)
			dst = protowire.AppendBytes(dst, f)
		}
	}
	return dst
}

// normalizedBytes is p's value in the registry's standard encoding
// (compact, HTML left unescaped), or as it is when it does not encode. The
// index keeps values as the catalog's blobs were re-encoded, compact
// already: those are taken as they are, without encoding them again; most
// have no white space byte at all, which a search finds faster than
// compact.
func normalizedBytes(p query.Property) []byte {
	if len(p.Value) > 0 && noSpace(p.Value) || compact(p.Value) {
		return p.Value
	}
	if n, err := property.Build(&property.Property{Type: p.Type, Value: p.Value}); err == nil {
		return n.Value
	}
	return p.Value
}

// The keys of an olm.package value and of an olm.gvk or olm.gvk.required
// value, in the order flatStrings fills their fields.
var (
	packageKeys = []string{"packageName", "version", "release"}
	gvkKeys     = []string{"group", "kind", "version"}
)

// packageVersion is the version of an olm.package value, decoded as
// encoding/json decodes it into a property.Package, errors included: read
// by flatStrings when it can, by encoding/json otherwise. ListBundles
// decodes several such values per bundle it sends, and encoding/json's
// reflection was half of making a message.
func packageVersion(j []byte) ([]byte, error) {
	var f [3][]byte
	if flatStrings(j, packageKeys, f[:]) {
		return f[1], nil
	}
	var v property.Package
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, err
	}
	return []byte(v.Version), nil
}

// gvkOf is the group, version and kind of an olm.gvk or olm.gvk.required
// value (their fields are the same), decoded as packageVersion decodes.
func gvkOf(j []byte) (group, version, kind []byte, err error) {
	var f [3][]byte
	if flatStrings(j, gvkKeys, f[:]) {
		return f[0], f[2], f[1], nil
	}
	var g property.GVK
	if err := json.Unmarshal(j, &g); err != nil {
		return nil, nil, nil, err
	}
	return []byte(g.Group), []byte(g.Version), []byte(g.Kind), nil
}

// flatStrings reads the shape almost every olm.package and olm.gvk value
// has in the index (an object of strings without escapes, compact),
// setting fields[i] to the value of keys[i] (a slice of j) and ignoring
// other keys, and reports whether j had that shape: it declines another
// value type, an escape, a key encoding/json would match ignoring case and
// invalid UTF-8, which its callers hand to encoding/json.
func flatStrings(j []byte, keys []string, fields [][]byte) bool {
	if len(j) < 2 || j[0] != '{' || j[len(j)-1] != '}' {
		return false
	}
	i := 1
	if j[i] == '}' {
		return i == len(j)-1
	}
	str := func() ([]byte, bool) {
		if i >= len(j) || j[i] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(j[i+1:], '"')
		if end < 0 {
			return nil, false
		}
		s := j[i+1 : i+1+end]
		i += end + 2
		for _, c := range s {
			if c == '\\' || c < 0x20 {
				return nil, false
			}
		}
		return s, utf8.Valid(s)
	}
	for {
		key, ok := str()
		if !ok || i >= len(j) || j[i] != ':' {
			return false
		}
		i++
		value, ok := str()
		if !ok || i >= len(j) {
			return false
		}
		for k, name := range keys {
			if string(key) == name {
				fields[k] = value
				break
			}
			if bytes.EqualFold(key, []byte(name)) {
				return false
			}
		}
		switch j[i] {
		case ',':
			i++
		case '}':
			return i == len(j)-1
		default:
			return false
		}
	}
}

// noSpace says whether j has no byte of JSON's white space, by searches,
// which are faster than a loop through a value.
func noSpace(j []byte) bool {
	return bytes.IndexByte(j, ' ') < 0 && bytes.IndexByte(j, '\n') < 0 && bytes.IndexByte(j, '\t') < 0 && bytes.IndexByte(j, '\r') < 0
}

// compact says whether the JSON text j has no white space outside its
// strings, which is all that compacting it would remove (with HTML left
// unescaped).
func compact(j []byte) bool {
	inString, escaped := false, false
	for _, c := range j {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return !inString && len(j) > 0
}

// objectsAndCSV returns a bundle's objects, each olm.bundle.object as
// JSON (as given when it is JSON already), and its CSV: the first object
// of kind ClusterServiceVersion, else one made from its olm.csv.metadata
// (then also its only object when it has none), else none. pkg is asked
// only when the CSV is made from olm.csv.metadata.
func objectsAndCSV(b query.ChannelBundle, parts objectParts, pkg func() (packageFacts, error)) ([]string, string, error) {
	var objects []string
	csv := ""
	for i, v := range parts.objects {
		var o property.BundleObject
		if err := json.Unmarshal(v, &o); err != nil {
			return nil, "", fmt.Errorf("parse olm.bundle.object %d: %w", i, err)
		}
		j, err := yaml.ToJSON(o.Data)
		if err != nil {
			return nil, "", fmt.Errorf("convert olm.bundle.object %d to JSON: %w", i, err)
		}
		objects = append(objects, string(j))
		if csv == "" && isCSV(j) {
			csv = string(j)
		}
	}
	if csv != "" || len(parts.metadata) != 1 {
		return objects, csv, nil
	}
	var m property.CSVMetadata
	if err := json.Unmarshal(parts.metadata[0], &m); err != nil {
		return nil, "", fmt.Errorf("parse olm.csv.metadata: %w", err)
	}
	facts, err := pkg()
	if err != nil {
		return nil, "", err
	}
	csv, err = csvFromMetadata(b, m, facts)
	if err != nil {
		return nil, "", err
	}
	if len(objects) == 0 {
		objects = []string{csv}
	}
	return objects, csv, nil
}

// isCSV says whether the JSON object j is a ClusterServiceVersion.
func isCSV(j []byte) bool {
	var obj struct {
		Kind any `json:"kind"`
	}
	if err := json.Unmarshal(j, &obj); err != nil {
		return false
	}
	kind, ok := obj.Kind.(string)
	return ok && kind == csvKind
}

// csvFromMetadata makes the CSV a bundle without one is served with: its
// olm.csv.metadata as a CSV's metadata and spec, named after the bundle,
// with its version and related images, the package's icon, and the
// package's description when the metadata has none; its install strategy
// names a deployment only, which clients that read strategies expect.
func csvFromMetadata(b query.ChannelBundle, m property.CSVMetadata, pkg packageFacts) (string, error) {
	v, err := semver.Parse(bundleVersion(b))
	if err != nil {
		return "", fmt.Errorf("version of the CSV: %w", err)
	}
	csv := v1alpha1.ClusterServiceVersion{
		TypeMeta:   metav1.TypeMeta{Kind: csvKind, APIVersion: v1alpha1.ClusterServiceVersionAPIVersion},
		ObjectMeta: metav1.ObjectMeta{Name: b.Bundle, Annotations: m.Annotations, Labels: m.Labels},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			APIServiceDefinitions:     m.APIServiceDefinitions,
			CustomResourceDefinitions: m.CustomResourceDefinitions,
			Description:               m.Description,
			DisplayName:               m.DisplayName,
			InstallModes:              m.InstallModes,
			Keywords:                  m.Keywords,
			Links:                     m.Links,
			Maintainers:               m.Maintainers,
			Maturity:                  m.Maturity,
			MinKubeVersion:            m.MinKubeVersion,
			NativeAPIs:                m.NativeAPIs,
			Provider:                  m.Provider,
			InstallStrategy:           v1alpha1.NamedInstallStrategy{StrategyName: "deployment"},
			Version:                   version.OperatorVersion{Version: v},
		},
	}
	if pkg.HasIcon {
		csv.Spec.Icon = []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(pkg.Icon), MediaType: pkg.MediaType}}
	}
	for _, ri := range pkg.RelatedImages {
		csv.Spec.RelatedImages = append(csv.Spec.RelatedImages, v1alpha1.RelatedImage{Name: ri.Name, Image: ri.Image})
	}
	if csv.Spec.Description == "" {
		csv.Spec.Description = pkg.Description
	}
	j, err := json.Marshal(csv)
	if err != nil {
		return "", fmt.Errorf("encode the CSV: %w", err)
	}
	return string(j), nil
}

// bundleVersion is the version of the bundle's olm.package property.
func bundleVersion(b query.ChannelBundle) string {
	for _, p := range b.Properties {
		if p.Type != property.TypePackage {
			continue
		}
		var v property.Package
		if json.Unmarshal(p.Value, &v) == nil {
			return v.Version
		}
	}
	return b.Version
}

// replacingEntries are the entries the registry answers for the entries
// that replace or skip bundle: one for replacing it and one per skip of
// it, each carrying the entry's replaces, as the registry answers them.
func replacingEntries(entries []query.EntryRef, bundle string) []*api.ChannelEntry {
	var out []*api.ChannelEntry
	for _, e := range entries {
		if e.Replaces == bundle {
			out = append(out, channelEntry(e, e.Replaces))
		}
		for _, s := range e.Skips {
			if s == bundle && s != e.Replaces {
				out = append(out, channelEntry(e, e.Replaces))
			}
		}
	}
	return out
}

// providingEntries are the entries the registry answers for an entry of a
// bundle that provides an API: the entry with its replaces, and one per
// skip that is not its replaces and that keep accepts.
func providingEntries(e query.EntryRef, keep func(skip string) (bool, error)) ([]*api.ChannelEntry, error) {
	out := []*api.ChannelEntry{channelEntry(e, e.Replaces)}
	for _, s := range e.Skips {
		if s == e.Replaces {
			continue
		}
		ok, err := keep(s)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, channelEntry(e, s))
		}
	}
	return out, nil
}

func channelEntry(e query.EntryRef, replaces string) *api.ChannelEntry {
	return &api.ChannelEntry{PackageName: e.Package, ChannelName: e.Channel, BundleName: e.Bundle, Replaces: replaces}
}
