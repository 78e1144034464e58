package daemon

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/server"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Options are the flags both modes take: where data is kept, where the API
// listens and with which certificate, how registries are reached, and how
// long one sync may take.
type Options struct {
	RegistryOptions
	PrebuiltOption
	DataDir                 string
	Listen                  string
	TLSCertFile, TLSKeyFile string
	SyncTimeout             time.Duration
	// History is how many versions of each catalog /changes can answer from.
	History int
	// IncrementalIndex lets a rebuild reuse what did not change in the
	// live index (store.WithIncremental).
	IncrementalIndex bool
	// PageOutStartup gives back the executable's pages start-up touched
	// once the process serves (package pageout).
	PageOutStartup bool
	// BundleReleaseSupport is how /resolve reads releases when a request
	// does not say.
	BundleReleaseSupport bool
	// GRPCListen is where OLM v0's registry API is served; "" serves none.
	GRPCListen string
}

// bindFlags declares the shared flags on fs.
func (o *Options) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "serve the API on this `host:port` (port 0 picks a free one)")
	fs.StringVar(&o.DataDir, "data-dir", "", "keep indexes (and unpacked images) in `DIR` (required)")
	fs.DurationVar(&o.SyncTimeout, "sync-timeout", catalogsync.DefaultSyncTimeout, "deadline of one catalog sync (resolve, pull, unpack, index)")
	fs.IntVar(&o.History, "changes-history", store.DefaultHistory, "keep the package digests of the last `N` versions of each catalog, which /changes answers from")
	fs.BoolVar(&o.IncrementalIndex, "incremental-index", true, "rebuild an index from the live one, parsing and validating only the packages that changed; "+
		"false parses and validates the whole catalog on every change")
	fs.BoolVar(&o.PageOutStartup, "page-out-startup", true, "have the kernel drop the pages of the executable that start-up read, before the first index build and once serving (they are read again if used)")
	fs.BoolVar(&o.BundleReleaseSupport, "bundle-release-support", false, "/resolve reads releases as operator-controller with its BundleReleaseSupport gate on (an explicit "+
		"release of olm.package first) when a request does not say; off, its default, a version's build metadata is the release")
	fs.Var(removedFlag("it chose semver upgrade edges for /resolve, as operator-controller's ForceSemverUpgradeConstraints gate did; "+
		"operator-controller removed that gate (operator-controller #1638, January 2025), so every cluster follows the channels' "+
		"replaces, skips and skipRange, which /resolve always does: drop the flag"), "upgrade-edges", "removed")
	_ = fs.MarkHidden("upgrade-edges")
	o.RegistryOptions.bindFlags(fs)
	o.PrebuiltOption.bindFlags(fs)
	fs.StringVar(&o.GRPCListen, "grpc-listen", "", "also serve OLM v0's registry API (gRPC, what a CatalogSource's spec.address reads) on this `host:port`, "+
		"plain text as OLM dials it; the first label of the host a client dials names the catalog, as demo.catalogd:50051 names demo (default: off)")
	fs.StringVar(&o.TLSCertFile, "tls-cert", "", "serve HTTPS with the PEM certificate in `FILE`, reloaded when it changes (default: plain HTTP)")
	fs.StringVar(&o.TLSKeyFile, "tls-key", "", "the PEM private key of --tls-cert, in `FILE` (required with --tls-cert)")
}

