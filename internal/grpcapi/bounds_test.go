package grpcapi_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/catalogd/catalogd/internal/grpcapi"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// countingStream counts what a server stream sent, and records how its
// handler ended.
type countingStream struct {
	grpc.ServerStream
	msgs, bytes *atomic.Int64
}

func (c countingStream) SendMsg(m any) error {
	c.msgs.Add(1)
	if pm, ok := m.(proto.Message); ok {
		c.bytes.Add(int64(proto.Size(pm)))
	} else {
		// ListBundles sends its bundles encoded already: their bytes.
		c.bytes.Add(int64(reflect.ValueOf(m).Len()))
	}
	return c.ServerStream.SendMsg(m)
}

// TestStalledClientHoldsNoCatalog opens ListBundles on a catalog of many
// MiB and reads one bundle: the server sends what flow control lets
// through and then waits, holding one bundle rather than the catalog,
// until the stream's deadline ends it.
func TestStalledClientHoldsNoCatalog(t *testing.T) {
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 10, Bundles: 200, PropertiesPerBundle: 400, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	st := newStore(t, map[string]string{"big": dir})
	var msgs, bytes atomic.Int64
	ended := make(chan error, 1)
	count := grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, countingStream{ServerStream: ss, msgs: &msgs, bytes: &bytes})
		ended <- err
		return err
	})

	// The whole list, read by a client that keeps up, for its size.
	full, err := registry(dial(t, serve(t, st, grpcapi.Options{ServerOptions: []grpc.ServerOption{count}}), "big")).
		ListBundles(context.Background(), &api.ListBundlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	total, err := listKeys(t, full)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	all := bytes.Load()
	if all < 8<<20 {
		t.Fatalf("the catalog lists %d bytes of bundles; the test needs more than 8 MiB to tell a stalled stream from a buffered one", all)
	}
	msgs.Store(0)
	bytes.Store(0)

	r := registry(dial(t, serve(t, st, grpcapi.Options{StreamTimeout: 2 * time.Second, ServerOptions: []grpc.ServerOption{count}}), "big"))
	stalled, err := r.ListBundles(context.Background(), &api.ListBundlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stalled.Recv(); err != nil {
		t.Fatal(err)
	}
	// Wait until the server stops sending: its count holds still.
	last := int64(-1)
	await.True(t, "the server stops sending to a client that stopped reading", 10*time.Second, func() bool {
		n := msgs.Load()
		if n == last {
			return true
		}
		last = n
		time.Sleep(200 * time.Millisecond)
		return false
	})
	t.Logf("sent %d of %d bytes (%d of %d bundles) to a client that read one", bytes.Load(), all, msgs.Load(), len(total))
	if sent := bytes.Load(); sent > 2<<20 {
		t.Errorf("the server sent %d of the list's %d bytes (%d of %d bundles) to a client that read one: more than flow control lets through",
			sent, all, msgs.Load(), len(total))
	}
	// At the deadline the call ends, which frees the blocked send: the
	// handler returns (and releases its snapshot), and the client, reading
	// again, gets what was in flight and then the deadline.
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled stream's handler did not return after its deadline")
	}
	if _, err := listKeys(t, stalled); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("the stalled stream ended with %v, want its deadline", err)
	}
}

// TestBounds: what a server refuses, and what it says.
func TestBounds(t *testing.T) {
	st := newStore(t, map[string]string{"demo": demoDir})
	// ListPackages is held open until release is closed.
	release := make(chan struct{})
	hold := grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod == api.Registry_ListPackages_FullMethodName {
			<-release
		}
		return handler(srv, ss)
	})
	addr := serve(t, st, grpcapi.Options{MaxSendBytes: 2 << 10, MaxStreams: 1, ServerOptions: []grpc.ServerOption{hold}})
	ctx := context.Background()
	r := registry(dial(t, addr, "demo"))

	t.Run("message too large to send", func(t *testing.T) {
		// aurora-cache 1.3.0 carries a CSV and a CRD: more than 2 KiB.
		_, err := r.GetBundle(ctx, &api.GetBundleRequest{PkgName: "aurora-cache", ChannelName: "stable", CsvName: "aurora-cache.v1.3.0"})
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("GetBundle of a bundle over MaxSendBytes: %v, want ResourceExhausted", err)
		}
	})
	t.Run("request too large", func(t *testing.T) {
		_, err := r.GetPackage(ctx, &api.GetPackageRequest{Name: strings.Repeat("a", 100<<10)})
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("GetPackage with a name of 100 KiB: %v, want ResourceExhausted", err)
		}
	})
	t.Run("unknown catalog", func(t *testing.T) {
		_, err := registry(dial(t, addr, "nope")).GetPackage(ctx, &api.GetPackageRequest{Name: "aurora-cache"})
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), `"nope"`) {
			t.Errorf("a call dialled to catalog nope: %v, want Unavailable naming it", err)
		}
	})
	t.Run("an IP address names no catalog", func(t *testing.T) {
		conn := dial(t, addr, "demo", grpc.WithAuthority(addr))
		_, err := registry(conn).GetPackage(ctx, &api.GetPackageRequest{Name: "aurora-cache"})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("a call dialled to %s: %v, want InvalidArgument", addr, err)
		}
	})
	t.Run("streams per connection", func(t *testing.T) {
		conn := dial(t, addr, "demo")
		first, err := registry(conn).ListPackages(ctx, &api.ListPackageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// The first stream is held open: a second call on the connection
		// waits for it.
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := registry(conn).GetPackage(short, &api.GetPackageRequest{Name: "aurora-cache"}); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("a second call beside an open stream with MaxStreams 1: %v, want it to wait (DeadlineExceeded)", err)
		}
		close(release)
		if _, err := listNames(first); err != nil {
			t.Fatal(err)
		}
		if _, err := registry(conn).GetPackage(ctx, &api.GetPackageRequest{Name: "aurora-cache"}); err != nil {
			t.Errorf("a call once the stream ended: %v", err)
		}
	})
}

func listNames(s grpc.ServerStreamingClient[api.PackageName]) ([]string, error) {
	var out []string
	for {
		p, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, p.GetName())
	}
}

// TestHealth: the standard health service answers SERVING for the server
// and for the Registry service, as operator-registry's client asks.
func TestHealth(t *testing.T) {
	addr := serve(t, newStore(t, map[string]string{"demo": demoDir}), grpcapi.Options{})
	var wg sync.WaitGroup
	for _, service := range []string{"", "Registry", "api.Registry"} {
		wg.Go(func() {
			resp, err := healthpb.NewHealthClient(dial(t, addr, "demo")).Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health of %q: %v, %v", service, resp, err)
			}
		})
	}
	wg.Wait()
}
