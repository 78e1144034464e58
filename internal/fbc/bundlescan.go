package fbc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// scanBundle decodes a bundle blob in one pass, without copying: property
// values are slices of blob, and starts says where each one begins. Bundle
// blobs are most of a catalog's bytes, and encoding/json would read each
// twice (once to check it, once to decode) and copy every value.
//
// It relies on blob being declcfg.Meta's encoding (compact JSON with sorted
// keys, which encoding/json wrote and so is valid) and handles only the
// shape almost every bundle has: known keys spelt as declared, strings
// where strings belong, properties and related images as arrays of objects.
// For anything else (a key encoding/json would match case-insensitively, a
// null, a number where a string belongs) it returns ok == false, and the
// caller decodes with encoding/json, which gives the answer or the error.
func scanBundle(blob []byte) (b *declcfg.Bundle, starts []int, ok bool) {
	s := scanner{buf: bytes.TrimSuffix(blob, []byte("\n"))}
	b = &declcfg.Bundle{}
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "schema":
			return s.str(&b.Schema)
		case "name":
			return s.str(&b.Name)
		case "package":
			return s.str(&b.Package)
		case "image":
			return s.str(&b.Image)
		case "properties":
			b.Properties = []property.Property{}
			return s.array(func() bool {
				var p property.Property
				start := -1
				ok := s.object(func(key []byte) bool {
					switch string(key) {
					case "type":
						return s.str(&p.Type)
					case "value":
						start = s.pos
						ok := s.skip()
						p.Value = s.buf[start:s.pos]
						return ok
					}
					return s.other(key, "type", "value")
				})
				b.Properties = append(b.Properties, p)
				starts = append(starts, start)
				return ok
			})
		case "relatedImages":
			b.RelatedImages = []declcfg.RelatedImage{}
			return s.array(func() bool {
				var ri declcfg.RelatedImage
				ok := s.object(func(key []byte) bool {
					switch string(key) {
					case "name":
						return s.str(&ri.Name)
					case "image":
						return s.str(&ri.Image)
					}
					return s.other(key, "name", "image")
				})
				b.RelatedImages = append(b.RelatedImages, ri)
				return ok
			})
		}
		return s.other(key, "schema", "name", "package", "image", "properties", "relatedImages")
	})
	if !ok || s.pos != len(s.buf) {
		return nil, nil, false
	}
	return b, starts, true
}

// EachProperty calls fn with the type and the value of each property of
// a bundle blob in declcfg.Meta's encoding, in order, as encoding/json
// decodes them into a declcfg.Bundle, without decoding the rest of the
// bundle or allocating: query reads a bundle's properties from its blob in
// the index's content with it, and the blob there is the one the walk
// scanned, so the values are the ones the index recorded. typ and value
// are slices of blob (typ decoded when it has escapes). It reports false,
// having called fn for some properties perhaps, for a shape of properties
// scanBundle would decline, for a key encoding/json would match ignoring
// case, and for a blob with more than one "properties" key (encoding/json
// keeps the last). blob must be one encoding/json decodes into a
// declcfg.Bundle, as every bundle blob of an index is: the other keys'
// values are stepped over, not checked.
func EachProperty(blob []byte, fn func(typ, value []byte)) bool {
	return eachProperty(blob, func(typ, value []byte, _ propertySpan) { fn(typ, value) })
}

// propertySpan is where a property's type and value stand in its blob:
// the type's bytes between its quotes (typeEscaped when it has escapes,
// so that they are not the type itself), the value's bytes (valueEnd 0
// when the property has none).
type propertySpan struct {
	typeStart, typeEnd, valueStart, valueEnd int
	typeEscaped                              bool
}

// eachProperty is EachProperty, also telling fn where the property stands.
func eachProperty(blob []byte, fn func(typ, value []byte, at propertySpan)) bool {
	s := scanner{buf: bytes.TrimSuffix(blob, []byte("\n"))}
	seen := false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "properties":
		case "schema", "name", "package", "image", "relatedImages":
			return s.skip()
		default:
			return s.other(key, "schema", "name", "package", "image", "properties", "relatedImages")
		}
		if seen {
			return false
		}
		seen = true
		return s.array(func() bool {
			var (
				typ, value []byte
				at         propertySpan
			)
			ok := s.object(func(key []byte) bool {
				switch string(key) {
				case "type":
					start := s.pos
					ok := s.rawStr(&typ)
					at.typeStart, at.typeEnd = start+1, s.pos-1
					at.typeEscaped = bytes.IndexByte(s.buf[start:s.pos], '\\') >= 0
					return ok
				case "value":
					start := s.pos
					ok := s.skip()
					value = s.buf[start:s.pos]
					at.valueStart, at.valueEnd = start, s.pos
					return ok
				}
				return s.other(key, "type", "value")
			})
			if ok {
				fn(typ, value, at)
			}
			return ok
		})
	})
	return ok && s.pos == len(s.buf)
}

