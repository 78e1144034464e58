package index

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/property"
)

// plainCSVMetadata is an olm.csv.metadata value of the shape catalogs
// hold: every field, CRD descriptions with descriptors and their values.
const plainCSVMetadata = `{"annotations":{"alm-examples":"[{\"kind\":\"A\"}]","capabilities":"Basic Install"},` +
	`"apiServiceDefinitions":{"owned":[{"name":"a","group":"g","version":"v1","kind":"A","containerPort":8443,"resources":[{"name":"r","kind":"K","version":"v1"}]}]},` +
	`"crdDescriptions":{"owned":[{"name":"as.g","version":"v1","kind":"A","displayName":"A","description":"d",` +
	`"resources":[{"kind":"Deployment","name":"","version":"v1"}],` +
	`"specDescriptors":[{"path":"size","displayName":"Size","x-descriptors":["urn:alm:descriptor:com.tectonic.ui:podCount"],"value":3}],` +
	`"statusDescriptors":[{"path":"nodes","x-descriptors":null,"value":{"a":[1,"b",null]}}],` +
	`"actionDescriptors":[{"path":"p","value":null}]}],"required":null},` +
	`"description":"line\nnext \"quoted\" \u00e9","displayName":"A","installModes":[{"supported":true,"type":"OwnNamespace"},{"supported":false,"type":"AllNamespaces"}],` +
	`"keywords":["a",null],"labels":{"l":"v"},"links":[{"name":"n","url":"https://x"}],"maintainers":[{"email":"e@x","name":"m"}],` +
	`"maturity":"alpha","minKubeVersion":"1.20.0","nativeAPIs":[{"group":"","kind":"Pod","version":"v1"}],"provider":{"name":"p","url":""},"unknown":{"x":[1.5e3,true]}}`

// TestCSVMetadataShape: fits says true exactly where json.Unmarshal into a
// property.CSVMetadata succeeds, for plain values (which must take the
// fast path) and for every kind of value of the wrong type at every depth
// (which must not), json.Unmarshal being the judge; a value fits may
// leave to json.Unmarshal though it decodes (a key matching a field
// case-insensitively) is marked.
func TestCSVMetadataShape(t *testing.T) {
	if csvMetadataShape == nil {
		t.Fatal("property.CSVMetadata has a field whose decoding shapeOf does not follow: every olm.csv.metadata is decoded")
	}
	tests := []struct {
		name, value string
		// unsure marks a value that decodes but that fits leaves to
		// json.Unmarshal.
		unsure bool
	}{
		{"plain", plainCSVMetadata, false},
		{"empty", `{}`, false},
		{"null", `null`, false},
		{"spaces", " {\n\t\"displayName\" : \"A\" ,\r\n \"keywords\" : [ ] } ", false},
		{"nulls everywhere", `{"annotations":null,"crdDescriptions":{"owned":[null]},"installModes":[{"supported":null}],"provider":null}`, false},
		{"max int32", `{"apiServiceDefinitions":{"owned":[{"containerPort":2147483647}]}}`, false},
		{"negative int32", `{"apiServiceDefinitions":{"owned":[{"containerPort":-2147483648}]}}`, false},
		{"key in other case", `{"DisplayName":"A"}`, true},
		{"escaped key", `{"display\u004eame":"A"}`, true},
		{"number as string", `{"description":5}`, false},
		{"object as string", `{"maturity":{}}`, false},
		{"string as map", `{"annotations":"a"}`, false},
		{"number in map", `{"labels":{"a":1}}`, false},
		{"string as slice", `{"keywords":"a"}`, false},
		{"number in slice", `{"keywords":["a",2]}`, false},
		{"slice as struct", `{"provider":[]}`, false},
		{"string as bool", `{"installModes":[{"supported":"yes"}]}`, false},
		{"deep", `{"crdDescriptions":{"owned":[{"specDescriptors":[{"x-descriptors":[true]}]}]}}`, false},
		{"deep required", `{"crdDescriptions":{"required":[{"resources":[{"kind":7}]}]}}`, false},
		{"float as int", `{"apiServiceDefinitions":{"owned":[{"containerPort":1.5}]}}`, false},
		{"exponent as int", `{"apiServiceDefinitions":{"owned":[{"containerPort":1e3}]}}`, false},
		{"int32 overflow", `{"apiServiceDefinitions":{"owned":[{"containerPort":2147483648}]}}`, false},
		{"string as int", `{"apiServiceDefinitions":{"owned":[{"containerPort":"80"}]}}`, false},
		{"key in other case, wrong type", `{"Description":5}`, false},
		{"escaped key, wrong type", `{"descriptio\u006e":5}`, false},
		{"array", `[]`, false},
		{"string", `"a"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.value)) {
				t.Fatalf("not JSON: %s", tt.value)
			}
			decodes := json.Unmarshal([]byte(tt.value), &property.CSVMetadata{}) == nil
			fits := csvMetadataShape.fits([]byte(tt.value))
			if fits && !decodes {
				t.Errorf("fits, but json.Unmarshal fails on %s", tt.value)
			}
			if want := decodes && !tt.unsure; fits != want {
				t.Errorf("fits = %v, want %v (json.Unmarshal succeeds: %v) on %s", fits, want, decodes, tt.value)
			}
		})
	}
}

// TestShapeOfRefuses: shapeOf refuses the types whose decoding has rules
// fits does not follow.
func TestShapeOfRefuses(t *testing.T) {
	type embedded struct{ A string }
	tests := []struct {
		name string
		typ  reflect.Type
	}{
		{"bytes", reflect.TypeFor[[]byte]()},
		{"float", reflect.TypeFor[float64]()},
		{"unsigned", reflect.TypeFor[uint]()},
		{"unmarshaler", reflect.TypeFor[struct{ T json.Number }]()},
		{"text unmarshaler key", reflect.TypeFor[map[textKey]string]()},
		{"embedded", reflect.TypeFor[struct{ embedded }]()},
		{"string option", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}]()},
		{"same name twice", reflect.TypeFor[struct {
			A string `json:"X"`
			X string
		}]()},
		{"array", reflect.TypeFor[[2]string]()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := shapeOf(tt.typ); ok {
				t.Errorf("shapeOf(%v) accepted", tt.typ)
			}
		})
	}
}

type textKey string

func (k *textKey) UnmarshalText(b []byte) error { *k = textKey(strings.ToLower(string(b))); return nil }

// FuzzCSVMetadataShape: whatever the value, fits never says true where
// json.Unmarshal into a property.CSVMetadata fails.
func FuzzCSVMetadataShape(f *testing.F) {
	f.Add(plainCSVMetadata)
	f.Add(`{"apiServiceDefinitions":{"owned":[{"containerPort":80}]},"keywords":["a"]}`)
	f.Add(`{"crdDescriptions":{"owned":[{"specDescriptors":[{"x-descriptors":["a"],"value":{}}]}]}}`)
	f.Add(`{"DisplayName":"A","installModes":[{"supported":false}]}`)
	f.Fuzz(func(t *testing.T, value string) {
		if !json.Valid([]byte(value)) {
			return
		}
		if csvMetadataShape.fits([]byte(value)) {
			if err := json.Unmarshal([]byte(value), &property.CSVMetadata{}); err != nil {
				t.Errorf("fits, but json.Unmarshal fails (%v) on %s", err, value)
			}
		}
	})
}
