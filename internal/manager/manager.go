// Package manager runs `catalogd manager`: one controller-runtime manager
// holding the ClusterCatalog controllers, the catalog-sync service and the
// query API, sharing one index store and one catalog table. Only the status
// writer is leader-elected: every replica syncs and serves.
package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/controller"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/server"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Config is the command line of `catalogd manager`.
type Config struct {
	// Kubeconfig is a kubeconfig file; empty means $KUBECONFIG, the
	// in-cluster config, or ~/.kube/config, in that order.
	Kubeconfig         string
	DataDir            string
	Listen             string
	MetricsBindAddress string
	HealthProbeAddress string
	LeaderElect        bool
	LeaderElectionNS   string
	ExternalBaseURL    string
	GlobalPullSecret   types.NamespacedName
	// ServiceAccount's imagePullSecrets are used for pulls before the
	// global pull secret, as for a pod running as that account.
	ServiceAccount          types.NamespacedName
	CAFile                  string
	InsecureRegistries      []string
	TLSCertFile, TLSKeyFile string
	ShutdownGracePeriod     time.Duration
	MaxConcurrentReconciles int
	SyncTimeout             time.Duration
	// UserAgent is sent to registries.
	UserAgent string
	// SkipControllerNameValidation lets one process run the manager more
	// than once (tests); controller names are otherwise process-global.
	SkipControllerNameValidation bool
	// Metrics is where catalogd's own metrics are registered; nil means
	// controller-runtime's registry, served on --metrics-bind-address. A
	// process that runs the manager more than once (tests) passes its own.
	Metrics prometheus.Registerer

	pullSecret, account string
}

