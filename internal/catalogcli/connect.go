package catalogcli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	clienttransport "k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/unpack"
)

// ServerEnv names the environment variable that stands in for --server.
const ServerEnv = "CATALOGD_SERVER"

// Where the catalogd Service is, as config/manager/service.yaml installs it.
const (
	defaultServiceNamespace = "olmv1-system"
	defaultServiceName      = "catalogd-service"
	defaultServicePort      = "https:443"
)

// connectFlags choose how to reach a catalog: a cluster through the
// current kubeconfig (the default), a server URL, or a catalog read on
// this machine. Every way ends in the same generated client, so the
// answers are the same.
type connectFlags struct {
	kube *genericclioptions.ConfigFlags

	server, caFile string
	insecureTLS    bool

	serviceNamespace, serviceName, servicePort string

	dir, image, source string
	insecureRegistries []string
	pullTimeout        time.Duration
	prebuiltIndex      bool
	cacheMaxSize       string
	timeout            time.Duration

	// stderr hears of offline indexing.
	stderr io.Writer
}

func newConnectFlags(stderr io.Writer) *connectFlags {
	kube := genericclioptions.NewConfigFlags(false)
	// --server, --certificate-authority and --insecure-skip-tls-verify mean
	// the catalogd server here, not the Kubernetes API server, and the
	// namespace is the Service's (--service-namespace): register only the
	// flags that pick a kubeconfig, context and credentials.
	kube.APIServer, kube.CAFile, kube.Insecure, kube.TLSServerName = nil, nil, nil, nil
	kube.Namespace, kube.Timeout, kube.CacheDir, kube.DisableCompression = nil, nil, nil, nil
	kube.BearerToken, kube.Username, kube.Password, kube.CertFile, kube.KeyFile = nil, nil, nil, nil, nil
	kube.Impersonate, kube.ImpersonateUID, kube.ImpersonateGroup, kube.ImpersonateUserExtra = nil, nil, nil, nil
	return &connectFlags{kube: kube, stderr: stderr}
}

func (c *connectFlags) bind(fs *pflag.FlagSet) {
	c.kube.AddFlags(fs)
	fs.StringVar(&c.server, "server", "", "ask the catalogd server at `URL` (catalogd serve, a port-forward, an Ingress) instead of the cluster's Service (default $"+ServerEnv+" unless --dir, --image or --source is given)")
	fs.StringVar(&c.caFile, "certificate-authority", "", "with --server: trust the CA certificate in the PEM `FILE` (default: the system's certificates)")
	fs.BoolVar(&c.insecureTLS, "insecure-skip-tls-verify", false, "with --server: do not verify the server's certificate (insecure)")
	fs.StringVar(&c.serviceNamespace, "service-namespace", defaultServiceNamespace, "the `NAMESPACE` of the catalogd Service in the cluster")
	fs.StringVar(&c.serviceName, "service-name", defaultServiceName, "the `NAME` of the catalogd Service in the cluster")
	fs.StringVar(&c.servicePort, "service-port", defaultServicePort, "the `SCHEME:PORT` of the catalogd Service's API port")
	fs.StringVar(&c.dir, "dir", "", "answer offline from the catalog directory `DIR`, indexed into the offline cache once per content (default: ask a server)")
	fs.StringVar(&c.image, "image", "", "answer offline from the catalog image `REF`, pulled and indexed into the offline cache once per digest (default: ask a server)")
	fs.StringVar(&c.source, "source", "", "answer offline from the catalog `SOURCE`, indexed into the offline cache once per content: a directory, an image, "+
		"oci:DIR[:TAG], git::URL[//DIR][?ref=REF] (https, ssh or file), or an http(s) URL of an archive or file (default: ask a server)")
	fs.StringSliceVar(&c.insecureRegistries, "insecure-registry", nil, "with --image or --source: talk plain HTTP to the registry at `host[:port]`; repeatable (default: HTTPS to every registry)")
	fs.DurationVar(&c.pullTimeout, "pull-timeout", unpack.DefaultPullTimeout, "with --image or --source: deadline of the pull as a whole (resolve, download, extract)")
	fs.BoolVar(&c.prebuiltIndex, "prebuilt-index", true, "with --image or --source: take the index published beside the image in its own repository "+
		"(catalogd index publish) when it is of this build's schema and passes the checks; false indexes here")
	fs.StringVar(&c.cacheMaxSize, "cache-max-size", "", "with --dir, --image or --source: bound the offline cache to `SIZE` (1Gi, 500Mi, 0), evicting the least recently used catalogs first (default $"+CacheMaxSizeEnv+", else "+defaultCacheMaxSize+")")
	fs.DurationVar(&c.timeout, "request-timeout", 30*time.Second, "how long to wait for an answer from a server or cluster (0: no limit)")
}