// Validate checks the shared flags and returns the shared part of a Config.
// Every error is a mistake in the command line.
func (o *Options) Validate() (Config, error) {
	if o.DataDir == "" {
		return Config{}, errors.New("--data-dir is required: it is where the indexes are kept")
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return Config{}, errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	if err := checkListen("--listen", o.Listen); err != nil {
		return Config{}, err
	}
	if o.GRPCListen != "" {
		if err := checkListen("--grpc-listen", o.GRPCListen); err != nil {
			return Config{}, err
		}
	}
	if o.History < 1 {
		return Config{}, fmt.Errorf("--changes-history %d: want at least 1 (the version being served)", o.History)
	}
	reg, err := o.RegistryOptions.Validate()
	if err != nil {
		return Config{}, err
	}
	reg.PrebuiltIndex = o.PrebuiltIndex
	return Config{
		RegistryConfig:   reg,
		DataDir:          o.DataDir,
		Listen:           o.Listen,
		TLSCertFile:      o.TLSCertFile,
		TLSKeyFile:       o.TLSKeyFile,
		SyncTimeout:      o.SyncTimeout,
		PageOutStartup:   o.PageOutStartup,
		History:          o.History,
		IncrementalIndex: o.IncrementalIndex,
		BundleRelease:    o.BundleReleaseSupport,
		GRPCListen:       o.GRPCListen,
	}, nil
}

// RegistryOptions are the flags that say how registries are reached, for
// every command that may pull an image.
type RegistryOptions struct {
	CAFile             string
	InsecureRegistries []string
	PullTimeout        time.Duration
	MaxCatalogBytes    string
}

// PrebuiltOption is --prebuilt-index, for the commands that build an
// index a prebuilt one can stand in for (serve, manager).
type PrebuiltOption struct{ PrebuiltIndex bool }

func (o *PrebuiltOption) bindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.PrebuiltIndex, "prebuilt-index", true, "before building the index of a catalog image, look for one published beside it in its own repository "+
		"(catalogd index publish), and take it when it is of this catalogd's schema and passes the checks; false builds every index here")
}

func (o *RegistryOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.InsecureRegistries, "insecure-registry", nil, "talk plain HTTP to the registry at `host[:port]`; repeatable (default: HTTPS to every registry)")
	fs.StringVar(&o.CAFile, "ca-file", "", "also trust the PEM certificates in `FILE` for registries, https git repositories and HTTP sources (default: the system's certificates only)")
	fs.DurationVar(&o.PullTimeout, "pull-timeout", unpack.DefaultPullTimeout, "deadline of one fetch as a whole (an image pull, a git fetch, a download: resolve, download, extract), "+
		"however steadily data arrives; generous because catalogs of hundreds of MB take minutes over a slow link")
	fs.StringVar(&o.MaxCatalogBytes, "max-catalog-bytes", resource.NewQuantity(unpack.DefaultMaxTotalBytes, resource.BinarySI).String(),
		"the most bytes of files one fetched catalog may write (an image's layers together, a git tree, an archive), as a `quantity` (2Gi); "+
			"larger ones are refused, so that a crafted source cannot fill the disk")
}