// PropertySpans records where each property of a bundle blob stands in
// it, for EachPropertyIn: what EachProperty finds by scanning the blob,
// the index finds once when it loads the bundle, so that a reader of the
// bundle's properties steps over its objects (kilobytes of CSV metadata
// and base64) without scanning them. It reports false where EachProperty
// would, and for a type with escapes, which is not its blob's bytes.
//
// The record is, per property, four varints: where its type starts, from
// the end of the previous property's value (or type, or the blob's start);
// the type's length; where its value starts, from the type's end; the
// value's length, 0 for a property without a value. A few bytes per
// property, where the value's bytes would be kilobytes.
func PropertySpans(blob []byte) ([]byte, bool) {
	var out []byte
	cursor, escaped := 0, false
	ok := eachProperty(blob, func(_, _ []byte, at propertySpan) {
		if at.typeEscaped {
			escaped = true
			return
		}
		if at.typeStart == 0 {
			// No type key: an empty type where the previous span ended.
			at.typeStart, at.typeEnd = cursor, cursor
		}
		out = binary.AppendVarint(out, int64(at.typeStart-cursor))
		out = binary.AppendUvarint(out, uint64(at.typeEnd-at.typeStart))
		cursor = at.typeEnd
		if at.valueEnd == 0 {
			at.valueStart, at.valueEnd = cursor, cursor
		}
		out = binary.AppendVarint(out, int64(at.valueStart-cursor))
		out = binary.AppendUvarint(out, uint64(at.valueEnd-at.valueStart))
		cursor = at.valueEnd
	})
	if !ok || escaped {
		return nil, false
	}
	if out == nil {
		out = []byte{}
	}
	return out, true
}

// EachPropertyIn calls fn with the type and the value of each property of
// blob as PropertySpans recorded them in spans: what EachProperty gives
// for the same blob, without scanning it. It reports false, having called
// fn for some properties perhaps, when spans is not such a record or does
// not fit blob.
func EachPropertyIn(blob, spans []byte, fn func(typ, value []byte)) bool {
	cursor := 0
	next := func(signed bool) (int, bool) {
		var (
			v int64
			n int
		)
		if signed {
			v, n = binary.Varint(spans)
		} else {
			var u uint64
			u, n = binary.Uvarint(spans)
			v = int64(u)
		}
		if n <= 0 || v < -int64(len(blob)) || v > int64(len(blob)) {
			return 0, false
		}
		spans = spans[n:]
		return int(v), true
	}
	slice := func() ([]byte, bool) {
		delta, ok := next(true)
		if !ok {
			return nil, false
		}
		length, ok := next(false)
		start := cursor + delta
		if !ok || start < 0 || start > len(blob)-length {
			return nil, false
		}
		cursor = start + length
		return blob[start:cursor], true
	}
	for len(spans) > 0 {
		typ, ok := slice()
		if !ok {
			return false
		}
		value, ok := slice()
		if !ok {
			return false
		}
		if len(value) == 0 {
			value = nil
		}
		fn(typ, value)
	}
	return true
}

// scanner walks compact, valid JSON. Its methods report false when the
// input is not of the shape they expect, leaving the position undefined.
type scanner struct {
	buf []byte
	pos int
}

func (s *scanner) next() byte {
	if s.pos >= len(s.buf) {
		return 0
	}
	return s.buf[s.pos]
}

// object calls member for each key, positioned at the key's value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.next() != '{' {
		return false
	}
	s.pos++
	if s.next() == '}' {
		s.pos++
		return true
	}
	for {
		start := s.pos
		if !s.skipString() || s.next() != ':' {
			return false
		}
		key := s.buf[start+1 : s.pos-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		s.pos++
		if !member(key) {
			return false
		}
		switch s.next() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// array calls elem for each element, positioned at the element.
func (s *scanner) array(elem func() bool) bool {
	if s.next() != '[' {
		return false
	}
	s.pos++
	if s.next() == ']' {
		s.pos++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.next() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// other skips the value of a key the caller does not read, unless
// encoding/json would match it to one of fields, ignoring case.
func (s *scanner) other(key []byte, fields ...string) bool {
	for _, f := range fields {
		if bytes.EqualFold(key, []byte(f)) {
			return false
		}
	}
	return s.skip()
}

// str reads a string value into dst; escapes are decoded by encoding/json.
func (s *scanner) str(dst *string) bool {
	start := s.pos
	if !s.skipString() {
		return false
	}
	raw := s.buf[start+1 : s.pos-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		*dst = string(raw)
		return true
	}
	return json.Unmarshal(s.buf[start:s.pos], dst) == nil
}

// rawStr reads a string value into dst: the bytes between its quotes,
// or, when it has escapes, the string encoding/json decodes.
func (s *scanner) rawStr(dst *[]byte) bool {
	start := s.pos
	if !s.skipString() {
		return false
	}
	*dst = s.buf[start+1 : s.pos-1]
	if bytes.IndexByte(*dst, '\\') < 0 {
		return true
	}
	var v string
	if json.Unmarshal(s.buf[start:s.pos], &v) != nil {
		return false
	}
	*dst = []byte(v)
	return true
}

// skipString moves past the string that starts at the position.
func (s *scanner) skipString() bool {
	end, ok := skipString(s.buf, s.pos)
	s.pos = end
	return ok
}

// skip moves past the value that starts at the position.
func (s *scanner) skip() bool {
	end, ok := skipValue(s.buf, s.pos)
	s.pos = end
	return ok
}
