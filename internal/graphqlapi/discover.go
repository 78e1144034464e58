package graphqlapi

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The discovery below follows catalogd's (operator-controller's
// internal/catalogd/graphql) rules, since a client written against it must
// see the same fields with the same types: every blob of a schema is
// decoded, each top-level key becomes a field (first occurrence decides its
// type), arrays of objects become lists of a nested object type whose
// fields are the keys of up to maxSampled elements of each such array, and
// everything else is a scalar or a list of scalars.

// maxSampled is how many elements of an array discovery looks at.
const maxSampled = 10

// scalar is the GraphQL scalar a JSON value is typed as.
type scalar int

const (
	scalarString scalar = iota
	scalarInt
	scalarFloat
	scalarBoolean
)

// kind is the JSON kind of a decoded value, as encoding/json decodes into
// an interface: object, array, string, number, boolean (null has none).
type kind int

const (
	kindNone kind = iota
	kindString
	kindNumber
	kindBool
	kindObject
	kindArray
)

func kindOf(v any) kind {
	switch v.(type) {
	case string:
		return kindString
	case float64:
		return kindNumber
	case bool:
		return kindBool
	case map[string]any:
		return kindObject
	case []any:
		return kindArray
	}
	return kindNone
}

// scalarOf types a value of kind k, whose sample is sample: a number is an
// Int when the sample is integral, objects and arrays are JSON text.
func scalarOf(k kind, sample any) scalar {
	switch k {
	case kindBool:
		return scalarBoolean
	case kindNumber:
		if f, ok := sample.(float64); ok && f == float64(int64(f)) {
			return scalarInt
		}
		return scalarFloat
	}
	return scalarString
}

// leaf is a field typed as a scalar or a list of scalars.
type leaf struct {
	scalar scalar
	list   bool
}

// field is a top-level field of a schema's objects.
type field struct {
	leaf
	// keys are the JSON keys that map to the field's name, sorted.
	keys []string
	// nested are the fields of the elements of an array of objects, by
	// GraphQL name; a field with any is a list of a nested object type.
	nested map[string]leaf
}

// shape is what discovery found of one schema.
type shape struct {
	objects int
	fields  map[string]*field
}

// discovery gathers the shapes of a catalog's schemas, blob by blob.
type discovery struct {
	schemas map[string]*shape
	names   nameCache
}

func newDiscovery() *discovery {
	return &discovery{schemas: map[string]*shape{}, names: nameCache{}}
}

// add takes in one blob of schema. A blob that is not a JSON object, or a
// schema that is empty, counts for nothing, as in catalogd.
func (d *discovery) add(schema string, blob []byte) {
	if schema == "" {
		return
	}
	s := d.schemas[schema]
	if s == nil {
		s = &shape{fields: map[string]*field{}}
		d.schemas[schema] = s
	}
	var obj map[string]any
	if err := json.Unmarshal(blob, &obj); err != nil {
		return
	}
	s.objects++
	// Keys in sorted order, so that of two keys mapping to one name in the
	// same object the same one decides, every time.
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		name := d.names.field(key)
		l, nested := d.analyse(obj[key])
		f := s.fields[name]
		if f == nil {
			s.fields[name] = &field{leaf: l, keys: []string{key}, nested: nested}
			continue
		}
		if i := sort.SearchStrings(f.keys, key); i == len(f.keys) || f.keys[i] != key {
			f.keys = slices.Insert(f.keys, i, key)
		}
		if nested == nil {
			continue
		}
		if f.nested == nil {
			f.nested = nested
			continue
		}
		for n, nl := range nested {
			if _, ok := f.nested[n]; !ok {
				f.nested[n] = nl
			}
		}
	}
}