// Validate checks the registry flags and reads the CA file.
func (o *RegistryOptions) Validate() (RegistryConfig, error) {
	for _, r := range o.InsecureRegistries {
		if r == "" || strings.ContainsAny(r, "/ ") {
			return RegistryConfig{}, fmt.Errorf("--insecure-registry %q: want host or host:port", r)
		}
	}
	if o.PullTimeout <= 0 {
		return RegistryConfig{}, fmt.Errorf("--pull-timeout %s: want a positive duration", o.PullTimeout)
	}
	maxBytes, err := resource.ParseQuantity(o.MaxCatalogBytes)
	if err != nil || maxBytes.Sign() <= 0 || maxBytes.Value() > unpack.DefaultMaxUncompressedBytes {
		return RegistryConfig{}, fmt.Errorf("--max-catalog-bytes %q: want a quantity of bytes above zero and at most %s (1Gi, 2500Mi)",
			o.MaxCatalogBytes, resource.NewQuantity(unpack.DefaultMaxUncompressedBytes, resource.BinarySI))
	}
	cfg := RegistryConfig{InsecureRegistries: o.InsecureRegistries, PullTimeout: o.PullTimeout, MaxCatalogBytes: maxBytes.Value()}
	if o.CAFile != "" {
		b, err := os.ReadFile(o.CAFile)
		if err != nil {
			return RegistryConfig{}, fmt.Errorf("--ca-file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			return RegistryConfig{}, fmt.Errorf("--ca-file %s: holds no PEM certificate", o.CAFile)
		}
		cfg.CABundle = b
	}
	return cfg, nil
}

// checkListen catches the common slip of a bare port, which net.Listen
// would refuse later with a message that does not name the flag.
func checkListen(flag, listen string) error {
	if _, _, err := net.SplitHostPort(listen); err != nil {
		if _, perr := strconv.ParseUint(listen, 10, 16); perr == nil {
			return fmt.Errorf("%s %s: want host:port; did you mean :%s (every interface) or 127.0.0.1:%s?", flag, listen, listen, listen)
		}
		return fmt.Errorf("%s %s: want host:port, for example 127.0.0.1:8080 or :8080", flag, listen)
	}
	return nil
}

// ServeOptions are the flags of `catalogd serve`.
type ServeOptions struct {
	Options
	Watch bool
	// PollInterval is how often every source that is not a directory is
	// asked again for new content; 0 never.
	PollInterval time.Duration

	// Raw values of the repeatable flags, parsed by Validate.
	catalogArgs, priorityArgs, labelArgs []string
}

// BindFlags declares the flags of `catalogd serve` on fs.
func (o *ServeOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.catalogArgs, "catalog", nil, "serve catalog `NAME=SOURCE`; repeatable, one required. SOURCE is a catalog directory, "+
		"an image or OCI artifact with its registry host (quay.io/org/catalog:tag), oci:DIR[:TAG], "+
		"git::URL[//DIR][?ref=REF] (https, ssh or file), or an http(s) URL of a .tar, .tar.gz, .json or .yaml file")
	fs.StringArrayVar(&o.priorityArgs, "priority", nil, "give catalogs priorities as `NAME=N` (int32, default 0; higher answers first); repeatable")
	fs.StringArrayVar(&o.labelArgs, "label", nil, "label a catalog as `NAME=KEY=VALUE`, as a ClusterCatalog's labels, for the catalog selector of /resolve; repeatable (default: no labels)")
	o.bindFlags(fs)
	fs.BoolVar(&o.Watch, "watch", false, "re-index a directory catalog when its files change; a broken edit keeps the last good index serving")
	fs.DurationVar(&o.PollInterval, "poll-interval", 0, "ask every source but directories again this often for new content (an image tag, a git branch, a URL), "+
		"and index what changed (default 0: only at start-up and on failure)")
}

// Validate checks the flags of `catalogd serve`; args are the positional
// arguments. Every error is a mistake in the command line, but a
// MissingCatalogError.
func (o *ServeOptions) Validate(args []string) (ServeConfig, error) {
	if len(args) > 0 {
		return ServeConfig{}, fmt.Errorf("unexpected argument %q (catalogs are given as --catalog NAME=SOURCE)", args[0])
	}
	if len(o.catalogArgs) == 0 {
		return ServeConfig{}, errors.New("no catalog to serve: give at least one --catalog NAME=SOURCE, as --catalog demo=test/testdata/demo")
	}
	shared, err := o.Options.Validate()
	if err != nil {
		return ServeConfig{}, err
	}
	if o.PollInterval < 0 {
		return ServeConfig{}, fmt.Errorf("--poll-interval %s: want a positive duration, or 0 for no polling", o.PollInterval)
	}
	// A person names the catalogs of serve: a git repository on this
	// machine is theirs to read.
	shared.LocalSources = true
	cfg := ServeConfig{Config: shared, Watch: o.Watch, PollInterval: o.PollInterval}
	seen := map[string]int{} // name → index in cfg.Catalogs
	for _, arg := range o.catalogArgs {
		c, err := parseCatalog(arg)
		if err != nil {
			return ServeConfig{}, err
		}
		if _, dup := seen[c.Name]; dup {
			return ServeConfig{}, fmt.Errorf("--catalog %s: catalog %q is given twice", arg, c.Name)
		}
		seen[c.Name] = len(cfg.Catalogs)
		cfg.Catalogs = append(cfg.Catalogs, c)
	}
	prioritised := map[string]bool{}
	for _, arg := range o.priorityArgs {
		n, v, ok := strings.Cut(arg, "=")
		if !ok {
			return ServeConfig{}, fmt.Errorf("--priority %s: want NAME=N", arg)
		}
		i, known := seen[n]
		if !known {
			return ServeConfig{}, fmt.Errorf("--priority %s: no --catalog is named %q", arg, n)
		}
		if prioritised[n] {
			return ServeConfig{}, fmt.Errorf("--priority %s: catalog %q is given a priority twice", arg, n)
		}
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return ServeConfig{}, fmt.Errorf("--priority %s: %q is not a 32-bit integer", arg, v)
		}
		prioritised[n] = true
		cfg.Catalogs[i].Priority = int32(p)
	}
	for _, arg := range o.labelArgs {
		n, kv, _ := strings.Cut(arg, "=")
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return ServeConfig{}, fmt.Errorf("--label %s: want NAME=KEY=VALUE", arg)
		}
		i, known := seen[n]
		if !known {
			return ServeConfig{}, fmt.Errorf("--label %s: no --catalog is named %q", arg, n)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return ServeConfig{}, fmt.Errorf("--label %s: %q is not a label key: %s", arg, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return ServeConfig{}, fmt.Errorf("--label %s: %q is not a label value: %s", arg, v, strings.Join(errs, "; "))
		}
		c := &cfg.Catalogs[i]
		if _, dup := c.Labels[k]; dup {
			return ServeConfig{}, fmt.Errorf("--label %s: catalog %q is given label %q twice", arg, n, k)
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = v
	}
	return cfg, nil
}

