package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync/atomic"
	"testing"

	ordeclcfg "github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// metaBlob gives a blob as the walk hands it over: operator-registry's
// Meta encoding.
func metaBlob(t testing.TB, doc string) ([]byte, bool) {
	t.Helper()
	var m ordeclcfg.Meta
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		return nil, false
	}
	return m.Blob, true
}

// compareScanBundle compares scanBundle with encoding/json on one blob:
// where the scanner answers, its bundle must be the one encoding/json
// decodes, and each value start must point at that value's bytes. It
// returns an error rather than failing the test, because catalog walks call
// it from goroutines of their own.
func compareScanBundle(blob []byte) (scanned bool, err error) {
	got, starts, ok := scanBundle(blob)
	var want declcfg.Bundle
	wantErr := json.Unmarshal(blob, &want)
	if err := compareEachProperty(blob, want.Properties, wantErr, ok); err != nil {
		return ok, err
	}
	if !ok {
		return false, nil
	}
	if wantErr != nil {
		return true, fmt.Errorf("scanBundle accepted a blob encoding/json rejects (%v): %s", wantErr, blob)
	}
	if !reflect.DeepEqual(*got, want) {
		return true, fmt.Errorf("scanBundle(%s)\n got %+v\nwant %+v", blob, *got, want)
	}
	if len(starts) != len(got.Properties) {
		return true, fmt.Errorf("%d value starts for %d properties", len(starts), len(got.Properties))
	}
	for i, p := range got.Properties {
		switch {
		case len(p.Value) == 0 && starts[i] != -1:
			return true, fmt.Errorf("property %d has no value but starts at %d", i, starts[i])
		case len(p.Value) > 0 && string(blob[starts[i]:starts[i]+len(p.Value)]) != string(p.Value):
			return true, fmt.Errorf("property %d: value %s does not stand at %d in %s", i, p.Value, starts[i], blob)
		}
	}
	return true, nil
}

// compareEachProperty compares EachProperty on blob with want, the
// properties encoding/json decodes (wantErr its error): where EachProperty
// answers, its properties must be those, and it must answer wherever
// scanBundle does (scanned).
func compareEachProperty(blob []byte, want []property.Property, wantErr error, scanned bool) error {
	var got []property.Property
	ok := EachProperty(blob, func(typ, value []byte) {
		got = append(got, property.Property{Type: string(typ), Value: value})
	})
	switch {
	case !ok && scanned:
		return fmt.Errorf("EachProperty declined a blob scanBundle reads: %s", blob)
	case !ok || wantErr != nil:
		// Not a bundle: never in an index, and EachProperty's answer
		// is not defined.
		return nil
	case len(got) != len(want):
		return fmt.Errorf("EachProperty(%s) gave %d properties, encoding/json %d", blob, len(got), len(want))
	}
	for i := range got {
		if got[i].Type != want[i].Type || !bytes.Equal(got[i].Value, want[i].Value) {
			return fmt.Errorf("EachProperty(%s): property %d is %s %s, encoding/json gives %s %s", blob, i, got[i].Type, got[i].Value, want[i].Type, want[i].Value)
		}
	}
	return compareSpans(blob, want)
}

// compareSpans checks that the properties EachPropertyIn reads from blob
// by its PropertySpans are want, unless a type has escapes, which is the
// one reason PropertySpans may decline a blob EachProperty reads.
func compareSpans(blob []byte, want []property.Property) error {
	spans, ok := PropertySpans(blob)
	if !ok {
		if !bytes.Contains(blob, []byte(`\`)) {
			return fmt.Errorf("PropertySpans declined %s, which has no escape", blob)
		}
		return nil
	}
	var got []property.Property
	if !EachPropertyIn(blob, spans, func(typ, value []byte) {
		got = append(got, property.Property{Type: string(typ), Value: value})
	}) {
		return fmt.Errorf("EachPropertyIn(%s, %x) declined its own spans", blob, spans)
	}
	if len(got) != len(want) {
		return fmt.Errorf("EachPropertyIn(%s) gave %d properties, encoding/json %d", blob, len(got), len(want))
	}
	for i := range got {
		if got[i].Type != want[i].Type || !bytes.Equal(got[i].Value, want[i].Value) {
			return fmt.Errorf("EachPropertyIn(%s): property %d is %s %s, encoding/json gives %s %s", blob, i, got[i].Type, got[i].Value, want[i].Type, want[i].Value)
		}
	}
	return nil
}

// TestEachPropertyInDeclines: spans that do not fit their blob, or are
// not a record at all, are declined rather than sliced out of bounds.
func TestEachPropertyInDeclines(t *testing.T) {
	blob := []byte(`{"properties":[{"type":"a","value":1}],"schema":"olm.bundle"}`)
	spans, ok := PropertySpans(blob)
	if !ok {
		t.Fatalf("PropertySpans(%s) declined", blob)
	}
	for _, tc := range []struct {
		name        string
		blob, spans []byte
	}{
		{"blob shorter than its spans", blob[:20], spans},
		{"truncated record", blob, spans[:len(spans)-1]},
		{"not varints", blob, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"negative start", blob, []byte{0x7f, 0x01, 0x00, 0x01}},
		{"length past the end", blob, []byte{0x00, 0x7f, 0x00, 0x01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if EachPropertyIn(tc.blob, tc.spans, func(_, _ []byte) {}) {
				t.Errorf("EachPropertyIn(%s, %x) answered, want it to decline", tc.blob, tc.spans)
			}
		})
	}
}

func TestScanBundle(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		// scanned says whether the fast path should answer; when it does
		// not, encoding/json decides.
		scanned bool
	}{
		{"typical", `{"schema":"olm.bundle","name":"a.v1","package":"a","image":"quay.io/a:1",
			"properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}},
			{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}},
			{"type":"olm.bundle.object","value":{"data":"eyJhIjoiYlwiIn0="}},
			{"type":"custom.string","value":"a \"quoted\" \\ value"},{"type":"custom.number","value":1.5e3},
			{"type":"custom.array","value":[1,[2,{"x":"]"}],null,true]},{"type":"custom.null","value":null},
			{"type":"custom.none"}],
			"relatedImages":[{"name":"op","image":"quay.io/op@sha256:00"},{"image":"quay.io/x"}]}`, true},
		{"empty arrays", `{"schema":"olm.bundle","properties":[],"relatedImages":[]}`, true},
		{"unknown keys kept out", `{"schema":"olm.bundle","name":"b","extra":{"properties":[1]},"z":[{"type":1}]}`, true},
		{"escaped strings", `{"schema":"olm.bundle","name":"b\u00e9\n","image":"a\\b","properties":[{"type":"t\"","value":"\\"}]}`, true},
		{"property with unknown key", `{"schema":"olm.bundle","properties":[{"type":"t","value":1,"other":2}]}`, true},
		{"case-folded field", `{"schema":"olm.bundle","Image":"quay.io/a"}`, false},
		{"case-folded property key", `{"schema":"olm.bundle","properties":[{"Type":"t","value":1}]}`, false},
		{"null property", `{"schema":"olm.bundle","properties":[null]}`, false},
		{"null image", `{"schema":"olm.bundle","image":null}`, false},
		{"number image", `{"schema":"olm.bundle","image":1}`, false},
		{"properties not a list", `{"schema":"olm.bundle","properties":{"type":"t"}}`, false},
		{"related image not an object", `{"schema":"olm.bundle","relatedImages":["quay.io/a"]}`, false},
		{"case-folded properties key", `{"schema":"olm.bundle","Properties":[{"type":"a","value":1}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blob, ok := metaBlob(t, tt.doc)
			if !ok {
				t.Fatalf("test document does not parse: %s", tt.doc)
			}
			scanned, err := compareScanBundle(blob)
			if err != nil {
				t.Fatal(err)
			}
			if scanned != tt.scanned {
				t.Errorf("scanned = %v, want %v for %s", scanned, tt.scanned, blob)
			}
		})
	}
}

