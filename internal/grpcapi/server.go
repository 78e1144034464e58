package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

// Indexes hands out a catalog's live index; *store.Store provides it.
type Indexes interface {
	Acquire(catalog string) (*store.Snapshot, error)
}

// Options bound the server. Zero fields take the defaults below.
type Options struct {
	Log logr.Logger
	// CallTimeout bounds a unary call, StreamTimeout a streaming one
	// (ListBundles of a large catalog to a slow client).
	CallTimeout, StreamTimeout time.Duration
	// MaxSendBytes bounds one message sent (a bundle with its objects).
	MaxSendBytes int
	// MaxStreams bounds the calls in flight on one connection.
	MaxStreams uint32
	// ObjectCacheBytes bounds the bundles' objects and CSVs kept made
	// (objectCache).
	ObjectCacheBytes int
	// ServerOptions are added to the server's own (tests add interceptors).
	ServerOptions []grpc.ServerOption
}

// The defaults: a bundle message holds its CSV and objects (CRDs of a few
// MiB at most in real catalogs; operator-registry's client receives 4 MiB
// by default, OLM's catalog operator more), and ListBundles of a catalog of
// thousands of bundles takes seconds on a fast client.
const (
	DefaultCallTimeout   = 30 * time.Second
	DefaultStreamTimeout = 5 * time.Minute
	DefaultMaxSendBytes  = 64 << 20
	DefaultMaxStreams    = 64
	// DefaultObjectCacheBytes holds the objects of a few hundred bundles
	// of a real catalog (community-v4.20's heads carry 20-40 KiB each).
	DefaultObjectCacheBytes = 8 << 20
	// maxRecvBytes bounds a request: names and a GVK.
	maxRecvBytes = 64 << 10
)

// Server serves operator-registry's Registry service, and the standard
// health service, for every catalog of the store on one listener; the
// catalog of a call is named by the host the client dialled (see
// catalogOf).
type Server struct {
	api.UnimplementedRegistryServer
	idx     Indexes
	log     logr.Logger
	grpc    *grpc.Server
	health  *health.Server
	objects *objectCache
}

// New returns a server answering from idx.
func New(idx Indexes, o Options) *Server {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.StreamTimeout <= 0 {
		o.StreamTimeout = DefaultStreamTimeout
	}
	if o.MaxSendBytes <= 0 {
		o.MaxSendBytes = DefaultMaxSendBytes
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.ObjectCacheBytes <= 0 {
		o.ObjectCacheBytes = DefaultObjectCacheBytes
	}
	s := &Server{idx: idx, log: o.Log, health: health.NewServer(), objects: newObjectCache(o.ObjectCacheBytes)}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxRecvBytes),
		grpc.MaxSendMsgSize(o.MaxSendBytes),
		grpc.MaxConcurrentStreams(o.MaxStreams),
		// Pings find peers gone without closing their connection.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 10 * time.Minute, Time: 2 * time.Minute, Timeout: 20 * time.Second}),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
			defer cancel()
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			return withDeadline(srv, ss, handler, o.StreamTimeout)
		}),
	}
	s.grpc = grpc.NewServer(append(append(opts, grpc.ForceServerCodecV2(codec{encoding.GetCodecV2(proto.Name)})), o.ServerOptions...)...)
	api.RegisterRegistryServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	// As opm serve does, so that grpcurl and the like find the services.
	reflection.Register(s.grpc)
	return s
}

