package graphqlapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonical checks the raw re-encoding against encoding/json on every
// valid JSON value: what json.Marshal answers for the decoded value, byte
// for byte, and scalars decoded to the same Go values; on other bytes it
// must not panic.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"b":1,"a":[true,false,null]}`, `{"a":1,"a":2}`, `{"z":{"y":"x","a":[]}, "a" : -0}`,
		`"<a href=\"x\">&amp;</a>"`, `"\u2028\u2029 \b\f\n\r\t\u0001 \/ \ud83d\ude00 \ud800"`, "\"\xff\xfe ok\"",
		`1.5`, `1e21`, `1e-7`, `123456789012345678`, `-0`, `0.000001`, `1E+2`, `1e400`, `[1e400]`,
		`{"k\u0041":"v","kA":"w"}`, "{\"\xff\":1,\"\xfe\":2}", `[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]`, `"\ud83d\ude00\ud83d x \udc00\ud800\udc00\ud800\u0041"`, `"\u00e9\u00E9 \u003c\u2028 \""`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.TrimSpace(raw)
		// Whatever the bytes, no panic.
		_, _ = appendCanonical(nil, raw)
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%q: marshal: %v", raw, err)
		}
		got, ok := appendCanonical(nil, raw)
		if !ok {
			t.Fatalf("%q: not re-encoded", raw)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", raw, got, want)
		}
		switch v.(type) {
		case map[string]any, []any:
			return
		}
		sv, ok := scalarValue(raw)
		if !ok || sv != v {
			t.Fatalf("%q: scalar %#v (%v), want %#v", raw, sv, ok, v)
		}
	})
}
