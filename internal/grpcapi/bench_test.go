package grpcapi_test

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"

	"github.com/catalogd/catalogd/internal/grpcapi"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// BenchmarkRegistryVsOPM times every method of the Registry service on
// $CATALOGD_BENCH_CATALOG (make bench's 8,000 bundles, whose WideGVK 95
// bundles provide) answered by catalogd and by `opm serve` (bin/opm or
// $OPM), one call at a time over loopback, and reports each method's
// median (p50-ms); catalogd-uncached keeps no bundle's objects made (see
// objectCache), as on the first call of each bundle. The questions are taken from the catalog: the package
// of the default provider of WideGVK, its channel and head, an entry of it
// that replaces another.
func BenchmarkRegistryVsOPM(b *testing.B) {
	dir := os.Getenv("CATALOGD_BENCH_CATALOG")
	if dir == "" {
		b.Skip("set CATALOGD_BENCH_CATALOG to a catalog directory (make bench generates tmp/bench-catalog)")
	}
	opm := findOPM(b)
	servers := map[string]api.RegistryClient{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Go(func() {
		start := time.Now()
		c := registry(startOPM(b, opm, dir))
		b.Logf("opm serve answered %s after it started (its cache built)", time.Since(start).Round(time.Millisecond))
		mu.Lock()
		servers["opm"] = c
		mu.Unlock()
	})
	wg.Go(func() {
		start := time.Now()
		st := newStore(b, map[string]string{"bench": dir})
		b.Logf("catalogd indexed the catalog in %s", time.Since(start).Round(time.Millisecond))
		c := registry(dial(b, serve(b, st, grpcapi.Options{}), "bench", grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20))))
		// The same with no bundle's objects kept made: every call makes
		// them, as the first call of a bundle does.
		uncached := registry(dial(b, serve(b, st, grpcapi.Options{ObjectCacheBytes: 1}), "bench", grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20))))
		mu.Lock()
		servers["catalogd"], servers["catalogd-uncached"] = c, uncached
		mu.Unlock()
	})
	wg.Wait()

	ctx := context.Background()
	g := fbcgen.WideGVK
	head, err := servers["catalogd"].GetDefaultBundleThatProvides(ctx, &api.GetDefaultProviderRequest{Group: g.Group, Version: g.Version, Kind: g.Kind})
	if err != nil {
		b.Fatal(err)
	}
	pkg, channel := head.GetPackageName(), head.GetChannelName()
	replaced := ""
	entries, err := servers["catalogd"].GetChannelEntriesThatProvide(ctx, &api.GetAllProvidersRequest{Group: g.Group, Version: g.Version, Kind: g.Kind})
	if err != nil {
		b.Fatal(err)
	}
	all, err := drain(entries)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range all {
		if e.GetPackageName() == pkg && e.GetChannelName() == channel && e.GetReplaces() != "" {
			replaced = e.GetReplaces()
			break
		}
	}
	if replaced == "" {
		b.Fatalf("no entry of %s/%s replaces another", pkg, channel)
	}

	methods := []struct {
		name string
		call func(api.RegistryClient) error
	}{
		{"ListPackages", func(r api.RegistryClient) error {
			return drainErr(r.ListPackages(ctx, &api.ListPackageRequest{}))
		}},
		{"GetPackage", func(r api.RegistryClient) error {
			_, err := r.GetPackage(ctx, &api.GetPackageRequest{Name: pkg})
			return err
		}},
		{"GetBundle", func(r api.RegistryClient) error {
			_, err := r.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: channel, CsvName: head.GetCsvName()})
			return err
		}},
		{"GetBundleForChannel", func(r api.RegistryClient) error {
			//lint:ignore SA1019 deprecated, but OLM v0's clients still call it
			_, err := r.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: channel})
			return err
		}},
		{"GetChannelEntriesThatReplace", func(r api.RegistryClient) error {
			return drainErr(r.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: replaced}))
		}},
		{"GetBundleThatReplaces", func(r api.RegistryClient) error {
			_, err := r.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{CsvName: replaced, PkgName: pkg, ChannelName: channel})
			return err
		}},
		{"GetChannelEntriesThatProvide", func(r api.RegistryClient) error {
			return drainErr(r.GetChannelEntriesThatProvide(ctx, &api.GetAllProvidersRequest{Group: g.Group, Version: g.Version, Kind: g.Kind}))
		}},
		{"GetLatestChannelEntriesThatProvide", func(r api.RegistryClient) error {
			return drainErr(r.GetLatestChannelEntriesThatProvide(ctx, &api.GetLatestProvidersRequest{Group: g.Group, Version: g.Version, Kind: g.Kind}))
		}},
		{"GetDefaultBundleThatProvides", func(r api.RegistryClient) error {
			_, err := r.GetDefaultBundleThatProvides(ctx, &api.GetDefaultProviderRequest{Group: g.Group, Version: g.Version, Kind: g.Kind})
			return err
		}},
		{"ListBundles", func(r api.RegistryClient) error {
			return drainErr(r.ListBundles(ctx, &api.ListBundlesRequest{}))
		}},
	}
	for _, m := range methods {
		for _, server := range []string{"opm", "catalogd", "catalogd-uncached"} {
			b.Run(m.name+"/"+server, func(b *testing.B) {
				r := servers[server]
				if err := m.call(r); err != nil { // warm
					b.Fatal(err)
				}
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if err := m.call(r); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
			})
		}
	}
}

func drain[T any](s grpc.ServerStreamingClient[T]) ([]*T, error) {
	var out []*T
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func drainErr[T any](s grpc.ServerStreamingClient[T], err error) error {
	if err != nil {
		return err
	}
	_, err = drain(s)
	return err
}