// TestScanBundleCatalogs checks every bundle of real and generated catalogs
// against encoding/json, and that none needs the slow path: a catalog whose
// bundles fell back would build as slowly as before the scanner.
func TestScanBundleCatalogs(t *testing.T) {
	for _, tt := range fbcfacts.Fixtures("../../test/testdata/demo") {
		t.Run(tt.Name, func(t *testing.T) {
			// WalkMetasFS calls back from several goroutines at once.
			var bundles atomic.Int64
			err := ordeclcfg.WalkMetasFS(context.Background(), os.DirFS(tt.Dir(t)), func(path string, m *ordeclcfg.Meta, err error) error {
				if err != nil || m.Schema != ordeclcfg.SchemaBundle {
					return err
				}
				bundles.Add(1)
				scanned, err := compareScanBundle(m.Blob)
				if err == nil && !scanned {
					err = errors.New("took the slow path")
				}
				if err != nil {
					return fmt.Errorf("%s: bundle %q: %w", path, m.Name, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if bundles.Load() == 0 {
				t.Fatal("no bundles walked")
			}
		})
	}
}

// TestScanBundleOutOfShape feeds the scanner what is not declcfg.Meta's
// encoding (whitespace, cut-off input): it declines rather than misreads.
func TestScanBundleOutOfShape(t *testing.T) {
	for _, doc := range []string{
		`{"schema": "olm.bundle"}`,
		`{"schema":"olm.bundle"`,
		`{"schema":"olm.bundle","properties":[{"type":"t","value":{"a":1}}`,
		`{"schema":"olm.bundle"}x`,
		`["schema"]`,
		``,
		`{"schema":"olm.bundle","name":"unterminated}`,
	} {
		if b, _, ok := scanBundle([]byte(doc)); ok {
			t.Errorf("scanBundle(%q) = %+v, want it to decline", doc, b)
		}
	}
}

// TestEachPropertyTwoLists: a blob with two "properties" keys (not
// declcfg.Meta's encoding, which has each key once) is declined, as
// encoding/json would keep the last list and fn has had the first.
func TestEachPropertyTwoLists(t *testing.T) {
	blob := `{"properties":[{"type":"a","value":1}],"properties":[{"type":"b","value":2}],"schema":"olm.bundle"}`
	if EachProperty([]byte(blob), func(_, _ []byte) {}) {
		t.Errorf("EachProperty(%s) answered, want it to decline", blob)
	}
}

func FuzzScanBundle(f *testing.F) {
	f.Add(`{"schema":"olm.bundle","name":"a","properties":[{"type":"olm.gvk","value":{"group":"g"}}],"relatedImages":[{"name":"n","image":"i"}]}`)
	f.Add(`{"schema":"olm.bundle","properties":[{"type":"x","value":"\"]}"},{"value":[{"a":"\\"}]}]}`)
	f.Add(`{"schema":"olm.bundle","PROPERTIES":[],"ſchema":"x"}`)
	f.Fuzz(func(t *testing.T, doc string) {
		if blob, ok := metaBlob(t, doc); ok {
			if _, err := compareScanBundle(blob); err != nil {
				t.Fatal(err)
			}
		}
	})
}
