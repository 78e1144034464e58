package graphqlapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf16"
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
	dst, end, ok := appendValue(dst, raw, 0)
	return dst, ok && end == len(raw)
}

// appendValue appends, as appendCanonical, the value that starts at b[i],
// reading it once: an object whose keys come sorted and unrepeated (as
// most do) is written as it is read; it returns where the value ends.
func appendValue(dst, b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) {
		return dst, i, false
	}
	switch b[i] {
	case '{':
		mark := len(dst)
		j, empty, ok := openContainer(b[i:], '{', '}')
		if !ok {
			return dst, i, false
		}
		j += i
		dst = append(dst, '{')
		var prev []byte
		for first := true; !empty; first = false {
			if j >= len(b) || b[j] != '"' {
				return dst, i, false
			}
			kend := stringEnd(b, j)
			if kend < 0 {
				return dst, i, false
			}
			key, ok := jsonString(b[j:kend])
			if !ok {
				return dst, i, false
			}
			if !first && bytes.Compare(prev, key) >= 0 {
				// Out of order or repeated: sort the members.
				end := valueEnd(b, i)
				dst, ok = appendSortedObject(dst[:mark], b[i:max(end, i)])
				return dst, end, ok && end >= 0
			}
			prev = key
			if !first {
				dst = append(dst, ',')
			}
			dst = appendEscaped(dst, key)
			dst = append(dst, ':')
			j = skipSpace(b, kend)
			if j >= len(b) || b[j] != ':' {
				return dst, i, false
			}
			if dst, j, ok = appendValue(dst, b, skipSpace(b, j+1)); !ok {
				return dst, i, false
			}
			if j, empty, ok = after(b, j, '}'); !ok {
				return dst, i, false
			}
		}
		return append(dst, '}'), j + 1, true
	case '[':
		j, empty, ok := openContainer(b[i:], '[', ']')
		if !ok {
			return dst, i, false
		}
		j += i
		dst = append(dst, '[')
		for first := true; !empty; first = false {
			if !first {
				dst = append(dst, ',')
			}
			if dst, j, ok = appendValue(dst, b, j); !ok {
				return dst, i, false
			}
			if j, empty, ok = after(b, j, ']'); !ok {
				return dst, i, false
			}
		}
		return append(dst, ']'), j + 1, true
	}
	end := valueEnd(b, i)
	if end < 0 {
		return dst, i, false
	}
	dst, ok := appendScalar(dst, b[i:end])
	return dst, end, ok
}

// appendSortedObject appends raw, a JSON object, its members sorted by
// key, the last of equal keys winning, as when decoded into a map.
func appendSortedObject(dst, raw []byte) ([]byte, bool) {
	var ms []member
	if !members(raw, func(k, v []byte) { ms = append(ms, member{key: k, raw: v}) }) {
		return dst, false
	}
	// Stable, so that of equal keys the last one read comes last.
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
}

// appendScalar appends raw, a JSON string, number, boolean or null, as
// appendCanonical.
func appendScalar(dst, raw []byte) ([]byte, bool) {
	switch raw[0] {
	case '"':
		return appendString(dst, raw)
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

// appendEscaped appends s, a decoded key, quoted as encoding/json quotes
// a string.
func appendEscaped(dst, s []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		var n int
		dst, n = appendRaw(dst, s[i:])
		i += n
	}
	return append(dst, '"')
}

// appendString appends raw, a JSON string, as encoding/json writes the
// string it decodes from it, unescaping and escaping again in one pass.
func appendString(dst, raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst, false
	}
	s := raw[1 : len(raw)-1]
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			var n int
			dst, n = appendRaw(dst, s[i:])
			i += n
			continue
		}
		if i+1 >= len(s) {
			return dst, false
		}
		var r rune
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			r = rune(e)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			var ok bool
			if r, ok = hex4(s[i+2:]); !ok {
				return dst, false
			}
			i += 4
			// A surrogate pair is one character; a lone surrogate is
			// U+FFFD, as encoding/json decodes them.
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+3 < len(s) && s[i+2] == '\\' && s[i+3] == 'u' {
					r2, ok = hex4(s[i+4:])
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
		default:
			return dst, false
		}
		dst = appendRune(dst, r)
		i += 2
	}
	return append(dst, '"'), true
}

// hex4 is the rune of the four hex digits b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendRaw appends the character s starts with, escaped as
// appendRune escapes it (a byte that is not UTF-8 as U+FFFD), with any
// characters after it that need no escaping; it returns how many bytes
// of s it took.
func appendRaw(dst, s []byte) ([]byte, int) {
	n := 0
	for n < len(s) && s[n] >= 0x20 && s[n] < utf8.RuneSelf && !escapedASCII(s[n]) {
		n++
	}
	if n > 0 {
		return append(dst, s[:n]...), n
	}
	if s[0] < utf8.RuneSelf {
		return appendRune(dst, rune(s[0])), 1
	}
	r, size := utf8.DecodeRune(s)
	if r == utf8.RuneError && size == 1 {
		// Decoded as U+FFFD, which is written as itself.
		return utf8.AppendRune(dst, utf8.RuneError), 1
	}
	if r == '\u2028' || r == '\u2029' {
		return appendRune(dst, r), size
	}
	return append(dst, s[:size]...), size
}

func escapedASCII(c byte) bool {
	return c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
}

// appendRune appends r as encoding/json writes it in a string: ", \ and
// the control characters escaped (\b \f \n \r \t by name, the others as
// \u00XX), <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029
// as \u2028 and \u2029, anything else as its UTF-8.
func appendRune(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"' || r == '\\':
		return append(dst, '\\', byte(r))
	case r == '\b':
		return append(dst, '\\', 'b')
	case r == '\f':
		return append(dst, '\\', 'f')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r < 0x20 || r == '<' || r == '>' || r == '&':
		return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
	case r == '\u2028' || r == '\u2029':
		return append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
	}
	return utf8.AppendRune(dst, r)
}

// elements calls fn with each element of raw, a JSON array, until fn
// returns false; it reports whether it read the whole array.
func elements(raw []byte, fn func(elem []byte) bool) bool {
	i, empty, ok := openContainer(raw, '[', ']')
	if !ok || empty {
		return ok
	}
	for i < len(raw) {
		end := valueEnd(raw, i)
		if end < 0 || !fn(raw[i:end]) {
			return false
		}
		next, done, ok := after(raw, end, ']')
		if done || !ok {
			return done
		}
		i = next
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
