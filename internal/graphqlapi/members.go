package graphqlapi

import "bytes"

// members splits blob, a JSON object, into its members' keys (unescaped)
// and raw values without decoding the values, calling fn for each; it
// reports false when blob is not an object it can read. The index holds only
// blobs that parsed as JSON when it was built, so this scan need not
// validate them again: it only finds where each value ends. Decoding a
// whole bundle to answer its name cost most of a query's time.
func members(blob []byte, fn func(key, raw []byte)) bool {
	i, empty, ok := openContainer(blob, '{', '}')
	if !ok || empty {
		return ok
	}
	for i < len(blob) {
		if blob[i] != '"' {
			return false
		}
		end := stringEnd(blob, i)
		if end < 0 {
			return false
		}
		k, ok := jsonString(blob[i:end])
		if !ok {
			return false
		}
		i = skipSpace(blob, end)
		if i >= len(blob) || blob[i] != ':' {
			return false
		}
		start := skipSpace(blob, i+1)
		vend := valueEnd(blob, start)
		if vend < 0 {
			return false
		}
		fn(k, blob[start:vend])
		next, done, ok := after(blob, vend, '}')
		if done || !ok {
			return done
		}
		i = next
	}
	return false
}

// openContainer reads the start of a container that opener opens and closer
// closes: i is where its first member or element starts, and empty says
// it has none; ok is false when b starts with anything else.
func openContainer(b []byte, opener, closer byte) (i int, empty, ok bool) {
	i = skipSpace(b, 0)
	if i >= len(b) || b[i] != opener {
		return i, false, false
	}
	i = skipSpace(b, i+1)
	return i, i < len(b) && b[i] == closer, true
}

// after reads what follows a member or element ending at end in a
// container that closer closes: a comma, and then next is where the next
// one starts, or closer, and then done; ok is false for anything else.
func after(b []byte, end int, closer byte) (next int, done, ok bool) {
	i := skipSpace(b, end)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), false, true
	case closer:
		return i, true, true
	}
	return i, false, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the string starting at b[i] (a quote), or
// -1. It jumps from quote to quote (bundles hold long strings: base64
// data, descriptions); a quote ends the string unless an odd number of
// backslashes precedes it.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		escapes := 0
		for k := j - 1; k > i && b[k] == '\\'; k-- {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1
		}
		j++
	}
	return -1
}

// valueEnd is the index after the value starting at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
