// Package manager runs `catalogd manager`: the ClusterCatalog controller and
// the query API in one controller-runtime manager, sharing one index store
// and one catalog registry.
package manager

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
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
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/reconcile"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Config is the parsed command line of `catalogd manager`.
type Config struct {
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
	ServiceAccount      types.NamespacedName
	CAFile              string
	InsecureRegistries  []string
	ShutdownGracePeriod time.Duration
	// SkipControllerNameValidation lets one process run the manager more
	// than once (tests); controller names are otherwise process-global.
	SkipControllerNameValidation bool
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// ParseFlags parses the arguments of `catalogd manager` (without the
// subcommand name). Zap logging flags (--zap-log-level, ...) are accepted too.
func ParseFlags(args []string, output io.Writer) (Config, *zap.Options, error) {
	fs := flag.NewFlagSet("catalogd manager", flag.ContinueOnError)
	fs.SetOutput(output)
	var (
		cfg          Config
		pullSecret   string
		account      string
		insecureRegs stringList
	)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster config, ~/.kube/config)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "directory for indexes and unpacked images (required)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "address of the query API")
	fs.StringVar(&cfg.MetricsBindAddress, "metrics-bind-address", "0", `address of the metrics endpoint; "0" disables it`)
	fs.StringVar(&cfg.HealthProbeAddress, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" disables it`)
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles and serves")
	fs.StringVar(&cfg.LeaderElectionNS, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	fs.StringVar(&cfg.ExternalBaseURL, "external-base-url", "", "URL clients reach the query API at; status.urls.base is this plus /catalogs/<name> (default: http://<listen>)")
	fs.StringVar(&pullSecret, "global-pull-secret", "", "namespace/name of an image pull secret used for every catalog")
	fs.StringVar(&account, "service-account", "", "namespace/name of the service account whose imagePullSecrets are used for pulls (catalogd's own, in a cluster)")
	fs.StringVar(&cfg.CAFile, "ca-file", "", "PEM file of extra CA certificates trusted for registries")
	fs.Var(&insecureRegs, "insecure-registry", "registry host[:port] spoken to over plain HTTP (repeatable)")
	fs.DurationVar(&cfg.ShutdownGracePeriod, "shutdown-grace-period", 10*time.Second, "how long in-flight queries may take at shutdown")
	zopts := &zap.Options{}
	zopts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, nil, err
	}
	if fs.NArg() > 0 {
		return Config{}, nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if cfg.DataDir == "" {
		return Config{}, nil, errors.New("--data-dir is required")
	}
	var err error
	if cfg.GlobalPullSecret, err = namespacedName("--global-pull-secret", pullSecret); err != nil {
		return Config{}, nil, err
	}
	if cfg.ServiceAccount, err = namespacedName("--service-account", account); err != nil {
		return Config{}, nil, err
	}
	if cfg.ExternalBaseURL == "" {
		cfg.ExternalBaseURL = "http://" + cfg.Listen
	}
	cfg.ExternalBaseURL = strings.TrimSuffix(cfg.ExternalBaseURL, "/")
	cfg.InsecureRegistries = insecureRegs
	return cfg, zopts, nil
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

// Run parses args, sets up logging and runs the manager against the cluster
// of the ambient kubeconfig until ctx ends.
func Run(ctx context.Context, args []string) error {
	cfg, zopts, err := ParseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(zopts))
	ctrl.SetLogger(log)
	var restCfg *rest.Config
	if cfg.Kubeconfig != "" {
		restCfg, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	} else {
		restCfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	return RunWithConfig(ctx, restCfg, cfg, log)
}

// RunWithConfig runs the controller and the query API until ctx ends.
func RunWithConfig(ctx context.Context, restCfg *rest.Config, cfg Config, log logr.Logger) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, catalogdv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("building scheme: %w", err)
		}
	}

	// Unpacks left over by a crash are useless; start clean.
	tmpDir := filepath.Join(cfg.DataDir, "tmp")
	if err := os.RemoveAll(tmpDir); err != nil {
		return fmt.Errorf("cleaning %s: %w", tmpDir, err)
	}
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", tmpDir, err)
	}
	store, err := store.New(filepath.Join(cfg.DataDir, "index"), log.WithName("index"))
	if err != nil {
		return fmt.Errorf("opening index store: %w", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error(err, "closing index store")
		}
	}()
	cats := catalogs.NewRegistry()

	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsBindAddress},
		HealthProbeBindAddress:  cfg.HealthProbeAddress,
		LeaderElection:          cfg.LeaderElect,
		LeaderElectionID:        "catalogd-manager.olm.operatorframework.io",
		LeaderElectionNamespace: cfg.LeaderElectionNS,
		// The index lives on this replica's disk: a new leader rebuilds it,
		// so the old one may stop at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &cfg.SkipControllerNameValidation},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}

	opts := unpack.Options{
		InsecureRegistries: cfg.InsecureRegistries,
		UserAgent:          "catalogd",
		Logger:             log.WithName("unpack"),
	}
	if cfg.CAFile != "" {
		if opts.CABundle, err = os.ReadFile(cfg.CAFile); err != nil {
			return fmt.Errorf("reading --ca-file: %w", err)
		}
	}
	if cfg.GlobalPullSecret.Name != "" || cfg.ServiceAccount.Name != "" {
		opts.Keychain = &pullKeychain{reader: mgr.GetAPIReader(), serviceAccount: cfg.ServiceAccount,
			global: cfg.GlobalPullSecret, log: log.WithName("pull-secrets")}
	}
	unpacker, err := unpack.New(opts)
	if err != nil {
		return fmt.Errorf("creating unpacker: %w", err)
	}

	r := &reconcile.Reconciler{
		Client:   mgr.GetClient(),
		Store:    store,
		Registry: cats,
		Unpacker: unpacker,
		TempDir:  tmpDir,
		BaseURL:  cfg.ExternalBaseURL,
		Log:      log.WithName("reconcile"),
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ClusterCatalog controller: %w", err)
	}

	api, err := httpapi.New(cats, store, httpapi.Options{Log: log.WithName("query"), Metrics: ctrlmetrics.Registry})
	if err != nil {
		return err
	}
	if err := mgr.Add(&queryServer{addr: cfg.Listen, handler: api, grace: cfg.ShutdownGracePeriod, log: log.WithName("query")}); err != nil {
		return fmt.Errorf("adding the query API: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}

	log.Info("starting manager", "listen", cfg.Listen, "dataDir", cfg.DataDir, "externalBaseURL", cfg.ExternalBaseURL)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// queryServer runs the query API as a manager Runnable. It needs leader
// election: only the leader reconciles, so only its indexes are current.
type queryServer struct {
	addr    string
	handler http.Handler
	grace   time.Duration
	log     logr.Logger
}

var _ manager.Runnable = (*queryServer)(nil)

// Start serves until ctx ends, then shuts down gracefully.
func (q *queryServer) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", q.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", q.addr, err)
	}
	srv := &http.Server{
		Handler:           q.handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	q.log.Info("query API listening", "address", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serving the query API: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down the query API: %w", err)
	}
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
