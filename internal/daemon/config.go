package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/grpcapi"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/prebuilt"
	"github.com/catalogd/catalogd/internal/server"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/source/kinds"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/internal/version"
)

// Config is what both modes run with, validated.
type Config struct {
	DataDir string
	// Listen is the API's address; Listener, when set, is used instead
	// (tests pass one they opened on a free port).
	Listen                  string
	Listener                net.Listener
	TLSCertFile, TLSKeyFile string
	RegistryConfig
	SyncTimeout time.Duration
	// History is how many versions of each catalog the store keeps the
	// package digests of (store.WithHistory); 0 takes the default.
	History int
	// IncrementalIndex lets the store build a new index from the live one
	// (store.WithIncremental).
	IncrementalIndex bool
	// PageOutStartup gives back the executable's pages that start-up
	// touched once the process serves (package pageout).
	PageOutStartup bool
	// Metrics is where catalogd's own metrics are registered; nil registers
	// none.
	Metrics prometheus.Registerer
	// IndexMemory bounds what SQLite keeps per live index (the process's
	// memory budget, internal/memlimit); zero fields take the store's
	// defaults.
	IndexMemory store.Memory
	// BundleRelease is /resolve's BundleReleaseSupport when a request does
	// not say.
	BundleRelease bool
	// GRPCListen is where OLM v0's registry API listens, "" nowhere;
	// GRPCListener, when set, is used instead (tests).
	GRPCListen   string
	GRPCListener net.Listener
	// LocalSources lets sources read this machine's files beyond catalog
	// directories (git file:// repositories): `catalogd serve`, whose
	// catalogs a person names; never the manager.
	LocalSources bool
}

// RegistryConfig is how registries are reached.
type RegistryConfig struct {
	CABundle           []byte
	InsecureRegistries []string
	// Keychain supplies registry credentials; nil pulls anonymously.
	Keychain authn.Keychain
	// PullTimeout bounds one image pull as a whole; zero means
	// unpack.DefaultPullTimeout.
	PullTimeout time.Duration
	// MaxCatalogBytes bounds the bytes of files one fetch writes
	// (unpack.Options.MaxTotalBytes); zero means its default.
	MaxCatalogBytes int64
	// PrebuiltIndex looks for the index published beside a catalog image
	// (package prebuilt) before building one.
	PrebuiltIndex bool
}

// kinds is what fetches each kind of source in this configuration, with
// one pull timeout, one CA bundle and one set of limits for all, unpacking
// under tempDir. local lets git read repositories on this machine
// (file://): for a person's own commands, never the manager, where a
// ClusterCatalog must not read the node's files.
func (c RegistryConfig) kinds(tempDir string, local bool, log logr.Logger) (kinds.Kinds, error) {
	unpacker, err := unpack.New(unpack.Options{
		Keychain:           c.Keychain,
		CABundle:           c.CABundle,
		InsecureRegistries: c.InsecureRegistries,
		UserAgent:          "catalogd/" + version.String(),
		PullTimeout:        c.PullTimeout,
		MaxTotalBytes:      c.MaxCatalogBytes,
		Logger:             log.WithName("unpack"),
	})
	if err != nil {
		return kinds.Kinds{}, err
	}
	git := gitsource.New(gitsource.Options{
		Extractor:   unpacker,
		PullTimeout: c.PullTimeout,
		CABundle:    c.CABundle,
		AllowLocal:  local,
		Log:         log.WithName("git"),
	})
	web, err := httpsource.New(httpsource.Options{
		Extractor:   unpacker,
		PullTimeout: c.PullTimeout,
		CABundle:    c.CABundle,
		Log:         log.WithName("http"),
	})
	if err != nil {
		return kinds.Kinds{}, err
	}
	k := kinds.Kinds{Images: unpacker, Git: git, HTTP: web, TempDir: tempDir}
	if c.PrebuiltIndex {
		k.Prebuilt = prebuilt.New(unpacker, prebuilt.Options{Version: version.String()})
	}
	return k, nil
}

// Catalog is one --catalog of `catalogd serve`, with its --priority and
// --label values.
type Catalog struct {
	Name string
	// Value is as given; Source is what it names (source.Parse).
	Value    string
	Source   source.Spec
	Priority int32
	// Labels stand in for a ClusterCatalog's labels, for resolve's
	// catalog selector; nil when none is given.
	Labels map[string]string
}

// ServeConfig is the validated command line of `catalogd serve`.
type ServeConfig struct {
	Config
	Catalogs []Catalog // in command-line order
	Watch    bool
	// PollInterval is how often every source that is not a directory is
	// asked again for new content; 0 never.
	PollInterval time.Duration
}

