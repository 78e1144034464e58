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
		if got := normalized(p); got != want {
			t.Fatalf("normalized(%q) = %q, want %q", value, got, want)
		}
	})
}