// BindFlags declares the flags of `catalogd manager` on fs, filling c.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, the in-cluster config, ~/.kube/config)")
	fs.StringVar(&c.DataDir, "data-dir", "", "directory for indexes and unpacked images (required)")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address of the query API")
	fs.StringVar(&c.TLSCertFile, "tls-cert", "", "PEM certificate of the query API (HTTPS); reloaded when the file changes")
	fs.StringVar(&c.TLSKeyFile, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", "0", `address of the Prometheus metrics endpoint; "0" disables it`)
	fs.StringVar(&c.HealthProbeAddress, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" disables it`)
	fs.BoolVar(&c.LeaderElect, "leader-elect", false, "elect a leader so that one replica writes ClusterCatalog status; every replica serves")
	fs.StringVar(&c.LeaderElectionNS, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	fs.StringVar(&c.ExternalBaseURL, "external-base-url", "", "URL clients reach the query API at; status.urls.base is this plus /catalogs/<name> (default: http(s)://<listen>)")
	fs.StringVar(&c.pullSecret, "global-pull-secret", "", "namespace/name of an image pull secret used for every catalog")
	fs.StringVar(&c.account, "service-account", "", "namespace/name of the service account whose imagePullSecrets are used for pulls (catalogd's own, in a cluster)")
	fs.StringVar(&c.CAFile, "ca-file", "", "PEM file of extra CA certificates trusted for registries")
	fs.StringSliceVar(&c.InsecureRegistries, "insecure-registry", nil, "registry host[:port] spoken to over plain HTTP (repeatable)")
	fs.DurationVar(&c.ShutdownGracePeriod, "shutdown-grace-period", server.ShutdownGrace, "how long in-flight queries may take at shutdown")
	fs.IntVar(&c.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "catalogs reconciled at once, so one slow registry delays no other catalog")
	fs.DurationVar(&c.SyncTimeout, "sync-timeout", catalogsync.DefaultSyncTimeout, "deadline of one catalog sync (resolve, pull, unpack, index)")
}

// Complete checks the parsed flags and fills in defaults that depend on
// other flags.
func (c *Config) Complete() error {
	if c.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	var err error
	if c.GlobalPullSecret, err = namespacedName("--global-pull-secret", c.pullSecret); err != nil {
		return err
	}
	if c.ServiceAccount, err = namespacedName("--service-account", c.account); err != nil {
		return err
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	if c.ExternalBaseURL == "" {
		scheme := "http://"
		if c.TLSCertFile != "" {
			scheme = "https://"
		}
		c.ExternalBaseURL = scheme + c.Listen
	}
	c.ExternalBaseURL = strings.TrimSuffix(c.ExternalBaseURL, "/")
	return nil
}

// namespacedName parses a namespace/name flag value; empty means unset.
func namespacedName(flag, v string) (types.NamespacedName, error) {
	if v == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%s %q: want namespace/name", flag, v)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// RESTConfig is the client config the flags name.
func (c *Config) RESTConfig() (*rest.Config, error) {
	if c.Kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	}
	return ctrl.GetConfig()
}

// Run runs the manager until ctx ends.
//
// Start-up order is what makes a restart answer at once: the indexes on disk
// are registered, and the API's port is bound, before the manager starts;
// catalogs the cluster lists are added once the cache has synced, and only
// then is an unknown catalog name answered 404 rather than 503.
func Run(ctx context.Context, restCfg *rest.Config, cfg Config, log logr.Logger) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, catalogdv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("build scheme: %w", err)
		}
	}

	// Unpacks left over by a crash are useless; start clean.
	tmpDir := filepath.Join(cfg.DataDir, "tmp")
	if err := os.RemoveAll(tmpDir); err != nil {
		return fmt.Errorf("clean %s: %w", tmpDir, err)
	}
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", tmpDir, err)
	}
	store, err := store.New(filepath.Join(cfg.DataDir, "index"), log.WithName("index"))
	if err != nil {
		return fmt.Errorf("open index store: %w", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error(err, "closing index store")
		}
	}()
	table := catalogs.NewTable()
	metricsRegistry := cmp.Or[prometheus.Registerer](cfg.Metrics, metrics.Registry)
	svc := catalogsync.New(catalogsync.Options{
		Store:       store,
		Table:       table,
		Log:         log.WithName("sync"),
		SyncTimeout: cfg.SyncTimeout,
		DataDir:     cfg.DataDir,
		Metrics:     metricsRegistry,
	})
	svc.Load()

	handler, err := httpapi.New(table, store, httpapi.Options{Log: log.WithName("http"), Metrics: metricsRegistry})
	if err != nil {
		return err
	}
	api, err := server.New(server.Options{
		API:         handler,
		Ready:       svc.Ready,
		TLSCertFile: cfg.TLSCertFile,
		TLSKeyFile:  cfg.TLSKeyFile,
		Log:         log.WithName("http"),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}

	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsBindAddress},
		HealthProbeBindAddress:  cfg.HealthProbeAddress,
		LeaderElection:          cfg.LeaderElect,
		LeaderElectionID:        "catalogd-manager.olm.operatorframework.io",
		LeaderElectionNamespace: cfg.LeaderElectionNS,
		// Only status writing moves with the lease; the next leader picks
		// up at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &cfg.SkipControllerNameValidation},
	})
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("create manager: %w", err)
	}

	opts := unpack.Options{
		InsecureRegistries: cfg.InsecureRegistries,
		UserAgent:          cfg.UserAgent,
		Logger:             log.WithName("unpack"),
	}
	if cfg.CAFile != "" {
		if opts.CABundle, err = os.ReadFile(cfg.CAFile); err != nil {
			return fmt.Errorf("read --ca-file: %w", err)
		}
	}
	if cfg.GlobalPullSecret.Name != "" || cfg.ServiceAccount.Name != "" {
		opts.Keychain = &pullKeychain{reader: mgr.GetAPIReader(), serviceAccount: cfg.ServiceAccount,
			global: cfg.GlobalPullSecret, log: log.WithName("pull-secrets")}
	}
	unpacker, err := unpack.New(opts)
	if err != nil {
		return fmt.Errorf("create unpacker: %w", err)
	}
	image := func(ref name.Reference) catalogsync.Fetcher {
		return catalogsync.ImageFetcher{Ref: ref, Unpacker: unpacker, TempDir: tmpDir}
	}

	grace := cfg.ShutdownGracePeriod
	runnables := []manager.Runnable{
		svc,
		&manager.Server{Name: "catalog-api", Server: api.HTTP, Listener: api.Listener(ln), ShutdownTimeout: &grace},
		&initialList{cache: mgr.GetCache(), sync: svc, image: image},
	}
	if api.Certs != nil {
		runnables = append(runnables, api.Certs)
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("add %T to the manager: %w", r, err)
		}
	}
	if err := (&controller.Reconciler{
		Client:                  mgr.GetClient(),
		Sync:                    svc,
		Catalogs:                table,
		Image:                   image,
		BaseURL:                 cfg.ExternalBaseURL,
		MaxConcurrentReconciles: cfg.MaxConcurrentReconciles,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the ClusterCatalog controller: %w", err)
	}
	if err := (&controller.LocalSyncer{
		Client:                  mgr.GetClient(),
		Sync:                    svc,
		Image:                   image,
		MaxConcurrentReconciles: cfg.MaxConcurrentReconciles,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the local catalog syncer: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("catalogs", func(*http.Request) error { return svc.Ready() }); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}

	log.Info("starting manager", "listen", ln.Addr().String(), "tls", api.Certs != nil,
		"dataDir", cfg.DataDir, "externalBaseURL", cfg.ExternalBaseURL, "indexedOnDisk", len(store.Catalogs()))
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// initialList tells the sync service every ClusterCatalog once the cache
// has synced, removes indexes whose ClusterCatalog is gone, and marks the
// catalog table loaded. It runs on every replica.
type initialList struct {
	cache interface {
		WaitForCacheSync(ctx context.Context) bool
		List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
	}
	sync  *catalogsync.Service
	image controller.ImageFetcherFunc
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
			l.sync.Set(controller.SpecFor(cat, l.image))
		}
	}
	if err := l.sync.Prune(func(name, _ string) bool { return keep[name] }); err != nil {
		return err
	}
	l.sync.MarkLoaded()
	return nil
}

