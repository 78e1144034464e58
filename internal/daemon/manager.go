//go:build manager

package daemon

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/pullsecret"
	"github.com/catalogd/catalogd/internal/reconcile"
)

// RESTConfig is the client config the flags name.
func (c ManagerConfig) RESTConfig() (*rest.Config, error) {
	if c.Kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	}
	return ctrl.GetConfig()
}

// RunManager runs `catalogd manager` until ctx ends: one controller-runtime
// manager holding the ClusterCatalog controllers beside the Core. Only the
// status writer is leader-elected: every replica syncs and serves.
//
// Start-up order is what makes a restart answer at once: the indexes on disk
// are registered, and the API's port is bound, before the manager starts;
// catalogs the cluster lists are added once the cache has synced, and only
// then is an unknown catalog name answered 404 rather than 503.
func RunManager(ctx context.Context, restCfg *rest.Config, cfg ManagerConfig, log logr.Logger) (err error) {
	// Checked first, so that a binary without the package API refuses
	// before it opens the data directory.
	var addPackageAPI func(*Core) (manager.Runnable, func() bool, error)
	if cfg.PackageAPI {
		if addPackageAPI, err = packageAPI(restCfg, cfg, log.WithName("package-api")); err != nil {
			return err
		}
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, catalogdv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("build scheme: %w", err)
		}
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsBindAddress},
		HealthProbeBindAddress:  cfg.HealthProbeAddress,
		LeaderElection:          cfg.LeaderElect,
		LeaderElectionID:        "catalogd-manager.olm.operatorframework.io",
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		// Only status writing moves with the lease; the next leader picks
		// up at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &cfg.SkipControllerNameValidation},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	if cfg.GlobalPullSecret.Name != "" || cfg.ServiceAccount.Name != "" {
		cfg.Keychain = &pullsecret.Keychain{Reader: secretReader{mgr.GetAPIReader()}, ServiceAccount: cfg.ServiceAccount,
			Global: cfg.GlobalPullSecret, Log: log.WithName("pull-secrets")}
	}
	// A process that runs the manager more than once (tests) passes a
	// registry of its own.
	cfg.Metrics = cmp.Or[prometheus.Registerer](cfg.Metrics, metrics.Registry)
	core, err := cfg.Complete(log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := core.Close(); cerr != nil {
			log.Error(cerr, "closing")
		}
	}()

	grace := cfg.ShutdownGracePeriod
	sources := reconcile.Sources{Fetcher: core.Fetcher, Secrets: mgr.GetAPIReader(), Namespace: cfg.SecretNamespace}
	runnables := []manager.Runnable{
		core.Sync,
		&manager.Server{Name: "catalog-api", Server: core.Server.HTTP, Listener: core.Server.Listener(core.Listener), ShutdownTimeout: &grace},
		&initialList{cache: mgr.GetCache(), sync: core.Sync, sources: sources},
	}
	if core.GRPC != nil {
		runnables = append(runnables, everyReplica(func(ctx context.Context) error { return core.GRPC.Serve(ctx, core.GRPCListener) }))
	}
	// Start-up ends when every catalog serves here, and the package API
	// (when on) has converted them.
	started := func() bool { return core.Sync.Ready() == nil }
	if addPackageAPI != nil {
		r, loaded, err := addPackageAPI(core)
		if err != nil {
			return err
		}
		runnables = append(runnables, r)
		started = func() bool { return core.Sync.Ready() == nil && loaded() }
	}
	if cfg.PageOutStartup {
		runnables = append(runnables, everyReplica(func(ctx context.Context) error {
			pageOutWhenReady(ctx, started, log)
			return nil
		}))
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("add %T to the manager: %w", r, err)
		}
	}
	if err := (&reconcile.Reconciler{
		Client:                  mgr.GetClient(),
		Sync:                    core.Sync,
		Catalogs:                core.Table,
		Sources:                 sources,
		BaseURL:                 cfg.ExternalBaseURL,
		MaxConcurrentReconciles: cfg.MaxConcurrentReconciles,
		Recorder:                mgr.GetEventRecorder("catalogd"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the ClusterCatalog controller: %w", err)
	}
	if err := (&reconcile.LocalSyncer{
		Client:                  mgr.GetClient(),
		Sync:                    core.Sync,
		Sources:                 sources,
		MaxConcurrentReconciles: cfg.MaxConcurrentReconciles,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the local catalog syncer: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("catalogs", func(*http.Request) error { return core.Sync.Ready() }); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}

	log.Info("starting manager", "listen", core.Listener.Addr().String(), "tls", core.Server.Scheme() == "https",
		"dataDir", cfg.DataDir, "externalBaseURL", cfg.ExternalBaseURL, "indexedOnDisk", len(core.Store.Catalogs()))
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// everyReplica is a runnable every replica runs, leader or not.
type everyReplica func(context.Context) error

func (r everyReplica) Start(ctx context.Context) error { return r(ctx) }
func (r everyReplica) NeedLeaderElection() bool        { return false }

// secretReader is pullsecret.SecretReader over controller-runtime's uncached
// API reader.
type secretReader struct{ r client.Reader }

func (s secretReader) ServiceAccount(ctx context.Context, key types.NamespacedName) (*corev1.ServiceAccount, error) {
	sa := &corev1.ServiceAccount{}
	return sa, s.r.Get(ctx, key, sa)
}

func (s secretReader) Secret(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	return secret, s.r.Get(ctx, key, secret)
}

// initialList tells the sync service every ClusterCatalog once the cache
// has synced, removes indexes whose ClusterCatalog is gone, and marks the
// catalog table loaded. It runs on every replica.
type initialList struct {
	cache interface {
		WaitForCacheSync(ctx context.Context) bool
		List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
	}
	sync    *catalogsync.Service
	sources reconcile.Sources
}

func (l *initialList) NeedLeaderElection() bool { return false }

func (l *initialList) Start(ctx context.Context) error {
	if !l.cache.WaitForCacheSync(ctx) {
		return nil // stopped before the cache synced
	}
	var list catalogdv1.ClusterCatalogList
	if err := l.cache.List(ctx, &list); err != nil {
		return fmt.Errorf("list ClusterCatalogs: %w", err)
	}
	keep := map[string]bool{}
	for i := range list.Items {
		cat := &list.Items[i]
		if cat.DeletionTimestamp.IsZero() {
			keep[cat.Name] = true
			l.sync.Set(reconcile.SpecFor(cat, l.sources))
		}
	}
	if err := l.sync.Prune(func(name, _ string) bool { return keep[name] }); err != nil {
		return err
	}
	l.sync.MarkLoaded()
	return nil
}
