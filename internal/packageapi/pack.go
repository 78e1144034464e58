package packageapi

import (
	"reflect"
	"unsafe"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
)

// pack replaces each of ms with a copy equal to it field for field (nil
// and empty kept apart, values shared within a manifest shared again)
// held in a few large allocations: the bytes of every distinct string in
// one buffer, and the elements of every slice of a type, and every value
// a pointer of a type points to, in one array of that type.
//
// Converting a package decodes its heads' CSVs, and what its manifest
// keeps (thousands of strings and slices the decoder made) is allocated
// among garbage several times its size. Once that is collected, each kept
// object pins the runtime span it shared with the garbage, mostly empty:
// on the bench catalog such spans held 3 MiB free beside the cache's
// 2.6 MiB. A copy made object by object lands in the free slots of those
// same spans and pins them again once the originals go; a packed copy is
// made of allocations too large to share a span, so the conversion's
// spans empty entirely and the runtime gives them back.
//
// The buffer and arrays live as long as any manifest of ms does. The
// cache packs together the manifests one sync converted, each of which
// is referenced by that sync's events as long as they are kept (see
// maxEvents), so the arrays outlive what they hold only by the manifests
// of the sync later ones replaced, once its events are gone.
func pack(ms []*pkgv1.PackageManifest) {
	p := &packer{strs: map[string]string{}, lens: map[reflect.Type]int{}}
	for _, m := range ms {
		p.measure(reflect.ValueOf(m), map[seenKey]bool{})
	}
	p.buf = make([]byte, 0, p.strBytes)
	p.arrays = make(map[reflect.Type]reflect.Value, len(p.lens))
	for t, n := range p.lens {
		p.arrays[t] = reflect.MakeSlice(t, n, n)
	}
	for i, m := range ms {
		// What a manifest shares with itself it shares again, as measure
		// counted it; a copy shares nothing with another but strings.
		p.seen = map[seenKey]reflect.Value{}
		ms[i] = p.copy(reflect.ValueOf(m)).Interface().(*pkgv1.PackageManifest)
	}
}

// packer is one pack: measure sizes the buffer and arrays, copy fills
// them.
type packer struct {
	strs     map[string]string // each distinct string, and its copy once made
	strBytes int
	// lens is how many elements the arrays of each slice type need: a
	// pointer of type *T takes one element of a []T.
	lens map[reflect.Type]int
	buf  []byte
	// arrays holds, for each slice type, what is left of its array.
	arrays map[reflect.Type]reflect.Value
	seen   map[seenKey]reflect.Value
}

// seenKey identifies a slice, map or pointer: its type, where its data
// is, and for a slice its length.
type seenKey struct {
	t reflect.Type
	p uintptr
	n int
}

func keyOf(v reflect.Value) seenKey {
	k := seenKey{t: v.Type(), p: v.Pointer()}
	if v.Kind() == reflect.Slice {
		k.n = v.Len()
	}
	return k
}

// opaque says whether a struct has unexported fields (metav1.Time's
// time.Time): such a value is copied as it is; none holds a string.
func opaque(t reflect.Type) bool {
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

func (p *packer) measure(v reflect.Value, done map[seenKey]bool) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); s != "" {
			if _, ok := p.strs[s]; !ok {
				p.strs[s] = ""
				p.strBytes += len(s)
			}
		}
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if v.IsNil() || done[keyOf(v)] {
			return
		}
		done[keyOf(v)] = true
		switch v.Kind() {
		case reflect.Pointer:
			p.lens[reflect.SliceOf(v.Type().Elem())]++
			p.measure(v.Elem(), done)
		case reflect.Slice:
			p.lens[v.Type()] += v.Len()
			for i := range v.Len() {
				p.measure(v.Index(i), done)
			}
		default:
			for it := v.MapRange(); it.Next(); {
				p.measure(it.Key(), done)
				p.measure(it.Value(), done)
			}
		}
	case reflect.Struct:
		if opaque(v.Type()) {
			return
		}
		for i := range v.NumField() {
			p.measure(v.Field(i), done)
		}
	}
}

// take cuts n elements off the array of slice type t.
func (p *packer) take(t reflect.Type, n int) reflect.Value {
	arr := p.arrays[t]
	p.arrays[t] = arr.Slice(n, arr.Len())
	return arr.Slice3(0, n, n)
}

func (p *packer) copy(v reflect.Value) reflect.Value {
	t := v.Type()
	switch v.Kind() {
	case reflect.String:
		return reflect.ValueOf(p.str(v.String())).Convert(t)
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if v.IsNil() {
			return v
		}
		key := keyOf(v)
		if out, ok := p.seen[key]; ok {
			return out
		}
		var out reflect.Value
		switch v.Kind() {
		case reflect.Pointer:
			out = p.take(reflect.SliceOf(t.Elem()), 1).Index(0).Addr()
			out.Elem().Set(p.copy(v.Elem()))
		case reflect.Slice:
			out = p.take(t, v.Len())
			for i := range v.Len() {
				out.Index(i).Set(p.copy(v.Index(i)))
			}
		default:
			out = reflect.MakeMapWithSize(t, v.Len())
			for it := v.MapRange(); it.Next(); {
				out.SetMapIndex(p.copy(it.Key()), p.copy(it.Value()))
			}
		}
		p.seen[key] = out
		return out
	case reflect.Struct:
		if opaque(t) {
			return v
		}
		out := reflect.New(t).Elem()
		for i := range t.NumField() {
			out.Field(i).Set(p.copy(v.Field(i)))
		}
		return out
	default:
		// Numbers and booleans: the API types hold no interface, array,
		// channel or function.
		return v
	}
}

// str returns s as a string of buf, copying it there the first time. buf
// never grows past what measure counted, so it never moves, and no byte
// of it is written twice: the strings cut from it never change.
func (p *packer) str(s string) string {
	if s == "" {
		return ""
	}
	if kept := p.strs[s]; kept != "" {
		return kept
	}
	off := len(p.buf)
	p.buf = append(p.buf, s...)
	kept := unsafe.String(&p.buf[off], len(s))
	p.strs[s] = kept
	return kept
}
