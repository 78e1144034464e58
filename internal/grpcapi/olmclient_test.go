package grpcapi_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/catalogd/catalogd/internal/grpcapi"
)

// TestOLMClient reads the demo catalog through catalogd with
// operator-registry's own client (pkg/client), as OLM v0's catalog
// operator reads a registry pod: health, packages, channel heads, the
// bundle that replaces one, the default provider of an API, and every
// bundle listed. The expected answers are worked out from the catalog's
// blobs with operator-registry's declcfg.
func TestOLMClient(t *testing.T) {
	addr := serve(t, newStore(t, map[string]string{"demo": demoDir}), grpcapi.Options{})
	c := client.NewClientFromConn(dial(t, addr, "demo"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if ok, err := c.HealthCheck(ctx, 10*time.Second); err != nil || !ok {
		t.Fatalf("HealthCheck: %v, %v", ok, err)
	}
	cfg, err := declcfg.LoadFS(ctx, os.DirFS(demoDir))
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	for _, ch := range cfg.Channels {
		entries += len(ch.Entries)
		head := headOf(ch)
		b, err := c.GetBundleInPackageChannel(ctx, ch.Package, ch.Name)
		if err != nil {
			t.Fatalf("GetBundleInPackageChannel(%s, %s): %v", ch.Package, ch.Name, err)
		}
		if b.GetCsvName() != head {
			t.Errorf("head of %s/%s: got %s, want %s", ch.Package, ch.Name, b.GetCsvName(), head)
		}
		for _, e := range ch.Entries {
			if e.Replaces == "" {
				continue
			}
			b, err := c.GetReplacementBundleInPackageChannel(ctx, e.Replaces, ch.Package, ch.Name)
			if err != nil {
				t.Fatalf("GetReplacementBundleInPackageChannel(%s): %v", e.Replaces, err)
			}
			if !replacesOrSkips(ch, b.GetCsvName(), e.Replaces) {
				t.Errorf("the replacement of %s in %s/%s is %s, which neither replaces nor skips it", e.Replaces, ch.Package, ch.Name, b.GetCsvName())
			}
		}
	}
	for _, p := range cfg.Packages {
		got, err := c.GetPackage(ctx, p.Name)
		if err != nil {
			t.Fatalf("GetPackage(%s): %v", p.Name, err)
		}
		if got.GetDefaultChannelName() != p.DefaultChannel {
			t.Errorf("default channel of %s: got %s, want %s", p.Name, got.GetDefaultChannelName(), p.DefaultChannel)
		}
	}
	it, err := c.ListBundles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for b := it.Next(); b != nil; b = it.Next() {
		listed++
		ch := channelOf(cfg, b.GetPackageName(), b.GetChannelName())
		if ch == nil || !slices.ContainsFunc(ch.Entries, func(e declcfg.ChannelEntry) bool { return e.Name == b.GetCsvName() }) {
			t.Errorf("ListBundles sent %s in %s/%s, which that channel does not list", b.GetCsvName(), b.GetPackageName(), b.GetChannelName())
		}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if listed != entries {
		t.Errorf("ListBundles sent %d bundles, want one per channel entry: %d", listed, entries)
	}
	// lighthouse-metrics alone provides v1 MetricsEndpoint of the core group.
	b, err := c.GetBundleThatProvides(ctx, "", "v1", "MetricsEndpoint")
	if err != nil {
		t.Fatal(err)
	}
	if want := headOf(*channelOf(cfg, "lighthouse-metrics", "stable-v3")); b.GetCsvName() != want {
		t.Errorf("default provider of v1 MetricsEndpoint: got %s, want %s", b.GetCsvName(), want)
	}
	if _, err := c.GetPackage(ctx, "no-such-package"); status.Code(err) != codes.Unknown || status.Convert(err).Message() != `package "no-such-package" not found` {
		t.Errorf("GetPackage of an unknown package: %v", err)
	}
}

// headOf is the entry of ch that no other entry replaces or skips.
func headOf(ch declcfg.Channel) string {
	for _, e := range ch.Entries {
		if !slices.ContainsFunc(ch.Entries, func(o declcfg.ChannelEntry) bool {
			return o.Replaces == e.Name || slices.Contains(o.Skips, e.Name)
		}) {
			return e.Name
		}
	}
	return ""
}

func replacesOrSkips(ch declcfg.Channel, bundle, replaced string) bool {
	return slices.ContainsFunc(ch.Entries, func(e declcfg.ChannelEntry) bool {
		return e.Name == bundle && (e.Replaces == replaced || slices.Contains(e.Skips, replaced))
	})
}

func channelOf(cfg *declcfg.DeclarativeConfig, pkg, name string) *declcfg.Channel {
	for i, ch := range cfg.Channels {
		if ch.Package == pkg && ch.Name == name {
			return &cfg.Channels[i]
		}
	}
	return nil
}
