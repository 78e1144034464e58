package index

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A shape is what encoding/json accepts when it decodes into one Go type,
// read off the type (shapeOf), so that a value can be checked against it
// (fits) without being decoded: checkBundle only needs to know whether a
// property's value decodes into its operator-registry type, and for
// olm.csv.metadata, a third of a catalog's bytes, decoding was most of a
// build's validation (its strings unquoted and copied, its maps and slices
// built, to be thrown away).
//
// fits answers true only where json.Unmarshal into the type succeeds; for
// anything it does not follow exactly it answers false, and the caller
// decodes, which gives the answer and the error. So shapeOf refuses types
// whose decoding has rules of its own (an Unmarshaler, []byte's base64,
// json.Number, floats, unsigned integers, embedded structs, ",string"),
// and fits
// refuses a key that only matches a field case-insensitively, and a key
// with escapes.
type shape struct {
	kind shapeKind
	// elem is the shape of a slice's elements, a map's values or what a
	// pointer points to.
	elem *shape
	// fields are a struct's fields by their JSON names.
	fields map[string]*shape
	// bits is an integer's size.
	bits int
}

type shapeKind int

const (
	shapeAny shapeKind = iota // any JSON value: json.RawMessage, interface{}
	shapeString
	shapeBool
	shapeInt
	shapeSlice
	shapeMap
	shapeStruct
	shapePointer
)

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	numberType          = reflect.TypeFor[json.Number]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shapeOf returns the shape of t, or false for a type whose decoding it
// does not follow (see shape).
func shapeOf(t reflect.Type) (*shape, bool) {
	switch t {
	case rawMessageType:
		return &shape{kind: shapeAny}, true
	case numberType:
		return nil, false // a string, but one that must hold a number
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil, false
	}
	switch t.Kind() {
	case reflect.String:
		return &shape{kind: shapeString}, true
	case reflect.Bool:
		return &shape{kind: shapeBool}, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &shape{kind: shapeInt, bits: t.Bits()}, true
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return nil, false
		}
		return &shape{kind: shapeAny}, true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, false // base64
		}
		elem, ok := shapeOf(t.Elem())
		return &shape{kind: shapeSlice, elem: elem}, ok
	case reflect.Map:
		if t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
			return nil, false
		}
		elem, ok := shapeOf(t.Elem())
		return &shape{kind: shapeMap, elem: elem}, ok
	case reflect.Pointer:
		elem, ok := shapeOf(t.Elem())
		return &shape{kind: shapePointer, elem: elem}, ok
	case reflect.Struct:
		s := &shape{kind: shapeStruct, fields: map[string]*shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				return nil, false
			}
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",string,") {
				return nil, false
			}
			if name == "" {
				name = f.Name
			}
			for _, c := range name {
				// encoding/json ignores a tag name of other characters.
				if c > utf8.RuneSelf || !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
					return nil, false
				}
			}
			if _, dup := s.fields[name]; dup {
				return nil, false
			}
			fs, ok := shapeOf(f.Type)
			if !ok {
				return nil, false
			}
			s.fields[name] = fs
		}
		return s, true
	}
	return nil, false
}

// fits says whether json.Unmarshal of value, valid JSON, into the type of
// s succeeds (see shape: false may also mean "not sure").
func (s *shape) fits(value []byte) bool {
	r := shapeReader{buf: value}
	if !r.value(s) {
		return false
	}
	r.space()
	return r.pos == len(r.buf)
}

// shapeReader walks valid JSON, checking each value against a shape.
type shapeReader struct {
	buf []byte
	pos int
}

func (r *shapeReader) space() {
	for r.pos < len(r.buf) {
		switch r.buf[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// value checks the value at r.pos against s and moves past it.
func (r *shapeReader) value(s *shape) bool {
	r.space()
	if r.pos >= len(r.buf) {
		return false
	}
	c := r.buf[r.pos]
	if c == 'n' {
		// null into anything is no error: it leaves the value alone, or
		// sets a pointer, slice, map or interface to nil.
		return string(r.literal()) == "null"
	}
	switch s.kind {
	case shapeAny:
		return r.skip()
	case shapeString:
		return c == '"' && r.skipString()
	case shapeBool:
		lit := string(r.literal())
		return lit == "true" || lit == "false"
	case shapeInt:
		if c != '-' && (c < '0' || c > '9') {
			return false
		}
		_, err := strconv.ParseInt(string(r.literal()), 10, s.bits)
		return err == nil
	case shapePointer:
		return r.value(s.elem)
	case shapeSlice:
		if c != '[' {
			return false
		}
		r.pos++
		return r.items(func() bool { return r.value(s.elem) }, ']')
	case shapeMap, shapeStruct:
		if c != '{' {
			return false
		}
		r.pos++
		return r.items(func() bool {
			r.space()
			if r.pos >= len(r.buf) || r.buf[r.pos] != '"' {
				return false
			}
			start := r.pos + 1
			if !r.skipString() {
				return false
			}
			key := r.buf[start : r.pos-1]
			r.space()
			if r.pos >= len(r.buf) || r.buf[r.pos] != ':' {
				return false
			}
			r.pos++
			if s.kind == shapeMap {
				return r.value(s.elem)
			}
			if f, ok := s.fields[string(key)]; ok {
				return r.value(f)
			}
			// A key that is no field's name is ignored, unless
			// encoding/json would take it for one case-insensitively.
			if bytes.IndexByte(key, '\\') >= 0 {
				return false
			}
			for name := range s.fields {
				if strings.EqualFold(name, string(key)) {
					return false
				}
			}
			for _, b := range key {
				if b >= utf8.RuneSelf {
					return false
				}
			}
			return r.skip()
		}, '}')
	}
	return false
}

// items reads the members or elements of an object or array whose opening
// bracket was read, each with item, up to end.
func (r *shapeReader) items(item func() bool, end byte) bool {
	r.space()
	if r.pos < len(r.buf) && r.buf[r.pos] == end {
		r.pos++
		return true
	}
	for {
		if !item() {
			return false
		}
		r.space()
		if r.pos >= len(r.buf) {
			return false
		}
		switch r.buf[r.pos] {
		case ',':
			r.pos++
		case end:
			r.pos++
			return true
		default:
			return false
		}
	}
}

// literal reads a number, true, false or null.
func (r *shapeReader) literal() []byte {
	start := r.pos
	for r.pos < len(r.buf) {
		switch r.buf[r.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return r.buf[start:r.pos]
		}
		r.pos++
	}
	return r.buf[start:r.pos]
}

// skipString moves past the string that starts at r.pos.
func (r *shapeReader) skipString() bool {
	for i := r.pos + 1; i < len(r.buf); i++ {
		switch r.buf[i] {
		case '\\':
			i++
		case '"':
			r.pos = i + 1
			return true
		}
	}
	return false
}

// skip moves past any value.
func (r *shapeReader) skip() bool {
	r.space()
	if r.pos >= len(r.buf) {
		return false
	}
	switch r.buf[r.pos] {
	case '"':
		return r.skipString()
	case '[':
		r.pos++
		return r.items(r.skip, ']')
	case '{':
		r.pos++
		return r.items(func() bool {
			r.space()
			if r.pos >= len(r.buf) || r.buf[r.pos] != '"' || !r.skipString() {
				return false
			}
			r.space()
			if r.pos >= len(r.buf) || r.buf[r.pos] != ':' {
				return false
			}
			r.pos++
			return r.skip()
		}, '}')
	}
	return len(r.literal()) > 0
}