// ManagerConfig is the validated command line of `catalogd manager`.
type ManagerConfig struct {
	Config
	managerSettings
	// ExternalBaseURL has no trailing slash.
	ExternalBaseURL  string
	GlobalPullSecret types.NamespacedName
	// ServiceAccount's imagePullSecrets are used for pulls before the
	// global pull secret, as for a pod running as that account.
	ServiceAccount types.NamespacedName
	// SkipControllerNameValidation lets one process run the manager more
	// than once (tests); controller names are otherwise process-global.
	SkipControllerNameValidation bool
}

// Core is what both modes run: the index store, the catalog table, the
// sync service keeping one in the other, what fetches each kind of source,
// the API and the HTTP server with its listener. The modes differ only in
// what they tell the sync service to serve.
type Core struct {
	Store    *store.Store
	Table    *catalogs.Table
	Sync     *catalogsync.Service
	API      http.Handler
	Server   *server.Server
	Listener net.Listener
	// GRPC serves OLM v0's registry API on GRPCListener; both nil when
	// it is off.
	GRPC         *grpcapi.Server
	GRPCListener net.Listener

	kinds kinds.Kinds
}

// Complete opens the data directory and wires every part once. The indexes
// kept on disk are in the catalog table when it returns, so that they
// answer from the first request; what feeds the sync service is the mode's
// business. Close releases what Complete opened.
func (c Config) Complete(log logr.Logger) (_ *Core, err error) {
	core := &Core{}
	defer func() {
		if err != nil {
			_ = core.Close()
		}
	}()
	state, err := datadir.Open(c.DataDir, datadir.Data)
	if err != nil {
		return nil, err
	}
	if state == datadir.Adopted {
		log.Info("adopted the data directory of an earlier catalogd", "dataDir", c.DataDir, "layout", datadir.Layout)
	}
	// Unpacked images are only needed while they are indexed; whatever is
	// left was left by a stopped catalogd.
	removed, err := datadir.RemoveDataLeftovers(c.DataDir)
	if err != nil {
		return nil, err
	}
	if removed > 0 {
		log.V(1).Info("removed unpack directories a stopped catalogd left", "count", removed)
	}
	if core.Store, err = store.New(filepath.Join(c.DataDir, datadir.IndexDir), log.WithName("index"), store.WithHistory(c.History), store.WithMemory(c.IndexMemory),
		store.WithIncremental(c.IncrementalIndex)); err != nil {
		return nil, fmt.Errorf("open index store: %w", err)
	}
	if core.kinds, err = c.RegistryConfig.kinds(filepath.Join(c.DataDir, datadir.UnpackDir), c.LocalSources, log); err != nil {
		return nil, err
	}
	core.Table = catalogs.NewTable()
	core.Sync = catalogsync.New(catalogsync.Options{
		Store:       core.Store,
		Table:       core.Table,
		Log:         log.WithName("sync"),
		SyncTimeout: c.SyncTimeout,
		DataDir:     c.DataDir,
		Metrics:     c.Metrics,
	})
	core.Sync.Load()
	core.API = httpapi.New(core.Table, core.Store, httpapi.Options{Log: log.WithName("http"), Metrics: c.Metrics, BundleReleaseSupport: c.BundleRelease})
	if core.Server, err = server.New(server.Options{
		API:         core.API,
		Ready:       core.Sync.Ready,
		TLSCertFile: c.TLSCertFile,
		TLSKeyFile:  c.TLSKeyFile,
		Log:         log.WithName("http"),
	}); err != nil {
		return nil, err
	}
	core.Listener = c.Listener
	if core.Listener == nil {
		if core.Listener, err = net.Listen("tcp", c.Listen); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("listen on %s: the address is in use (another catalogd, perhaps `make run`?); serve on another with --listen, or make run LISTEN=127.0.0.1:8081", c.Listen)
			}
			return nil, fmt.Errorf("listen on %s: %w", c.Listen, err)
		}
	}
	if core.GRPCListener = c.GRPCListener; core.GRPCListener == nil && c.GRPCListen != "" {
		if core.GRPCListener, err = net.Listen("tcp", c.GRPCListen); err != nil {
			return nil, fmt.Errorf("listen on %s (--grpc-listen): %w", c.GRPCListen, err)
		}
	}
	if core.GRPCListener != nil {
		core.GRPC = grpcapi.New(core.Store, grpcapi.Options{Log: log.WithName("grpc")})
	}
	return core, nil
}

// Fetcher is the fetcher of spec with creds, unpacking into the data
// directory: the one place this process chooses a kind of source
// (reconcile.FetcherFunc).
func (c *Core) Fetcher(spec source.Spec, creds source.Credentials) (catalogsync.Fetcher, error) {
	return c.kinds.Fetcher(spec, creds)
}

// Close closes the listeners, unless serving closed them already, and the
// index store.
func (c *Core) Close() error {
	var errs []error
	for _, l := range []net.Listener{c.Listener, c.GRPCListener} {
		if l == nil {
			continue
		}
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("close listener %s: %w", l.Addr(), err))
		}
	}
	if c.Store != nil {
		if err := c.Store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close index store: %w", err))
		}
	}
	return errors.Join(errs...)
}