// withDeadline runs a stream's handler with its deadline. A send blocks
// while the client's flow-control window is full, so a client that stops
// reading holds one message; gRPC unblocks that send only when the stream
// ends, which a deadline of the server's own does not do. So the handler
// runs beside the deadline, and at the deadline the call ends without
// waiting for it: its end cancels the stream, which frees the send, and
// the handler then returns (releasing its snapshot).
func withDeadline(srv any, ss grpc.ServerStream, handler grpc.StreamHandler, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ss.Context(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- handler(srv, deadlineStream{ServerStream: ss, ctx: ctx}) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// deadlineStream is a stream whose context carries the stream's deadline.
type deadlineStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (d deadlineStream) Context() context.Context { return d.ctx }

// Serve serves on l until ctx ends, then lets the calls in flight finish
// for a few seconds before cutting them.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	// "" is the server's status, which probes ask; operator-registry's
	// client asks for "Registry".
	for _, service := range []string{"", "Registry", api.Registry_ServiceDesc.ServiceName} {
		s.health.SetServingStatus(service, healthpb.HealthCheckResponse_SERVING)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		s.health.Shutdown()
		done := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			s.grpc.Stop()
		}
	}()
	err := s.grpc.Serve(l)
	<-stopped
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// catalogOf names the catalog a call is for: the first label of the host
// the client dialled (its HTTP/2 :authority), so that one listener serves
// every catalog and a CatalogSource's spec.address picks one, as
// operatorhubio.catalogd-grpc.example.svc:50051 picks operatorhubio.
func catalogOf(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	auth := md.Get(":authority")
	if len(auth) == 0 || auth[0] == "" {
		return "", status.Error(codes.InvalidArgument, "no :authority: dial CATALOG.HOST:PORT, whose first label names the catalog")
	}
	host := auth[0]
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if net.ParseIP(strings.Trim(host, "[]")) != nil {
		return "", status.Errorf(codes.InvalidArgument, "dialled %s, an IP address: dial CATALOG.HOST:PORT, whose first label names the catalog", auth[0])
	}
	name, _, _ := strings.Cut(host, ".")
	return name, nil
}

// snapshot acquires the live index of the call's catalog; the caller
// releases it when the call ends, so a call finishes on the index it
// started with whatever swaps happen meanwhile.
func (s *Server) snapshot(ctx context.Context) (*store.Snapshot, error) {
	name, err := catalogOf(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.idx.Acquire(name)
	if errors.Is(err, store.ErrNotIndexed) {
		return nil, status.Errorf(codes.Unavailable, "catalog %q is not served here (unknown, or not indexed yet): the first label of the address dialled names the catalog", name)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "open catalog %q: %v", name, err)
	}
	return snap, nil
}

// internal reports a failure to read the index; errors the registry
// itself answers (unknown names) are returned as it returns them.
func (s *Server) internal(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	s.log.Error(err, "registry call failed", "call", what)
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}

// ListPackages sends every package's name, by name.
func (s *Server) ListPackages(_ *api.ListPackageRequest, stream api.Registry_ListPackagesServer) error {
	ctx := stream.Context()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.Release()
	idx, err := snap.Catalog.PackageSummaries(ctx)
	if err != nil {
		return s.internal(ctx, "list packages", err)
	}
	for _, p := range idx.Items {
		if err := stream.Send(&api.PackageName{Name: p.Name}); err != nil {
			return err
		}
	}
	return nil
}

// GetPackage answers a package with its channels by name.
func (s *Server) GetPackage(ctx context.Context, req *api.GetPackageRequest) (*api.Package, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	c := snap.Catalog
	pkg, err := c.Package(ctx, req.GetName())
	if errors.Is(err, query.ErrNotFound) {
		return nil, fmt.Errorf("package %q not found", req.GetName())
	}
	if err != nil {
		return nil, s.internal(ctx, "get package", err)
	}
	channels, err := c.Channels(ctx, pkg)
	if err != nil {
		return nil, s.internal(ctx, "get package", err)
	}
	dep, err := c.Deprecation(ctx, pkg.Name, "olm.package", "")
	if err != nil {
		return nil, s.internal(ctx, "get package", err)
	}
	return packageMessage(pkg, channels, dep), nil
}

// channelOf finds a package's channel in the list of packages kept in
// memory, answering the registry's errors for unknown names; pkgVerb is
// how the registry writes the package's name in its error (%q or %s,
// depending on the method).
func (s *Server) channelOf(ctx context.Context, c *query.Catalog, pkgName, channel, pkgVerb string) (query.PackageSummary, error) {
	idx, err := c.PackageSummaries(ctx)
	if err != nil {
		return query.PackageSummary{}, s.internal(ctx, "read packages", err)
	}
	pkg, ok := idx.Get(pkgName)
	if !ok {
		return query.PackageSummary{}, fmt.Errorf("package "+pkgVerb+" not found", pkgName)
	}
	if !slices.Contains(pkg.Channels, channel) {
		return query.PackageSummary{}, fmt.Errorf("package %q, channel %q not found", pkgName, channel)
	}
	return pkg, nil
}

// bundle answers a bundle as a channel lists it, from the index file at
// file.
func (s *Server) bundle(ctx context.Context, c *query.Catalog, file, pkg, channel, name string) (*api.Bundle, error) {
	b, err := c.ChannelBundle(ctx, pkg, channel, name)
	if err != nil {
		return nil, err
	}
	out, parts, _, err := bundleMessage(b, false)
	if err != nil {
		return nil, err
	}
	out.Object, out.CsvJson, err = s.objectsOf(ctx, c, file, b, parts)
	return out, err
}

// objectsOf returns the objects and CSV of b, read from the index file at
// file, made from parts (see bundleMessage), or kept made.
func (s *Server) objectsOf(ctx context.Context, c *query.Catalog, file string, b query.ChannelBundle, parts objectParts) ([]string, string, error) {
	pkg, name := b.Package, b.Bundle
	key := objectKey{file: file, pkg: pkg, bundle: name}
	if objects, csv, ok := s.objects.get(key); ok {
		return objects, csv, nil
	}
	objects, csv, err := objectsAndCSV(b, parts, func() (packageFacts, error) {
		p, err := c.Package(ctx, pkg)
		if err != nil {
			return packageFacts{}, err
		}
		icon, mediaType, err := c.Icon(ctx, pkg)
		if err != nil {
			return packageFacts{}, err
		}
		images, err := c.RelatedImages(ctx, pkg, name)
		if err != nil {
			return packageFacts{}, err
		}
		return packageFacts{RelatedImages: images, Description: p.Description, HasIcon: p.HasIcon, Icon: icon, MediaType: mediaType}, nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("bundle %q: %w", name, err)
	}
	s.objects.put(key, objects, csv)
	return objects, csv, nil
}

// GetBundle answers a bundle of a channel.
func (s *Server) GetBundle(ctx context.Context, req *api.GetBundleRequest) (*api.Bundle, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	if _, err := s.channelOf(ctx, snap.Catalog, req.GetPkgName(), req.GetChannelName(), "%q"); err != nil {
		return nil, err
	}
	b, err := s.bundle(ctx, snap.Catalog, snap.Info.Path, req.GetPkgName(), req.GetChannelName(), req.GetCsvName())
	if errors.Is(err, query.ErrNotFound) {
		return nil, fmt.Errorf("package %q, channel %q, bundle %q not found", req.GetPkgName(), req.GetChannelName(), req.GetCsvName())
	}
	if err != nil {
		return nil, s.internal(ctx, "get bundle", err)
	}
	return b, nil
}

// GetBundleForChannel answers the head of a channel.
func (s *Server) GetBundleForChannel(ctx context.Context, req *api.GetBundleInChannelRequest) (*api.Bundle, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	c := snap.Catalog
	pkg, err := s.channelOf(ctx, c, req.GetPkgName(), req.GetChannelName(), "%q")
	if err != nil {
		return nil, err
	}
	head, ok, err := c.ChannelHead(ctx, pkg.Name, req.GetChannelName())
	if err == nil && !ok {
		err = fmt.Errorf("channel %q: %w", req.GetChannelName(), query.ErrNotFound)
	}
	if err != nil {
		return nil, s.internal(ctx, "get bundle for channel", err)
	}
	b, err := s.bundle(ctx, c, snap.Info.Path, pkg.Name, req.GetChannelName(), head)
	if err != nil {
		return nil, s.internal(ctx, "get bundle for channel", err)
	}
	return b, nil
}

// GetChannelEntriesThatReplace sends the entries, of any package, that
// replace or skip a bundle.
func (s *Server) GetChannelEntriesThatReplace(req *api.GetAllReplacementsRequest, stream api.Registry_GetChannelEntriesThatReplaceServer) error {
	ctx := stream.Context()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.Release()
	entries, err := snap.Catalog.EntriesReplacing(ctx, req.GetCsvName())
	if err != nil {
		return s.internal(ctx, "get channel entries that replace", err)
	}
	out := replacingEntries(entries, req.GetCsvName())
	if len(out) == 0 {
		return fmt.Errorf("no channel entries found that replace %s", req.GetCsvName())
	}
	return sendAll(stream, out)
}

// GetBundleThatReplaces answers the bundle of a channel that replaces or
// skips a bundle (the first in the channel's order when several do; the
// registry picks any of them).
func (s *Server) GetBundleThatReplaces(ctx context.Context, req *api.GetReplacementRequest) (*api.Bundle, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	c := snap.Catalog
	if _, err := s.channelOf(ctx, c, req.GetPkgName(), req.GetChannelName(), "%s"); err != nil {
		return nil, err
	}
	replacing, err := c.BundlesReplacing(ctx, req.GetPkgName(), req.GetChannelName(), req.GetCsvName())
	if err != nil {
		return nil, s.internal(ctx, "get bundle that replaces", err)
	}
	if len(replacing) == 0 {
		return nil, fmt.Errorf("no entry found for package %q, channel %q", req.GetPkgName(), req.GetChannelName())
	}
	b, err := s.bundle(ctx, c, snap.Info.Path, req.GetPkgName(), req.GetChannelName(), replacing[0])
	if err != nil {
		return nil, s.internal(ctx, "get bundle that replaces", err)
	}
	return b, nil
}

// providing returns the registry's entries of the bundles that provide a
// GVK, of every entry or only of channel heads; a head's skips count only
// when its channel lists them.
func (s *Server) providing(ctx context.Context, c *query.Catalog, g query.GVK, heads bool) ([]*api.ChannelEntry, error) {
	entries, err := c.EntriesProviding(ctx, g, heads)
	if err != nil {
		return nil, s.internal(ctx, "find providers", err)
	}
	var out []*api.ChannelEntry
	for _, e := range entries {
		keep := func(string) (bool, error) { return true, nil }
		if heads {
			keep = func(skip string) (bool, error) { return c.InChannel(ctx, e.Package, e.Channel, skip) }
		}
		more, err := providingEntries(e, keep)
		if err != nil {
			return nil, s.internal(ctx, "find providers", err)
		}
		out = append(out, more...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no channel entries found that provide group:%q version:%q kind:%q", g.Group, g.Version, g.Kind)
	}
	return out, nil
}

// GetChannelEntriesThatProvide sends the entries of every bundle that
// provides a GVK.
func (s *Server) GetChannelEntriesThatProvide(req *api.GetAllProvidersRequest, stream api.Registry_GetChannelEntriesThatProvideServer) error {
	ctx := stream.Context()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.Release()
	out, err := s.providing(ctx, snap.Catalog, query.GVK{Group: req.GetGroup(), Version: req.GetVersion(), Kind: req.GetKind()}, false)
	if err != nil {
		return err
	}
	return sendAll(stream, out)
}

// GetLatestChannelEntriesThatProvide sends the entries of the channel
// heads that provide a GVK.
func (s *Server) GetLatestChannelEntriesThatProvide(req *api.GetLatestProvidersRequest, stream api.Registry_GetLatestChannelEntriesThatProvideServer) error {
	ctx := stream.Context()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.Release()
	out, err := s.providing(ctx, snap.Catalog, query.GVK{Group: req.GetGroup(), Version: req.GetVersion(), Kind: req.GetKind()}, true)
	if err != nil {
		return err
	}
	return sendAll(stream, out)
}

// GetDefaultBundleThatProvides answers the head of a default channel that
// provides a GVK, of the first such package by name.
func (s *Server) GetDefaultBundleThatProvides(ctx context.Context, req *api.GetDefaultProviderRequest) (*api.Bundle, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	c := snap.Catalog
	g := query.GVK{Group: req.GetGroup(), Version: req.GetVersion(), Kind: req.GetKind()}
	latest, err := s.providing(ctx, c, g, true)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(latest, func(i, j int) bool { return latest[i].PackageName < latest[j].PackageName })
	idx, err := c.PackageSummaries(ctx)
	if err != nil {
		return nil, s.internal(ctx, "get default bundle that provides", err)
	}
	for _, e := range latest {
		if pkg, ok := idx.Get(e.PackageName); !ok || e.ChannelName != pkg.DefaultChannel {
			continue
		}
		b, err := s.bundle(ctx, c, snap.Info.Path, e.PackageName, e.ChannelName, e.BundleName)
		if err != nil {
			return nil, s.internal(ctx, "get default bundle that provides", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("no entry found that provides group:%q version:%q kind:%q", g.Group, g.Version, g.Kind)
}

// ListBundles sends every bundle once per channel that lists it, by
// channel, package and name, from one version of the index: each page of
// entries is read when the previous one was sent, so the stream holds one
// page's entries and one bundle at a time however slowly the client reads.
// Each bundle is sent as appendBundle encodes it, in one buffer reused
// from bundle to bundle (the codec copies it out).
func (s *Server) ListBundles(_ *api.ListBundlesRequest, stream api.Registry_ListBundlesServer) error {
	ctx := stream.Context()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.Release()
	c := snap.Catalog
	var (
		sendErr error
		buf     []byte
	)
	err = c.EachListedBundle(ctx, func(listed query.ChannelBundle) error {
		var (
			parts       objectParts
			withObjects bool
			err         error
		)
		buf, parts, withObjects, err = appendBundle(buf[:0], listed, true)
		if err != nil {
			return err
		}
		if withObjects {
			objects, csv, err := s.objectsOf(ctx, c, snap.Info.Path, listed, parts)
			if err != nil {
				return err
			}
			buf = appendObjects(buf, objects, csv)
		}
		if sendErr = stream.SendMsg(encodedMessage(buf)); sendErr != nil {
			return sendErr
		}
		if cap(buf) > smallMessage {
			// A bundle's objects: not kept for the next bundle.
			buf = nil
		}
		return nil
	})
	if sendErr != nil {
		return sendErr
	}
	if err != nil {
		return s.internal(ctx, "list bundles", err)
	}
	return nil
}

// smallMessage is the size of encoded bundle whose buffer ListBundles
// keeps for the next one.
const smallMessage = 64 << 10

// sendAll sends each message in turn.
func sendAll[T any](stream interface{ Send(T) error }, msgs []T) error {
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return nil
}

// encodedMessage is a message already in protobuf's wire encoding, which
// codec sends as it is (ListBundles's bundles, see appendBundle).
type encodedMessage []byte

// codec is gRPC's protobuf codec, but for an encodedMessage, whose bytes
// it copies into a buffer of gRPC's pool, as the protobuf codec marshals
// into one: gRPC may write them after the send returns.
type codec struct{ encoding.CodecV2 }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(encodedMessage)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	if mem.IsBelowBufferPoolingThreshold(len(m)) {
		return mem.BufferSlice{mem.SliceBuffer(slices.Clone(m))}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(len(m))
	copy(*buf, m)
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}