// parseCatalog parses one NAME=SOURCE of --catalog.
func parseCatalog(arg string) (Catalog, error) {
	n, v, ok := strings.Cut(arg, "=")
	if !ok || v == "" {
		return Catalog{}, fmt.Errorf("--catalog %s: want NAME=SOURCE, as demo=test/testdata/demo or demo=quay.io/org/catalog:tag", arg)
	}
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
		return Catalog{}, fmt.Errorf("--catalog %s: name %q is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.'): %s",
			arg, n, strings.Join(errs, "; "))
	}
	spec, err := source.Parse(v)
	switch {
	case errors.Is(err, source.ErrNoDirectory):
		return Catalog{}, MissingCatalogError{fmt.Errorf("--catalog %s: %w", arg, err)}
	case err != nil:
		return Catalog{}, fmt.Errorf("--catalog %s: %w", arg, err)
	}
	return Catalog{Name: n, Value: v, Source: spec}, nil
}

// MissingCatalogError is a catalog source that names neither a directory
// on this machine nor anything else: the catalog cannot be read. The
// commands exit 1 for it, as for an image that cannot be pulled, and keep
// exit 2 for mistakes in the form of the command line.
type MissingCatalogError struct{ err error }

func (e MissingCatalogError) Error() string { return e.err.Error() }
func (e MissingCatalogError) Unwrap() error { return e.err }

// ManagerOptions are the flags of `catalogd manager`.
type ManagerOptions struct {
	Options
	managerSettings
	ExternalBaseURL string

	// Raw values of the namespace/name flags, parsed by Validate.
	pullSecret, serviceAccount string
}

// managerSettings are the flags of `catalogd manager` that ManagerConfig
// takes as given.
type managerSettings struct {
	// Kubeconfig is a kubeconfig file; empty means $KUBECONFIG, the
	// in-cluster config, or ~/.kube/config, in that order.
	Kubeconfig              string
	MetricsBindAddress      string
	HealthProbeAddress      string
	LeaderElect             bool
	LeaderElectionNamespace string
	ShutdownGracePeriod     time.Duration
	MaxConcurrentReconciles int
	// PackageAPI serves packages.operators.coreos.com/v1 (PackageManifest)
	// as an aggregated API on PackageAPIBindAddress, with the certificate
	// in PackageAPICertDir (tls.crt, tls.key) or, when it is empty, a
	// self-signed one generated at start.
	PackageAPI            bool
	PackageAPIBindAddress string
	PackageAPICertDir     string
	// SecretNamespace is catalogd's own namespace, the only one the
	// Secrets a ClusterCatalog names are read from; empty reads none.
	SecretNamespace string
}

