package grpcapi

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/property"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/catalogd/catalogd/internal/query"
)

// FuzzCatalogOf: whatever :authority a client sends, catalogOf names a
// catalog that is the first label of its host, or refuses it with
// InvalidArgument; it never panics.
func FuzzCatalogOf(f *testing.F) {
	for _, seed := range []string{"demo.catalogd:50051", "demo", "demo:50051", "127.0.0.1:50051", "[::1]:50051", "::1", "",
		"a.b.c.d", ".leading:1", "operatorhubio.catalogd-catalogs.svc:50051", "[demo]:1", "x:y:z"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, authority string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(":authority", authority))
		name, err := catalogOf(ctx)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("catalogOf(%q): %v, want InvalidArgument", authority, err)
			}
			return
		}
		host := authority
		if h, _, err := net.SplitHostPort(authority); err == nil {
			host = h
		}
		if strings.Contains(name, ".") || !strings.HasPrefix(host, name) {
			t.Fatalf("catalogOf(%q) = %q, want the first label of %q", authority, name, host)
		}
	})
}

// FuzzNormalized: taking a compact value as it is gives what encoding it
// again, as operator-registry normalizes property values, gives.
func FuzzNormalized(f *testing.F) {
	for _, seed := range []string{`{"group":"a","kind":"B","version":"v1"}`, `{"a": 1}`, `"x y"`, `{"s":"a\"b c"}`, `[1,2 ,3]`,
		`{"html":"<a&b>"}`, "{\"ls\":\"\u2028\"}", `{abc`, ``, `"unterminated`, `{"a":"\\"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		p := query.Property{Type: "t", Value: json.RawMessage(value)}
		want := value
		if n, err := property.Build(&property.Property{Type: p.Type, Value: p.Value}); err == nil {
			want = string(n.Value)
		}
		if got := string(normalizedBytes(p)); got != want {
			t.Fatalf("normalizedBytes(%q) = %q, want %q", value, got, want)
		}
	})
}

// FuzzDecodeFlat: gvkOf and packageVersion decode an olm.gvk or
// olm.package value as encoding/json does, whether flatStrings reads the
// value or declines it: the same fields, and an error exactly when
// encoding/json gives one.
func FuzzDecodeFlat(f *testing.F) {
	for _, seed := range []string{`{"group":"a.io","kind":"B","version":"v1"}`, `{"packageName":"p","version":"1.0.0"}`,
		`{"packageName":"p","version":"1.0.0","release":"2"}`, `{}`, `{"group":"a","group":"b"}`, `{"Group":"x"}`, `{"GROUP":"x","group":"y"}`,
		`{"kind":"\u212a"}`, `{"\u212aind":"x"}`, `{"group":"a\"b"}`, `{"group":"a\\u00e9"}`, `{"group":1}`, `{"extra":{"a":"b"},"kind":"K"}`,
		`{"group":"a" ,"kind":"K"}`, `{"group":"a"}x`, `{"group":"a",}`, `{"group":"` + "\xff" + `"}`, `{"group":"` + "\t" + `"}`, `null`, `[]`, ``, `{`,
		`{"version":"v1","kind":"K","group":"g","other":"o"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		var wantGVK property.GVK
		group, version, kind, gotErr := gvkOf([]byte(value))
		wantErr := json.Unmarshal([]byte(value), &wantGVK)
		gotGVK := property.GVK{Group: string(group), Version: string(version), Kind: string(kind)}
		if (gotErr != nil) != (wantErr != nil) || gotErr == nil && gotGVK != wantGVK {
			t.Fatalf("gvkOf(%q) = %+v, %v; encoding/json: %+v, %v", value, gotGVK, gotErr, wantGVK, wantErr)
		}
		var wantPkg property.Package
		gotVersion, gotErr := packageVersion([]byte(value))
		wantErr = json.Unmarshal([]byte(value), &wantPkg)
		if (gotErr != nil) != (wantErr != nil) || gotErr == nil && string(gotVersion) != wantPkg.Version {
			t.Fatalf("packageVersion(%q) = %q, %v; encoding/json: %+v, %v", value, gotVersion, gotErr, wantPkg, wantErr)
		}
	})
}
