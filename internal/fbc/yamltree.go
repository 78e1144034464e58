package fbc

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// treeMeta makes of doc, what go.yaml.in/yaml/v2 decodes a YAML document
// into, the declcfg.Meta that operator-registry makes of the document, in
// one pass: sigs.k8s.io/yaml converts the tree for JSON (map keys made
// strings), encodes it with encoding/json, and Meta.UnmarshalJSON decodes
// that into maps and encodes it again. Going from the tree straight to the
// final encoding skips both encodings and the decoding between them, most
// of the time of reading a YAML catalog after the YAML parser's own.
//
// The encoding is the one canonicalMeta writes: keys sorted, strings as
// encoding/json writes them with HTML characters as they are, numbers as
// the float64s Meta.UnmarshalJSON decodes them to. It reports false for
// whatever that path would not give the same way for sure (a top-level
// value that is not a mapping, a map key sigs.k8s.io/yaml cannot convert,
// two keys that convert to the same string, a number JSON cannot hold, a
// string that is not UTF-8, nesting deeper than maxCanonicalDepth, a meta
// field that is not a string, a top-level key that is not ASCII or repeats
// another when folded); the caller then takes operator-registry's own path,
// which gives the answer or the error.
//
// sizeHint is the length of the document's text, about that of its
// encoding, which is written into a buffer of that size as long as it fits.
func treeMeta(doc any, sizeHint int) (*declcfg.Meta, bool) {
	top, ok := doc.(map[any]any)
	if !ok {
		return nil, false
	}
	e := treeEncoder{out: make([]byte, 0, sizeHint+1)}
	meta := &declcfg.Meta{}
	if !e.mapping(top, meta) {
		return nil, false
	}
	meta.Blob = append(e.out, '\n')
	return meta, true
}

type treeEncoder struct {
	out   []byte
	depth int
	// strings encodes the strings that need escaping.
	strings canonicalizer
}

// entry is a mapping's entry with its key as sigs.k8s.io/yaml converts it.
type entry struct {
	key   string
	value any
}

func (e *treeEncoder) value(v any) bool {
	switch v := v.(type) {
	case nil:
		e.out = append(e.out, "null"...)
	case bool:
		e.out = strconv.AppendBool(e.out, v)
	case string:
		if !utf8.ValidString(v) {
			return false
		}
		e.out = e.strings.appendString(e.out, v)
	case int:
		return e.integer(int64(v), float64(v))
	case int64:
		return e.integer(v, float64(v))
	case uint64:
		if v <= math.MaxInt64 {
			return e.integer(int64(v), float64(v))
		}
		return e.float(float64(v))
	case float64:
		return e.float(v)
	case []any:
		return e.sequence(v)
	case map[any]any:
		return e.mapping(v, nil)
	default:
		return false
	}
	return true
}

// integer writes n as encoding/json writes f, the float64 it becomes.
func (e *treeEncoder) integer(n int64, f float64) bool {
	if n > -1e15 && n < 1e15 {
		e.out = strconv.AppendInt(e.out, n, 10) // a float64 holds it exactly
		return true
	}
	return e.float(f)
}

func (e *treeEncoder) float(f float64) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	encoded, err := json.Marshal(f)
	if err != nil {
		return false
	}
	e.out = append(e.out, encoded...)
	return true
}

func (e *treeEncoder) sequence(s []any) bool {
	if e.depth++; e.depth > maxCanonicalDepth {
		return false
	}
	defer func() { e.depth-- }()
	e.out = append(e.out, '[')
	for i, v := range s {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		if !e.value(v) {
			return false
		}
	}
	e.out = append(e.out, ']')
	return true
}

// mapping writes m with its keys converted and sorted. For the top-level
// mapping, meta is filled in as Meta.UnmarshalJSON fills it.
func (e *treeEncoder) mapping(m map[any]any, meta *declcfg.Meta) bool {
	if e.depth++; e.depth > maxCanonicalDepth {
		return false
	}
	defer func() { e.depth-- }()
	entries := make([]entry, 0, len(m))
	for k, v := range m {
		key, ok := jsonKey(k)
		if !ok {
			return false
		}
		entries = append(entries, entry{key, v})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(entries); i++ {
		if entries[i].key == entries[i-1].key {
			return false // which one sigs.k8s.io/yaml keeps depends on map order
		}
	}
	if meta != nil && !treeMetaFields(entries, meta) {
		return false
	}
	e.out = append(e.out, '{')
	for i, en := range entries {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		if !utf8.ValidString(en.key) {
			return false
		}
		e.out = e.strings.appendString(e.out, en.key)
		e.out = append(e.out, ':')
		if !e.value(en.value) {
			return false
		}
	}
	e.out = append(e.out, '}')
	return true
}

// jsonKey converts a map key as sigs.k8s.io/yaml does for JSON, for the
// key types go.yaml.in/yaml/v2 gives.
func jsonKey(k any) (string, bool) {
	switch k := k.(type) {
	case string:
		return k, true
	case int:
		return strconv.Itoa(k), true
	case int64:
		return strconv.FormatInt(k, 10), true
	case bool:
		return strconv.FormatBool(k), true
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", true
		case "-Inf":
			return "-.inf", true
		case "NaN":
			return ".nan", true
		default:
			return s, true
		}
	}
	return "", false
}

// treeMetaFields sets schema, package and name from the top-level entries
// as metaFields does from a JSON object's members.
func treeMetaFields(entries []entry, meta *declcfg.Meta) bool {
	folded := make(map[string]bool, len(entries))
	for _, en := range entries {
		dst, ok := metaField(en.key, folded, meta)
		if !ok {
			return false
		}
		if dst == nil {
			continue
		}
		s, ok := en.value.(string)
		if !ok || !utf8.ValidString(s) {
			return false
		}
		*dst = s
	}
	return true
}
