package packageapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	restclient "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
	"github.com/catalogd/catalogd/internal/packageapi/openapi"
)

// Config configures the package API server.
type Config struct {
	// BindAddress is the host:port to serve HTTPS on (port 0 picks one).
	BindAddress string
	// CertDir holds tls.crt and tls.key, reloaded when they change; empty
	// serves a self-signed certificate generated at start.
	CertDir string
	// Kube is the cluster that authenticates (TokenReview) and authorizes
	// (SubjectAccessReview) each request, and whose
	// extension-apiserver-authentication ConfigMap names the client and
	// front-proxy CAs.
	Kube *restclient.Config
	// HomeNamespace is the namespace an answer across all namespaces shows
	// the packages in.
	HomeNamespace string
	Log           logr.Logger
}

// Server is the package API: an aggregated API server for
// packages.operators.coreos.com/v1 answering from the store's indexes.
type Server struct {
	cache    *cache
	lists    *listReleaser
	generic  *genericapiserver.GenericAPIServer
	listener net.Listener
	log      logr.Logger
}

// New sets up the server and its delegated authentication and
// authorization; Run serves it.
func New(cfg Config, idx Indexes, cats Catalogs) (*Server, error) {
	scheme := runtime.NewScheme()
	if err := pkgv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register package API types: %w", err)
	}
	// The meta types answers carry (Status, discovery documents, options).
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	codecs := serializer.NewCodecFactory(scheme)

	ln, err := net.Listen("tcp", cfg.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("package API: listen on %s: %w", cfg.BindAddress, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = ln.Close()
		}
	}()
	secure := genericoptions.NewSecureServingOptions()
	secure.Listener = ln
	secure.BindPort = ln.Addr().(*net.TCPAddr).Port
	secure.BindAddress = ln.Addr().(*net.TCPAddr).IP
	if cfg.CertDir != "" {
		secure.ServerCert.CertKey = genericoptions.CertKey{
			CertFile: filepath.Join(cfg.CertDir, "tls.crt"),
			KeyFile:  filepath.Join(cfg.CertDir, "tls.key"),
		}
	} else {
		secure.ServerCert.CertDirectory = "" // keep the generated certificate in memory
		if err := secure.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
			return nil, fmt.Errorf("package API: self-signed certificate: %w", err)
		}
		cfg.Log.Info("package API serves a self-signed certificate generated at start; give --package-api-cert-dir for one the aggregator can verify")
	}

	config := genericapiserver.NewConfig(codecs)
	config.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString(baseversion.DefaultKubeBinaryVersion, "", "")
	// Profiling and metrics are the manager's business, on its own port.
	config.EnableProfiling = false
	config.EnableMetrics = false
	// The loopback client is how the server's own start-up hooks reach it.
	if err := secure.WithLoopback().ApplyTo(&config.SecureServing, &config.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("package API: serving: %w", err)
	}
	if err := delegate(cfg.Kube, config); err != nil {
		return nil, err
	}
	lists := &listReleaser{giveBack: debug.FreeOSMemory}
	config.BuildHandlerChainFunc = func(api http.Handler, c *genericapiserver.Config) http.Handler {
		return genericapiserver.DefaultBuildHandlerChain(lists.wrap(api), c)
	}
	namer := openapinamer.NewDefinitionNamer(scheme)
	config.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIConfig.Info.Title = "catalogd package API"
	config.OpenAPIConfig.Info.Version = pkgv1.SchemeGroupVersion.Version
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIV3Config.Info.Title = config.OpenAPIConfig.Info.Title
	config.OpenAPIV3Config.Info.Version = config.OpenAPIConfig.Info.Version

	generic, err := config.Complete(nil).New("catalogd-package-api", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("package API: %w", err)
	}
	c := newCache(idx, cats, uint64(time.Now().UnixMilli()), cfg.Log)
	group := genericapiserver.NewDefaultAPIGroupInfo(pkgv1.SchemeGroupVersion.Group, scheme, metav1.ParameterCodec, codecs)
	group.VersionedResourcesStorageMap[pkgv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"packagemanifests":      &manifests{c: c, home: cfg.HomeNamespace},
		"packagemanifests/icon": &icons{c: c},
	}
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("package API: install %s: %w", pkgv1.SchemeGroupVersion, err)
	}
	// Ready once every catalog live at start is served.
	if err := generic.AddReadyzChecks(loadedCheck{c}); err != nil {
		return nil, fmt.Errorf("package API: %w", err)
	}
	ok = true
	return &Server{cache: c, lists: lists, generic: generic, listener: ln, log: cfg.Log}, nil
}

// Loaded reports whether the server holds the manifests of every catalog
// that was live when it started.
func (s *Server) Loaded() bool {
	select {
	case <-s.cache.loaded:
		return true
	default:
		return false
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	go s.cache.run(ctx)
	s.log.Info("serving the package API", "address", s.Addr().String(), "group", pkgv1.SchemeGroupVersion.String())
	if err := s.generic.PrepareRun().RunWithContext(ctx); err != nil {
		return fmt.Errorf("package API: %w", err)
	}
	return nil
}

// delegate makes the cluster behind kube authenticate and authorize
// requests, as k8s.io/apiserver's delegating options do. They read the
// cluster's address and credentials from a kubeconfig file only, so kube
// is written to one in a private temporary directory, read, and removed.
func delegate(kube *restclient.Config, config *genericapiserver.Config) error {
	if kube == nil {
		return errors.New("package API: no cluster to delegate authentication and authorization to")
	}
	dir, err := os.MkdirTemp("", "catalogd-package-api-")
	if err != nil {
		return fmt.Errorf("package API: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kube, path); err != nil {
		return fmt.Errorf("package API: %w", err)
	}
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = path
	if err := authn.ApplyTo(&config.Authentication, config.SecureServing, config.OpenAPIConfig); err != nil {
		return fmt.Errorf("package API: delegated authentication: %w", err)
	}
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = path
	authz.AlwaysAllowPaths = []string{"/healthz", "/readyz", "/livez"}
	if err := authz.ApplyTo(&config.Authorization); err != nil {
		return fmt.Errorf("package API: delegated authorization: %w", err)
	}
	return nil
}

// loadedCheck is ready once the cache holds every catalog that was live
// when the server started.
type loadedCheck struct{ c *cache }

func (l loadedCheck) Name() string { return "package-manifests" }

func (l loadedCheck) Check(*http.Request) error {
	select {
	case <-l.c.loaded:
		return nil
	default:
		return errors.New("package manifests are not loaded yet")
	}
}
