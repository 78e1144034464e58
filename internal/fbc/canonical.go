package fbc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// canonicalMeta makes of raw, one JSON object, the declcfg.Meta that
// Meta.UnmarshalJSON makes of it, in one pass and about raw's size in
// memory: Meta.UnmarshalJSON decodes the blob into maps and encodes those
// again, which takes several times the blob's size, and bundle blobs that
// carry their CRDs are many MB each. The encoding is encoding/json's of the
// decoded maps: keys sorted, no insignificant space, strings escaped as
// encoding/json escapes them (HTML characters as they are), numbers as
// float64s, and a newline at the end.
//
// It reports false for whatever it does not handle the same way for sure
// (a syntax error, a repeated key, a top-level key that is not ASCII,
// nesting deeper than maxCanonicalDepth, a meta field that is not a
// string); the caller then leaves raw to Meta.UnmarshalJSON, which gives
// the answer or the error.
//
// out is the buffer to encode into, from len 0; the blob is encoded into
// it as long as it has room.
func canonicalMeta(raw, out []byte) (*declcfg.Meta, bool) {
	c := canonicalizer{in: raw, out: out}
	c.space()
	if c.next() != '{' {
		return nil, false
	}
	meta := &declcfg.Meta{}
	if !c.object(meta) {
		return nil, false
	}
	c.space()
	if c.pos != len(c.in) {
		return nil, false
	}
	meta.Blob = append(c.out, '\n')
	return meta, true
}

// maxCanonicalDepth bounds the nesting canonicalMeta handles: sorting an
// object's keys reads its members twice, so deep nesting would cost time
// quadratic in the blob's size. Catalog blobs nest a few levels.
const maxCanonicalDepth = 64

type canonicalizer struct {
	in    []byte
	pos   int
	out   []byte
	depth int
	// scratch is reused by the string encoding of the slow path.
	scratch bytes.Buffer
}

func (c *canonicalizer) next() byte {
	if c.pos >= len(c.in) {
		return 0
	}
	return c.in[c.pos]
}

func (c *canonicalizer) space() { c.pos = skipSpace(c.in, c.pos) }

func (c *canonicalizer) value() bool {
	c.space()
	switch b := c.next(); {
	case b == '{':
		return c.object(nil)
	case b == '[':
		return c.array()
	case b == '"':
		start := c.pos
		if !c.skipString() {
			return false
		}
		return c.string(c.in[start:c.pos])
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number()
	}
	return false
}

func (c *canonicalizer) literal(word string) bool {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(word)) {
		return false
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return true
}

// member is an object member: its key, decoded, and where its value
// stands in the input.
type member struct {
	key        string
	start, end int
}

// object writes the object at the position with its keys sorted. For the
// top-level object, meta is filled in as Meta.UnmarshalJSON fills it.
func (c *canonicalizer) object(meta *declcfg.Meta) bool {
	if c.depth++; c.depth > maxCanonicalDepth {
		return false
	}
	defer func() { c.depth-- }()
	c.pos++ // {
	var members []member
	c.space()
	if c.next() == '}' {
		c.pos++
	} else {
		for {
			c.space()
			start := c.pos
			if !c.skipString() {
				return false
			}
			key, ok := c.decodeString(c.in[start:c.pos])
			if !ok {
				return false
			}
			c.space()
			if c.next() != ':' {
				return false
			}
			c.pos++
			c.space()
			m := member{key: key, start: c.pos}
			if !c.skipValue() {
				return false
			}
			m.end = c.pos
			members = append(members, m)
			c.space()
			if c.next() == ',' {
				c.pos++
				continue
			}
			if c.next() != '}' {
				return false
			}
			c.pos++
			break
		}
	}
	end := c.pos
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(members); i++ {
		if members[i].key == members[i-1].key {
			return false // the last would win; leave that to encoding/json
		}
	}
	if meta != nil && !metaFields(c.in, members, meta) {
		return false
	}
	c.out = append(c.out, '{')
	for i, m := range members {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = c.appendString(c.out, m.key)
		c.out = append(c.out, ':')
		c.pos = m.start
		if !c.value() {
			return false
		}
		c.space()
		if c.pos != m.end {
			return false
		}
	}
	c.out = append(c.out, '}')
	c.pos = end
	return true
}

// metaFields sets schema, package and name from the top-level members, whose
// keys Meta.UnmarshalJSON matches case-insensitively and requires to be
// unique when folded.
func metaFields(in []byte, members []member, meta *declcfg.Meta) bool {
	folded := map[string]bool{}
	for _, m := range members {
		dst, ok := metaField(m.key, folded, meta)
		if !ok {
			return false
		}
		if dst == nil {
			continue
		}
		raw := bytes.TrimRight(in[m.start:m.end], " \t\r\n")
		if len(raw) == 0 || raw[0] != '"' {
			return false
		}
		s, ok := (&canonicalizer{}).decodeString(raw)
		if !ok {
			return false
		}
		*dst = s
	}
	return true
}