// BindFlags declares the flags of `catalogd manager` on fs.
func (o *ManagerOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "the kubeconfig `FILE` (default: $KUBECONFIG, the in-cluster config, ~/.kube/config)")
	o.bindFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "0", "serve the Prometheus metrics on `host:port`; 0 disables them (default 0)")
	fs.StringVar(&o.HealthProbeAddress, "health-probe-bind-address", ":8081", "serve /healthz and /readyz on `host:port`; 0 disables them")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader so that one replica writes ClusterCatalog status; every replica serves")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "the `NAMESPACE` of the leader election lease (default: the pod's namespace)")
	fs.StringVar(&o.ExternalBaseURL, "external-base-url", "", "the `URL` clients reach the query API at; status.urls.base is this plus /catalogs/<name> (default: http(s)://<listen>)")
	fs.StringVar(&o.pullSecret, "global-pull-secret", "", "use the image pull secret `NAMESPACE/NAME` for every catalog (default: none)")
	fs.StringVar(&o.SecretNamespace, "secret-namespace", "", "catalogd's own `NAMESPACE`, the only one the Secrets a ClusterCatalog names (secretRef, caSecretRef) are read from, "+
		"by name and uncached (default: none, and a ClusterCatalog that names a Secret fails to fetch)")
	fs.StringVar(&o.serviceAccount, "service-account", "", "pull with the imagePullSecrets of the service account `NAMESPACE/NAME`, catalogd's own in a cluster (default: none)")
	fs.DurationVar(&o.ShutdownGracePeriod, "shutdown-grace-period", server.ShutdownGrace, "how long in-flight queries may take at shutdown")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "catalogs reconciled at once, so one slow registry delays no other catalog")
	fs.BoolVar(&o.PackageAPI, "package-api", false, "serve OLM v0's PackageManifest API (packages, v1) as an aggregated API, "+
		"in place of OLM v0's packageserver; only catalogd-package-api, the build with the package API, can: catalogd refuses it")
	fs.StringVar(&o.PackageAPIBindAddress, "package-api-bind-address", ":7443", "`host:port` the package API serves HTTPS on")
	fs.StringVar(&o.PackageAPICertDir, "package-api-cert-dir", "", "`DIR` holding the package API's tls.crt and tls.key, reloaded when they change (default: a self-signed certificate generated at start)")
}

// Validate checks the flags of `catalogd manager` and fills in the defaults
// that depend on other flags. Every error is a mistake in the command line.
func (o *ManagerOptions) Validate() (ManagerConfig, error) {
	shared, err := o.Options.Validate()
	if err != nil {
		return ManagerConfig{}, err
	}
	cfg := ManagerConfig{Config: shared, managerSettings: o.managerSettings, ExternalBaseURL: o.ExternalBaseURL}
	if cfg.PackageAPI {
		if err := checkListen("--package-api-bind-address", cfg.PackageAPIBindAddress); err != nil {
			return ManagerConfig{}, err
		}
		if cfg.PackageAPICertDir != "" {
			for _, f := range []string{"tls.crt", "tls.key"} {
				if _, err := os.Stat(filepath.Join(cfg.PackageAPICertDir, f)); err != nil {
					return ManagerConfig{}, fmt.Errorf("--package-api-cert-dir: %w", err)
				}
			}
		}
	}
	if cfg.GlobalPullSecret, err = namespacedName("--global-pull-secret", o.pullSecret); err != nil {
		return ManagerConfig{}, err
	}
	if cfg.ServiceAccount, err = namespacedName("--service-account", o.serviceAccount); err != nil {
		return ManagerConfig{}, err
	}
	if ns := cfg.SecretNamespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return ManagerConfig{}, fmt.Errorf("--secret-namespace %q: not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if cfg.ExternalBaseURL == "" {
		scheme := "http://"
		if cfg.TLSCertFile != "" {
			scheme = "https://"
		}
		cfg.ExternalBaseURL = scheme + cfg.Listen
	}
	cfg.ExternalBaseURL = strings.TrimSuffix(cfg.ExternalBaseURL, "/")
	return cfg, nil
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

// removedFlag is a flag that was removed: kept hidden so that a command
// line still passing it fails saying why it went (the string), rather than
// that the flag is unknown, or worse, with the flag ignored.
type removedFlag string

func (f removedFlag) String() string   { return "" }
func (f removedFlag) Type() string     { return "string" }
func (f removedFlag) Set(string) error { return fmt.Errorf("the flag was removed: %s", string(f)) }