// pullKeychain finds registry credentials as the kubelet does for a pod:
// the service account's imagePullSecrets first, then the global pull
// secret. It reads them on every lookup, so rotated or newly created
// secrets are used without a restart; missing ones mean anonymous pulls.
// Credentials are never logged.
type pullKeychain struct {
	reader         client.Reader
	serviceAccount types.NamespacedName
	global         types.NamespacedName
	log            logr.Logger
}

func (k *pullKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []types.NamespacedName
	if k.serviceAccount.Name != "" {
		sa := &corev1.ServiceAccount{}
		switch err := k.reader.Get(ctx, k.serviceAccount, sa); {
		case apierrors.IsNotFound(err):
			k.log.V(1).Info("service account not found; not using its imagePullSecrets", "serviceAccount", k.serviceAccount.String())
		case err != nil:
			return nil, fmt.Errorf("reading service account %s: %w", k.serviceAccount, err)
		default:
			for _, ref := range sa.ImagePullSecrets {
				names = append(names, types.NamespacedName{Namespace: sa.Namespace, Name: ref.Name})
			}
		}
	}
	if k.global.Name != "" {
		names = append(names, k.global)
	}
	var secrets []corev1.Secret
	for _, name := range names {
		secret := &corev1.Secret{}
		if err := k.reader.Get(ctx, name, secret); err != nil {
			if apierrors.IsNotFound(err) {
				k.log.V(1).Info("pull secret not found; skipping it", "secret", name.String())
				continue
			}
			return nil, fmt.Errorf("reading pull secret %s: %w", name, err)
		}
		secrets = append(secrets, *secret)
	}
	if len(secrets) == 0 {
		return authn.Anonymous, nil
	}
	kc, err := unpack.KeychainFromSecrets(ctx, secrets)
	if err != nil {
		return nil, err
	}
	return kc.Resolve(res)
}
