package fbc

import (
	"fmt"
	"regexp"
	"strings"
)

// decodeError is an error of encoding/json or sigs.k8s.io/yaml told in a
// catalog author's words: the Go types the decoders name (map[string]
// interface {}, Package.defaultChannel of type string) mean nothing to
// someone who wrote YAML. The decoder's own error stays in the chain.
type decodeError struct {
	msg string
	err error
}

func (e *decodeError) Error() string { return e.msg }
func (e *decodeError) Unwrap() error { return e.err }

var (
	// The wrappings sigs.k8s.io/yaml and operator-registry's Meta add.
	decodePrefixes = regexp.MustCompile(`^(error unmarshaling JSON: )?(while decoding JSON: )?`)
	// " at offset 16 (indicated by <==)" and the quoted blob after it:
	// the blob's position says where it is.
	decodeOffset = regexp.MustCompile(`(?s) at offset \d+ \(indicated by <==\).*$`)
	notAnObject  = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go value of type map\[string\]interface \{\}`)
	wrongField   = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go struct field \w+\.([\w.]+) of type (\S+)`)
	wrongValue   = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go value of type (\S+)`)
)

// InAuthorsWords rewrites a decoder's error about a blob so that it names
// JSON and YAML things (an object, a list, a field) instead of Go types.
func InAuthorsWords(err error) error {
	msg := decodePrefixes.ReplaceAllString(err.Error(), "")
	msg = decodeOffset.ReplaceAllString(msg, "")
	msg = notAnObject.ReplaceAllStringFunc(msg, func(s string) string {
		m := notAnObject.FindStringSubmatch(s)
		return fmt.Sprintf("a blob must be an object of fields (a JSON object or a YAML mapping), not %s", jsonKind(m[1]))
	})
	msg = wrongField.ReplaceAllStringFunc(msg, func(s string) string {
		m := wrongField.FindStringSubmatch(s)
		return fmt.Sprintf("field %q is %s, want %s", m[2], jsonKind(m[1]), goKind(m[3]))
	})
	msg = wrongValue.ReplaceAllStringFunc(msg, func(s string) string {
		m := wrongValue.FindStringSubmatch(s)
		return fmt.Sprintf("the value is %s, want %s", jsonKind(m[1]), goKind(m[2]))
	})
	return &decodeError{msg: msg, err: err}
}

// jsonKind names a kind of JSON value as encoding/json's errors give it.
func jsonKind(kind string) string {
	switch kind {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	default:
		return "a " + kind
	}
}

// goKind names what a Go type takes, in JSON words.
func goKind(typ string) string {
	switch {
	case strings.HasPrefix(typ, "[]byte"), strings.HasPrefix(typ, "json.RawMessage"):
		return "any value"
	case strings.HasPrefix(typ, "[]"):
		return "a list"
	case strings.HasPrefix(typ, "map["), strings.Contains(typ, "."):
		return "an object"
	case typ == "string":
		return "a string"
	case typ == "bool":
		return "true or false"
	case strings.HasPrefix(typ, "int"), strings.HasPrefix(typ, "uint"), strings.HasPrefix(typ, "float"):
		return "a number"
	default:
		return "a " + typ
	}
}