// metaField is the field of meta that a top-level key sets (nil for any
// other key), as Meta.UnmarshalJSON matches keys: case-insensitively, each
// folded key once (folded records those seen). ok is false for a key the
// fast paths leave to Meta.UnmarshalJSON: a repeated one, or one outside
// ASCII.
func metaField(key string, folded map[string]bool, meta *declcfg.Meta) (dst *string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return nil, false
		}
	}
	key = strings.ToLower(key)
	if folded[key] {
		return nil, false
	}
	folded[key] = true
	switch key {
	case "schema":
		return &meta.Schema, true
	case "package":
		return &meta.Package, true
	case "name":
		return &meta.Name, true
	}
	return nil, true
}

func (c *canonicalizer) array() bool {
	if c.depth++; c.depth > maxCanonicalDepth {
		return false
	}
	defer func() { c.depth-- }()
	c.pos++ // [
	c.out = append(c.out, '[')
	c.space()
	if c.next() == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return true
	}
	for {
		if !c.value() {
			return false
		}
		c.space()
		switch c.next() {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return true
		default:
			return false
		}
	}
}

// skipString moves past the string that starts at the position.
func (c *canonicalizer) skipString() bool {
	end, ok := skipString(c.in, c.pos)
	c.pos = end
	return ok
}

// skipValue moves past the value that starts at the position, without
// checking it: value checks it when it writes it.
func (c *canonicalizer) skipValue() bool {
	end, ok := skipValue(c.in, c.pos)
	c.pos = end
	return ok
}

// plainString says whether a string token is written by encoding/json as
// it is: no escapes, no control characters, valid UTF-8 without U+2028 or
// U+2029 (which encoding/json escapes).
func plainString(tok []byte) bool {
	body := tok[1 : len(tok)-1]
	// Eight bytes at a time while they are ASCII, which strings of
	// megabytes (bundle objects' base64) are: a word has a byte below
	// 0x20, a quote or a backslash exactly when one of these has a high
	// bit (a zero byte of x^c is a byte c of x).
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(body); i += 8 {
		x := binary.LittleEndian.Uint64(body[i:])
		if x&highs != 0 {
			break // not ASCII: the loop below sees the rest
		}
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		if (x-ones*0x20)&^x&highs != 0 || (quote-ones)&^quote&highs != 0 || (backslash-ones)&^backslash&highs != 0 {
			return false
		}
	}
	ascii := true
	for _, b := range body[i:] {
		if b < 0x20 || b == '\\' || b == '"' {
			return false
		}
		if b >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || (utf8.Valid(body) && !bytes.Contains(body, []byte("\u2028")) && !bytes.Contains(body, []byte("\u2029")))
}

// plainText says of a string what plainString says of its token.
func plainText(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == '\\' || b == '"' {
			return false
		} else if b >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || (utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029"))
}

func (c *canonicalizer) decodeString(tok []byte) (string, bool) {
	if plainString(tok) {
		return string(tok[1 : len(tok)-1]), true
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", false
	}
	return s, true
}

func (c *canonicalizer) string(tok []byte) bool {
	if plainString(tok) {
		c.out = append(c.out, tok...)
		return true
	}
	s, ok := c.decodeString(tok)
	if !ok {
		return false
	}
	c.out = c.appendString(c.out, s)
	return true
}

// appendString appends s as encoding/json encodes it, HTML characters as
// they are.
func (c *canonicalizer) appendString(dst []byte, s string) []byte {
	if plainText(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	c.scratch.Reset()
	enc := json.NewEncoder(&c.scratch)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(c.scratch.Bytes(), []byte("\n"))...)
}

// number writes the number at the position as encoding/json writes the
// float64 it decodes to.
func (c *canonicalizer) number() bool {
	start := c.pos
	for c.pos < len(c.in) && bytes.IndexByte([]byte("+-.eE0123456789"), c.in[c.pos]) >= 0 {
		c.pos++
	}
	tok := c.in[start:c.pos]
	if !validNumber(tok) {
		return false
	}
	digits := bytes.TrimPrefix(tok, []byte("-"))
	if len(digits) <= 15 && !bytes.ContainsAny(digits, ".eE") {
		c.out = append(c.out, tok...) // an integer a float64 holds exactly
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	encoded, err := json.Marshal(f)
	if err != nil {
		return false
	}
	c.out = append(c.out, encoded...)
	return true
}