// bindVerbosity adds kubectl's -v/--v: klog's verbosity, at which
// client-go's transport logs each request to stderr (6: method, URL,
// status and time; 7 and 8: headers too; 9: each as a curl command), for
// the cluster, --server and --dir/--image alike. klog's settings are the
// process's, as in kubectl, which sets them the same way.
func bindVerbosity(fs *pflag.FlagSet) {
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	v := pflag.PFlagFromGoFlag(gofs.Lookup("v"))
	v.Shorthand = "v"
	v.Usage = "log verbosity `N`, as kubectl's: 6 logs each request with its status and time, higher levels more (default 0)"
	fs.AddFlag(v)
}

// conn is a client and where it reaches, for error messages.
type conn struct {
	api   *client.ClientWithResponses
	where string
	// hint says how to point elsewhere when where cannot be reached.
	hint  string
	close func()
}

// connect builds the client the flags ask for.
func (c *connectFlags) connect(ctx context.Context) (*conn, error) {
	set := 0
	for _, s := range []string{c.server, c.dir, c.image, c.source} {
		if s != "" {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("give only one of --server, --dir, --image and --source")
	}
	// $CATALOGD_SERVER is a default: --dir, --image or --source on the command line
	// says where to look this time.
	if set == 0 {
		c.server = os.Getenv(ServerEnv)
	}
	switch {
	case c.dir != "" || c.image != "" || c.source != "":
		return c.connectOffline(ctx)
	case c.server != "":
		return c.connectServer()
	default:
		return c.connectCluster()
	}
}

func (c *connectFlags) connectServer() (*conn, error) {
	u, err := url.Parse(c.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not an http:// or https:// URL", c.server)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.caFile != "" || c.insecureTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.insecureTLS} //nolint:gosec // asked for by the flag
		if c.caFile != "" {
			pem, err := os.ReadFile(c.caFile)
			if err != nil {
				return nil, fmt.Errorf("read --certificate-authority: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--certificate-authority %s holds no PEM certificate", c.caFile)
			}
		}
		transport.TLSClientConfig = cfg
	}
	cn := &conn{where: c.server, hint: "start one with `catalogd serve`, or point elsewhere with --server, $" + ServerEnv + ", --dir, --image or --source", close: func() {}}
	return cn, cn.dial(strings.TrimSuffix(c.server, "/"), clienttransport.DebugWrappers(transport), c.timeout)
}

// connectCluster reaches the catalogd Service through the Kubernetes API
// server's service proxy: it needs no port-forward and no route into the
// cluster, only the right to get services/proxy on that one Service
// (config/viewer).
func (c *connectFlags) connectCluster() (*conn, error) {
	// Without a kubeconfig client-go would try http://localhost:8080;
	// say plainly that there is no cluster to ask instead.
	raw, err := c.kube.ToRawKubeConfigLoader().RawConfig()
	if err == nil && len(raw.Clusters) == 0 {
		err = errors.New("no kubeconfig: set $KUBECONFIG or --kubeconfig")
	}
	var cfg *rest.Config
	if err == nil {
		cfg, err = c.kube.ToRESTConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("no cluster to ask (%w); point at a catalogd server with --server or $%s, or at a catalog with --dir, --image or --source", err, ServerEnv)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("configure the connection to the cluster: %w", err)
	}
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's server: %w", err)
	}
	scheme, port, ok := strings.Cut(c.servicePort, ":")
	if !ok {
		scheme, port = "", c.servicePort
	}
	proxy := fmt.Sprintf("/api/v1/namespaces/%s/services/%s:%s:%s/proxy",
		url.PathEscape(c.serviceNamespace), scheme, url.PathEscape(c.serviceName), port)
	base := strings.TrimSuffix(host.String(), "/") + proxy
	cn := &conn{
		where: fmt.Sprintf("service %s/%s through %s", c.serviceNamespace, c.serviceName, host.Host),
		hint:  "is catalogd deployed there? pick another with --service-namespace/--service-name or --context, or point elsewhere with --server, --dir, --image or --source",
		close: func() {},
	}
	// rest.TransportFor has added client-go's request logging (-v) already.
	return cn, cn.dial(base, transport, c.timeout)
}

