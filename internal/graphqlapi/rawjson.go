package graphqlapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// catalogd answers a value of a scalar field that is an object or an
// array as encoding/json marshals it once decoded into Go values: keys
// sorted and deduplicated (the last one wins), no spaces, strings
// escaped for HTML, numbers as float64s. Decoding a value into maps to
// marshal it again cost most of a nested query's time, so the functions
// below write those same bytes straight from the raw JSON the index
// holds; whatever they are not sure to write as encoding/json would
// (a number a float64 cannot hold, which encoding/json refuses to decode)
// they report, and the caller takes encoding/json's way.

// appendCanonical appends to dst what json.Marshal answers for the value
// json.Unmarshal decodes from raw, a JSON value as the index holds it; it
// reports false when it cannot tell.
func appendCanonical(dst, raw []byte) ([]byte, bool) {
	if len(raw) == 0 {
		return dst, false
	}
	switch raw[0] {
	case '{':
		var ms []member
		if !members(raw, func(k, v []byte) { ms = append(ms, member{key: k, raw: v}) }) {
			return dst, false
		}
		// Stable, so that of equal keys the last one read comes last and
		// wins, as it wins when decoded into a map.
		slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		dst = append(dst, '{')
		first := true
		for i, m := range ms {
			if i+1 < len(ms) && bytes.Equal(ms[i+1].key, m.key) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendEscaped(dst, m.key)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendCanonical(dst, m.raw); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case '[':
		dst = append(dst, '[')
		first, ok := true, true
		read := elements(raw, func(e []byte) bool {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst, ok = appendCanonical(dst, e)
			return ok
		})
		return append(dst, ']'), read && ok
	case '"':
		s, ok := jsonString(raw)
		if !ok {
			return dst, false
		}
		return appendEscaped(dst, s), true
	case 't', 'f', 'n':
		return append(dst, raw...), true
	}
	if integral(raw) {
		return append(dst, raw...), true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return dst, false
	}
	b, err := json.Marshal(f)
	if err != nil {
		return dst, false
	}
	return append(dst, b...), true
}

// integral says whether raw, a JSON number, is an integer of at most 15
// digits: a float64 holds it exactly and encoding/json writes it back as
// it is (-0 too).
func integral(raw []byte) bool {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// jsonString is the content of raw, a JSON string, unescaped; when it
// has nothing to unescape, a slice of raw.
func jsonString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 {
		return nil, false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, false
	}
	return []byte(s), true
}

// appendEscaped appends s, valid UTF-8 but for bytes written as U+FFFD,
// quoted as encoding/json quotes a string: ", \ and the control
// characters escaped (\b \f \n \r \t by name, the others as \u00XX),
// <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029 as \u2028
// and \u2029.
func appendEscaped(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// elements calls fn with each element of raw, a JSON array, until fn
// returns false; it reports whether it read the whole array.
func elements(raw []byte, fn func(elem []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true
	}
	for i < len(raw) {
		end := valueEnd(raw, i)
		if end < 0 || !fn(raw[i:end]) {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}

// member is a member of a JSON object: its key, unescaped, and its raw
// value.
type member struct {
	key, raw []byte
}

// scalarValue is the Go value json.Unmarshal decodes from raw, a JSON
// string, number, boolean or null, as a field resolves it: a string, a
// float64, a bool or nil. It reports false for anything else or a number
// a float64 cannot hold.
func scalarValue(raw []byte) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	switch raw[0] {
	case '"':
		s, ok := jsonString(raw)
		return string(s), ok
	case 't':
		return true, true
	case 'f':
		return false, true
	case 'n':
		return nil, true
	case '{', '[':
		return nil, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}
