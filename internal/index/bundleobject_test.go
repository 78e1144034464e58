package index

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/fbc"
)

// bundleObjectValues are values of olm.bundle.object properties, valid
// and not, of the plain shape plainBundleObject takes and beside it.
func bundleObjectValues() []string {
	data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("apiVersion: v1\nkind: CustomResourceDefinition\n", 2000)))
	big := base64.StdEncoding.EncodeToString(make([]byte, 3*base64Chunk+5)) // padded, past several chunks
	// Padding at the end of a chunk that is not the last.
	midPad := strings.Repeat("A", base64Chunk-2) + "==" + "AAAA"
	return []string{
		`{"data":"` + data + `"}`,
		`{"data":"` + big + `"}`,
		`{"data":""}`,
		`{"data":"QQ=="}`,
		`{"data":"QQ="}`,
		`{"data":"QQ"}`,
		`{"data":"QQ==QQ=="}`,
		`{"data":"` + midPad + `"}`,
		`{"data":"` + strings.Repeat("A", base64Chunk) + `"}`,
		`{"data":"` + strings.Repeat("A", base64Chunk+4) + `"}`,
		`{"data":"` + strings.Repeat("A", base64Chunk+1) + `"}`,
		`{"data":"QUJD\nREVG"}`,
		`{"data":"QUJD\r\nREVG"}`,
		`{"data":"QUJD` + "\n" + `REVG"}`,
		`{"data":"QUJD\u0044"}`,
		`{"data":"QU JD"}`,
		`{"data":"QU-_"}`,
		`{"data":"Ã©AA"}`,
		`{"data":"QUJD","data":"!!"}`,
		`{"data":"!!","data":"QUJD"}`,
		`{"data":"QUJD","ref":"x"}`,
		`{"Data":"QUJD"}`,
		`{"data":null}`,
		`{"data":12}`,
		`{"data":["QUJD"]}`,
		`{"data":"QUJD"} `,
		` {"data":"QUJD"}`,
		`{"data": "QUJD"}`,
		`{}`,
		`null`,
		`"QUJD"`,
		`{"data":"QUJD"`,
		``,
	}
}

// TestBundleObjectDecodes checks that decodeProperty's verdict on an
// olm.bundle.object value, and its error, are those of json.Unmarshal
// into operator-registry's type, which property.Parse uses.
func TestBundleObjectDecodes(t *testing.T) {
	for i, value := range bundleObjectValues() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkBundleObject(t, []byte(value))
		})
	}
}

// FuzzBundleObject checks decodeProperty against json.Unmarshal on
// arbitrary olm.bundle.object values.
func FuzzBundleObject(f *testing.F) {
	for _, v := range bundleObjectValues() {
		if len(v) < 1<<10 { // the fuzzer's mutations stall on larger seeds
			f.Add([]byte(v))
		}
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		checkBundleObject(t, value)
	})
}

func checkBundleObject(t *testing.T, value []byte) {
	t.Helper()
	got, err := decodeProperty(property.Property{Type: property.TypeBundleObject, Value: value})
	want := "is missing"
	if len(value) > 0 {
		want = ""
		if err := json.Unmarshal(value, &property.BundleObject{}); err != nil {
			want = fmt.Sprintf("does not decode (%v)", fbc.InAuthorsWords(err))
		}
	}
	switch {
	case want == "" && err != nil:
		t.Errorf("%.80q: %v, json.Unmarshal decodes it", value, err)
	case want != "" && (err == nil || err.Error() != want):
		t.Errorf("%.80q: error %v, want %s", value, err, want)
	case err == nil:
		if _, ok := got.(*property.BundleObject); !ok {
			t.Errorf("%.80q decodes to %T", value, got)
		}
	}
}

// TestBundleObjectGarbage checks that a valid bundle object of megabytes
// is checked without a copy of its data: such objects are most of the
// bytes of catalogs that carry their CRDs, and decoding them was most of
// their build's garbage.
func TestBundleObjectGarbage(t *testing.T) {
	const size = 4 << 20
	value := []byte(`{"data":"` + base64.StdEncoding.EncodeToString(make([]byte, size)) + `"}`)
	p := property.Property{Type: property.TypeBundleObject, Value: value}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := decodeProperty(p); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n >= size/16 {
		t.Errorf("checking a bundle object of %d bytes allocated %d bytes", size, n)
	}
}
