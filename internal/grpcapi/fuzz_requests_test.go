package grpcapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/catalogd/catalogd/internal/grpcapi"
)

// FuzzRequests asks the demo catalog for bundles and replacements by any
// names: each answer is a bundle of the names asked, or the registry's own
// error for an unknown name (code Unknown), never an internal error or a
// panic.
func FuzzRequests(f *testing.F) {
	for _, seed := range [][3]string{
		{"aurora-cache", "stable", "aurora-cache.v1.3.0"}, {"aurora-cache", "stable", "aurora-cache.v1.1.0"},
		{"", "", ""}, {"aurora-cache", "nope", "x"}, {"quarry-db", "v2", "'; DROP TABLE bundles; --"}, {"%", "_", "\x00"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	srv := grpcapi.New(newStore(f, map[string]string{"demo": demoDir}), grpcapi.Options{})
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(":authority", "demo.catalogd:50051"))
	f.Fuzz(func(t *testing.T, pkg, channel, name string) {
		check := func(method string, b *api.Bundle, err error, notFound ...string) {
			if err != nil {
				msg := status.Convert(err).Message()
				if status.Code(err) != codes.Unknown || !strings.Contains(msg, "not found") && !strings.Contains(msg, "no entry found") {
					t.Fatalf("%s(%q, %q, %q): %v, want a bundle or the registry's error for an unknown name", method, pkg, channel, name, err)
				}
				return
			}
			if b.GetPackageName() != pkg || b.GetChannelName() != channel {
				t.Fatalf("%s(%q, %q, %q) answered %s of %s/%s", method, pkg, channel, name, b.GetCsvName(), b.GetPackageName(), b.GetChannelName())
			}
		}
		b, err := srv.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: channel, CsvName: name})
		check("GetBundle", b, err)
		if err == nil && b.GetCsvName() != name {
			t.Fatalf("GetBundle(%q, %q, %q) answered %s", pkg, channel, name, b.GetCsvName())
		}
		b, err = srv.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{PkgName: pkg, ChannelName: channel, CsvName: name})
		check("GetBundleThatReplaces", b, err)
	})
}
