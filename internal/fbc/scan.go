package fbc

import "bytes"

// The JSON scanning primitives that the stream splitter, the canonical
// encoder and the bundle scanner share. They recognise JSON's lexical
// structure (space, strings, brackets, numbers) and no more: each caller
// either checks the values it uses or knows them to be valid.

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the position of the first byte at or after pos that is
// not JSON whitespace (len(buf) if there is none).
func skipSpace(buf []byte, pos int) int {
	for pos < len(buf) && isSpace(buf[pos]) {
		pos++
	}
	return pos
}

// skipString returns the position just past the JSON string that starts
// at buf[pos], and whether there is one. Escapes are stepped over, not
// checked.
func skipString(buf []byte, pos int) (int, bool) {
	if pos >= len(buf) || buf[pos] != '"' {
		return pos, false
	}
	var v valueScan
	n, done := v.scan(buf[pos:])
	if !done {
		return pos, false
	}
	return pos + n, true
}

// skipValue returns the position just past the JSON value that starts at
// buf[pos], and whether there is one, by its brackets and strings alone. A
// number, true, false or null ends at a comma, a closing bracket or space.
func skipValue(buf []byte, pos int) (int, bool) {
	if pos >= len(buf) {
		return pos, false
	}
	switch buf[pos] {
	case '"', '{', '[':
		var v valueScan
		n, done := v.scan(buf[pos:])
		if !done {
			return pos, false
		}
		return pos + n, true
	case 0, ',', ':', '}', ']':
		return pos, false
	default:
		i := pos
		for i < len(buf) && !isSpace(buf[i]) && buf[i] != ',' && buf[i] != '}' && buf[i] != ']' {
			i++
		}
		return i, i > pos
	}
}

// valueScan follows one JSON string, object or array, which may arrive in
// pieces, by its brackets and strings: it is how the stream splitter finds
// where a blob ends without holding more than the blob.
type valueScan struct {
	depth int
	// inString says the scan is inside a string; escape, just after a
	// backslash in it.
	inString, escape bool
}

// scan reads on through buf, the next bytes of the value, and returns how
// many of them belong to the value and whether it ended within them.
func (v *valueScan) scan(buf []byte) (n int, done bool) {
	i := 0
	// Where the next quote at or after i is (len(buf) for none), and the
	// next backslash before it (the quote's place for none): two
	// IndexByte searches find them several times faster than one
	// IndexAny for either, which goes a byte at a time through strings
	// of megabytes (bundle objects). Each is kept until i passes it, and
	// a backslash is looked for only up to the quote, so that neither a
	// string of many escapes nor a value of many strings is searched
	// through more than once.
	quote, backslash := -1, -1
	for i < len(buf) {
		if v.inString {
			if v.escape {
				v.escape = false
				i++
				continue
			}
			// A short run of a string (a key, most values, the text
			// between two escapes) is stepped through byte by byte:
			// IndexByte costs more to start than a few comparisons.
			for end := min(i+shortRun, len(buf)); i < end && buf[i] != '"' && buf[i] != '\\'; i++ {
			}
			if i == len(buf) {
				return len(buf), false
			}
			if buf[i] != '"' && buf[i] != '\\' {
				if quote < i {
					quote = indexFrom(buf, i, '"')
				}
				if backslash < i {
					backslash = indexFrom(buf[:quote], i, '\\')
				}
				if i = min(quote, backslash); i == len(buf) {
					return len(buf), false
				}
			}
			if buf[i] == '\\' {
				v.escape = true
			} else {
				v.inString = false
			}
			i++
			if !v.inString && v.depth == 0 {
				return i, true // a string alone
			}
			continue
		}
		switch buf[i] {
		case '"':
			v.inString = true
		case '{', '[':
			v.depth++
		case '}', ']':
			v.depth--
		}
		i++
		if v.depth <= 0 && !v.inString {
			return i, true
		}
	}
	return i, false
}

// shortRun is how far valueScan looks for the end of a string, or an
// escape in it, a byte at a time before it searches with IndexByte.
const shortRun = 16

// indexFrom returns the position of the first c in buf at or after i,
// or len(buf).
func indexFrom(buf []byte, i int, c byte) int {
	if j := bytes.IndexByte(buf[i:], c); j >= 0 {
		return i + j
	}
	return len(buf)
}

// validNumber checks JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(tok []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	if i < len(tok) && tok[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(tok)
}