// analyse types a top-level value and, for an array with objects among
// its first elements, gathers their fields.
func (d *discovery) analyse(v any) (leaf, map[string]leaf) {
	arr, ok := v.([]any)
	if !ok {
		return leaf{scalar: scalarOf(kindOf(v), v)}, nil
	}
	var (
		first  kind
		sample any
		mixed  bool
		nested map[string]leaf
	)
	for _, e := range arr[:min(len(arr), maxSampled)] {
		if e == nil {
			continue
		}
		k := kindOf(e)
		if sample == nil {
			first, sample = k, e
		} else if k != first {
			mixed = true
		}
		obj, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if nested == nil {
			nested = map[string]leaf{}
		}
		found := d.nestedFields(obj)
		for n, nl := range found {
			if _, ok := nested[n]; !ok {
				nested[n] = nl
			}
		}
	}
	if sample == nil || (mixed && nested == nil) {
		return leaf{scalar: scalarString, list: true}, nil
	}
	return leaf{scalar: scalarOf(first, sample), list: true}, nested
}

// nestedFields types the fields of one element of an array of objects:
// an array by its first element only, as catalogd does.
func (d *discovery) nestedFields(obj map[string]any) map[string]leaf {
	out := make(map[string]leaf, len(obj))
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := obj[key]
		l := leaf{scalar: scalarOf(kindOf(v), v)}
		if arr, ok := v.([]any); ok {
			l = leaf{scalar: scalarString, list: true}
			if len(arr) > 0 && arr[0] != nil {
				l.scalar = scalarOf(kindOf(arr[0]), arr[0])
			}
		}
		if _, ok := out[d.names.field(key)]; !ok {
			out[d.names.field(key)] = l
		}
	}
	return out
}

// nameCache remembers the GraphQL field name of each JSON key seen.
type nameCache map[string]string

func (c nameCache) field(key string) string {
	if n, ok := c[key]; ok {
		return n
	}
	n := fieldName(key)
	c[key] = n
	return n
}

// fieldName is the GraphQL field name of a JSON key: every run of
// characters other than ASCII letters, digits and '_' becomes one
// separator, and the words are joined in camel case (a first word in
// capitals is lowered whole, later words are capitalised); a name that
// would not start with a letter gets "field_" before it. So "packageName"
// stays, "skip-range" becomes "skipRange" and "3d" becomes "field_3d".
func fieldName(key string) string {
	if key == "" {
		return "value"
	}
	words := strings.FieldsFunc(key, func(r rune) bool { return !isASCIIAlnum(r) })
	var b strings.Builder
	for i, w := range words {
		switch {
		case i > 0:
			b.WriteString(strings.ToUpper(w[:1]))
			b.WriteString(strings.ToLower(w[1:]))
		case strings.ToUpper(w) == w:
			b.WriteString(strings.ToLower(w))
		default:
			b.WriteString(strings.ToLower(w[:1]))
			b.WriteString(w[1:])
		}
	}
	out := b.String()
	if r, _ := utf8.DecodeRuneInString(out); out == "" || r >= utf8.RuneSelf || !unicode.IsLetter(r) {
		return "field_" + out
	}
	return out
}

func isASCIIAlnum(r rune) bool {
	return r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// typeName is the GraphQL type name of a schema (or of a schema and one
// of its fields, joined): leading digits dropped, and each word between
// characters other than ASCII letters and digits capitalised, the rest of
// it lowered; "Unknown" when nothing is left. "olm.bundle" is "OlmBundle".
func typeName(s string) string {
	s = strings.TrimLeft(s, "0123456789")
	var b strings.Builder
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !isASCIIAlnum(r) }) {
		b.WriteString(strings.ToUpper(w[:1]))
		b.WriteString(strings.ToLower(w[1:]))
	}
	if b.Len() == 0 {
		return "Unknown"
	}
	return b.String()
}

// listName is the query field of a schema's objects: its ASCII letters
// and digits, lowered, and an "s": "olm.bundle" is "olmbundles".
func listName(schema string) string {
	var b strings.Builder
	for _, r := range schema {
		if isASCIIAlnum(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	b.WriteString("s")
	return b.String()
}