func (c *connectFlags) connectOffline(ctx context.Context) (*conn, error) {
	cache, err := cacheDir()
	if err != nil {
		return nil, err
	}
	if c.pullTimeout <= 0 {
		return nil, fmt.Errorf("--pull-timeout %s: want a positive duration", c.pullTimeout)
	}
	maxBytes, err := c.cacheBound()
	if err != nil {
		return nil, err
	}
	src := offlineSource{dir: c.dir, image: c.image, source: c.source, insecureRegistries: c.insecureRegistries, pullTimeout: c.pullTimeout, prebuiltIndex: c.prebuiltIndex, cacheDir: cache, cacheMaxBytes: maxBytes, progress: c.stderr}
	handler, where, closeIdx, err := src.open(ctx)
	if err != nil {
		return nil, err
	}
	cn := &conn{where: where, close: closeIdx}
	if err := cn.dial("http://offline", clienttransport.DebugWrappers(handlerTransport{handler}), 0); err != nil {
		closeIdx()
		return nil, err
	}
	return cn, nil
}

// dial makes the client of base over transport.
func (c *conn) dial(base string, transport http.RoundTripper, timeout time.Duration) error {
	var err error
	c.api, err = client.NewClientWithResponses(base, client.WithHTTPClient(answeredByCatalogd{conn: c, http: &http.Client{Transport: transport, Timeout: timeout}}))
	return err
}

// answeredByCatalogd turns an answer that is neither a success nor one of
// catalogd's problem documents into an error before the generated client
// reads it: such an answer comes from something on the way (the API
// server's proxy, an Ingress) and is not in the shapes openapi.yaml gives.
type answeredByCatalogd struct {
	conn *conn
	http *http.Client
}

func (a answeredByCatalogd) Do(req *http.Request) (*http.Response, error) {
	rsp, err := a.http.Do(req)
	if err != nil || rsp.StatusCode < 300 || strings.HasPrefix(rsp.Header.Get("Content-Type"), "application/problem+json") {
		return rsp, err
	}
	defer rsp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(rsp.Body, 4096))
	return nil, a.conn.failed(rsp, body)
}

// cacheBound is the bound of the offline cache: --cache-max-size, else
// $CATALOGD_CACHE_MAX_SIZE, else the default.
func (c *connectFlags) cacheBound() (int64, error) {
	from, size := "--cache-max-size", c.cacheMaxSize
	if size == "" {
		from, size = "$"+CacheMaxSizeEnv, os.Getenv(CacheMaxSizeEnv)
	}
	if size == "" {
		return parseCacheMaxSize(defaultCacheMaxSize)
	}
	n, err := parseCacheMaxSize(size)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", from, err)
	}
	return n, nil
}

// cacheHelp says where the offline cache is, for --help.
func cacheHelp() string {
	if dir, err := cacheDir(); err == nil {
		return dir + " ($XDG_CACHE_HOME/catalogd)"
	}
	return "$XDG_CACHE_HOME/catalogd"
}

// cacheDir is where offline indexes are kept: $XDG_CACHE_HOME/catalogd or
// the platform's user cache directory.
func cacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory for offline indexes: %w", err)
	}
	return filepath.Join(dir, "catalogd"), nil
}
