package graphqlapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMembers checks the member scan against encoding/json on every valid
// JSON object: the same keys (later duplicates winning) and the same values.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"x\"}","b":[1,{"c":"]"}],"d":null,"e":true}`, `{"k\u0041":{"x":[]}, "a" : 2 }`, `{"a":1,"a":2}`, `{"a":"\\\\","b":"\\\"\\\\"}`, `[1]`, `"s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		var want map[string]json.RawMessage
		if json.Unmarshal(blob, &want) != nil || want == nil {
			return
		}
		got := map[string][]byte{}
		if !members(blob, func(k, raw []byte) { got[string(k)] = raw }) {
			t.Fatalf("%q: not read", blob)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: keys %d, want %d", blob, len(got), len(want))
		}
		for k, w := range want {
			var a, b any
			if json.Unmarshal(got[k], &a) != nil || json.Unmarshal(w, &b) != nil {
				t.Fatalf("%q: value of %q: %q, want %q", blob, k, got[k], w)
			}
			ga, _ := json.Marshal(a)
			gb, _ := json.Marshal(b)
			if !bytes.Equal(ga, gb) {
				t.Fatalf("%q: value of %q: %q, want %q", blob, k, got[k], w)
			}
		}
	})
}
