package grpcapi_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/catalogd/catalogd/internal/grpcapi"
)

// twoVersions returns the demo catalog and a copy in which aurora-cache's
// default channel is fast and a bundle of it is gone from the candidate
// channel: two versions of one catalog whose answers differ.
func twoVersions(t *testing.T) (v1, v2 string) {
	t.Helper()
	v2 = filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(v2, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(v2, "aurora-cache", "catalog.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "defaultChannel: stable", "defaultChannel: fast", 1)
	if edited == string(b) {
		t.Fatal("the demo's aurora-cache no longer says defaultChannel: stable; edit the test")
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	return demoDir, v2
}

// entryKeys are a catalog's channel entries as ListBundles must send them:
// by channel, package and bundle name.
func entryKeys(t *testing.T, dir string) []string {
	t.Helper()
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, ch := range cfg.Channels {
		for _, e := range ch.Entries {
			keys = append(keys, ch.Name+"\x00"+ch.Package+"\x00"+e.Name)
		}
	}
	slices.Sort(keys)
	return keys
}

func listKeys(t *testing.T, s grpc.ServerStreamingClient[api.Bundle]) ([]string, error) {
	t.Helper()
	var keys []string
	for {
		b, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return keys, err
		}
		keys = append(keys, b.GetChannelName()+"\x00"+b.GetPackageName()+"\x00"+b.GetCsvName())
	}
}

// TestListBundlesStreamsOneVersion swaps the catalog while a ListBundles
// stream is half sent (the server is held after its first message): the
// stream goes on with the version it started with, whole and in order,
// and the next stream sees the new version.
func TestListBundlesStreamsOneVersion(t *testing.T) {
	v1, v2 := twoVersions(t)
	// Drop a channel entry from v2, so that the two lists differ in length.
	dropCandidate(t, v2)
	st := newStore(t, map[string]string{"demo": v1})
	sent := make(chan struct{})
	resume := make(chan struct{})
	var first atomic.Bool
	hold := grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod != api.Registry_ListBundles_FullMethodName || !first.CompareAndSwap(false, true) {
			return handler(srv, ss)
		}
		return handler(srv, &heldStream{ServerStream: ss, sent: sent, resume: resume})
	})
	addr := serve(t, st, grpcapi.Options{ServerOptions: []grpc.ServerOption{hold}})
	r := registry(dial(t, addr, "demo"))
	ctx := context.Background()

	stream, err := r.ListBundles(ctx, &api.ListBundlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	index(t, st, "demo", v2)
	close(resume)
	got, err := listKeys(t, stream)
	if err != nil {
		t.Fatal(err)
	}
	if want := entryKeys(t, v1); !slices.Equal(got, want) {
		t.Errorf("the stream begun before the swap sent %d bundles, want the %d of the first version in order:\n got %q\nwant %q", len(got), len(want), got, want)
	}
	after, err := r.ListBundles(ctx, &api.ListBundlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, err = listKeys(t, after)
	if err != nil {
		t.Fatal(err)
	}
	if want := entryKeys(t, v2); !slices.Equal(got, want) {
		t.Errorf("a stream begun after the swap sent %d bundles, want the %d of the second version", len(got), len(want))
	}
}

// dropCandidate removes aurora-cache's candidate channel from the catalog
// in dir.
func dropCandidate(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "aurora-cache", "catalog.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	kept := slices.DeleteFunc(slices.Clone(docs), func(doc string) bool {
		return strings.Contains(doc, "schema: olm.channel") && strings.Contains(doc, "name: candidate")
	})
	if len(kept) != len(docs)-1 {
		t.Fatalf("found %d candidate channels of aurora-cache to drop, want 1; edit the test", len(docs)-len(kept))
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// heldStream tells sent after its first message and sends no other until
// resume is closed.
type heldStream struct {
	grpc.ServerStream
	sent, resume chan struct{}
	n            int
}

func (h *heldStream) SendMsg(m any) error {
	if h.n == 1 {
		close(h.sent)
		<-h.resume
	}
	h.n++
	return h.ServerStream.SendMsg(m)
}

// TestSwapUnderParallelCalls swaps a catalog back and forth between two
// versions while clients ask it: every answer is whole from one version or
// the other (equal to the answer of a server holding only that version),
// and no call fails.
func TestSwapUnderParallelCalls(t *testing.T) {
	v1, v2 := twoVersions(t)
	ctx := context.Background()
	type call func(api.RegistryClient) (proto.Message, error)
	calls := map[string]call{
		"GetPackage": func(r api.RegistryClient) (proto.Message, error) {
			return r.GetPackage(ctx, &api.GetPackageRequest{Name: "aurora-cache"})
		},
		"GetDefaultBundleThatProvides": func(r api.RegistryClient) (proto.Message, error) {
			return r.GetDefaultBundleThatProvides(ctx, &api.GetDefaultProviderRequest{Group: "cache.aurora.example.com", Version: "v1", Kind: "CacheCluster"})
		},
	}
	want := map[string][2]proto.Message{}
	for i, dir := range []string{v1, v2} {
		r := registry(dial(t, serve(t, newStore(t, map[string]string{"demo": dir}), grpcapi.Options{}), "demo"))
		for name, c := range calls {
			m, err := c(r)
			if err != nil {
				t.Fatalf("%s of version %d: %v", name, i+1, err)
			}
			w := want[name]
			w[i] = m
			want[name] = w
		}
	}
	for name, w := range want {
		if proto.Equal(w[0], w[1]) {
			t.Fatalf("%s answers the same from both versions: the test would not see a mixed answer", name)
		}
	}

	st := newStore(t, map[string]string{"demo": v1})
	r := registry(dial(t, serve(t, st, grpcapi.Options{}), "demo"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var answered [2]atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for name, c := range calls {
					m, err := c(r)
					if err != nil {
						t.Errorf("%s during swaps: %v", name, err)
						return
					}
					switch {
					case proto.Equal(m, want[name][0]):
						answered[0].Add(1)
					case proto.Equal(m, want[name][1]):
						answered[1].Add(1)
					default:
						t.Errorf("%s during swaps answered neither version's answer: %v", name, m)
						return
					}
				}
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 6 || (answered[0].Load() == 0 || answered[1].Load() == 0) && time.Now().Before(deadline); i++ {
		index(t, st, "demo", []string{v2, v1}[i%2])
	}
	close(stop)
	wg.Wait()
	if answered[0].Load() == 0 || answered[1].Load() == 0 {
		t.Errorf("answers from version 1: %d, from version 2: %d; want both seen", answered[0].Load(), answered[1].Load())
	}
}
