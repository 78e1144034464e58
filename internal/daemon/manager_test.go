package daemon

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	catalogdclient "github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/registrytest"
)

func TestParseManagerFlags(t *testing.T) {
	caPEM := testCAPEM(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	writeFile(t, caFile, string(caPEM))
	writeFile(t, notPEM, "not a certificate")
	certDir := t.TempDir()
	writeFile(t, filepath.Join(certDir, "tls.crt"), string(caPEM))
	writeFile(t, filepath.Join(certDir, "tls.key"), "key")
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, cfg ManagerConfig)
	}{
		{
			name: "defaults",
			args: []string{"--data-dir", "/d"},
			check: func(t *testing.T, cfg ManagerConfig) {
				if cfg.Listen != "127.0.0.1:8080" || cfg.ExternalBaseURL != "http://127.0.0.1:8080" || cfg.LeaderElect {
					t.Errorf("unexpected defaults: %+v", cfg)
				}
			},
		},
		{
			name: "everything",
			args: []string{
				"--data-dir=/d", "--listen", ":9000", "--metrics-bind-address", ":9090",
				"--health-probe-bind-address", ":9091", "--leader-elect",
				"--external-base-url", "https://catalogd.example/", "--global-pull-secret", "olm/pull",
				"--ca-file", caFile, "--insecure-registry", "a:5000", "--insecure-registry", "b",
			},
			check: func(t *testing.T, cfg ManagerConfig) {
				got := []any{cfg.DataDir, cfg.Listen, cfg.MetricsBindAddress, cfg.HealthProbeAddress, cfg.LeaderElect,
					cfg.ExternalBaseURL, cfg.GlobalPullSecret, string(cfg.CABundle), cfg.InsecureRegistries, cfg.ShutdownGracePeriod,
					cfg.MaxConcurrentReconciles}
				want := []any{"/d", ":9000", ":9090", ":9091", true,
					"https://catalogd.example", types.NamespacedName{Namespace: "olm", Name: "pull"}, string(caPEM), []string{"a:5000", "b"}, 10 * time.Second,
					4}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("got %v\nwant %v", got, want)
				}
			},
		},
		{
			name: "TLS makes the default base URL https",
			args: []string{"--data-dir", "/d", "--listen", ":8443", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
			check: func(t *testing.T, cfg ManagerConfig) {
				if cfg.ExternalBaseURL != "https://:8443" || cfg.TLSCertFile != "c.pem" || cfg.TLSKeyFile != "k.pem" {
					t.Errorf("got %+v", cfg)
				}
			},
		},
		{name: "TLS certificate without key", args: []string{"--data-dir", "/d", "--tls-cert", "c.pem"}, wantErr: "go together"},
		{name: "no data dir", args: []string{"--listen", ":1"}, wantErr: "--data-dir is required"},
		{name: "bad pull secret", args: []string{"--data-dir", "/d", "--global-pull-secret", "pull"}, wantErr: "want namespace/name"},
		{name: "unknown flag", args: []string{"--data-dir", "/d", "--nope"}, wantErr: "nope"},
		{name: "CA file without a certificate", args: []string{"--data-dir", "/d", "--ca-file", notPEM}, wantErr: "holds no PEM certificate"},
		{name: "bad insecure registry", args: []string{"--data-dir", "/d", "--insecure-registry", "http://x"}, wantErr: "want host or host:port"},
		{
			name: "package API off by default, on at the contract's port",
			args: []string{"--data-dir", "/d"},
			check: func(t *testing.T, cfg ManagerConfig) {
				if cfg.PackageAPI || cfg.PackageAPIBindAddress != ":7443" || cfg.PackageAPICertDir != "" {
					t.Errorf("package API settings %v %q %q, want off, :7443, no cert dir", cfg.PackageAPI, cfg.PackageAPIBindAddress, cfg.PackageAPICertDir)
				}
			},
		},
		{
			name: "package API with its certificate",
			args: []string{"--data-dir", "/d", "--package-api", "--package-api-bind-address", "127.0.0.1:9443", "--package-api-cert-dir", certDir},
			check: func(t *testing.T, cfg ManagerConfig) {
				if !cfg.PackageAPI || cfg.PackageAPIBindAddress != "127.0.0.1:9443" || cfg.PackageAPICertDir != certDir {
					t.Errorf("package API settings %v %q %q", cfg.PackageAPI, cfg.PackageAPIBindAddress, cfg.PackageAPICertDir)
				}
			},
		},
		{name: "package API on a bare port", args: []string{"--data-dir", "/d", "--package-api", "--package-api-bind-address", "7443"}, wantErr: "--package-api-bind-address"},
		{name: "package API cert dir without the key", args: []string{"--data-dir", "/d", "--package-api", "--package-api-cert-dir", t.TempDir()}, wantErr: "tls.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseFlags(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg)
		})
	}
}

// testCAPEM is a PEM certificate, as a --ca-file holds.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// parseFlags parses args as `catalogd manager` does.
func parseFlags(args []string) (ManagerConfig, error) {
	var opts ManagerOptions
	if _, err := parseArgs(args, opts.BindFlags); err != nil {
		return ManagerConfig{}, err
	}
	return opts.Validate()
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestRunServesWhatTheControllerIndexed runs the whole manager against
// envtest and a registry that requires credentials: a ClusterCatalog becomes
// Serving, pulled with the credentials of the service account's
// imagePullSecrets or of the global pull secret, and its packages are
// answered by the query API at the URL in its status.
func TestRunServesWhatTheControllerIndexed(t *testing.T) {
	tests := []struct {
		name string
		// flags name the secrets; setup creates them.
		flags []string
		setup func(ctx context.Context, c client.Client, secret *corev1.Secret) error
	}{
		{
			name:  "service account imagePullSecrets",
			flags: []string{"--service-account", "default/catalogd"},
			setup: func(ctx context.Context, c client.Client, secret *corev1.Secret) error {
				secret.Name = "sa-pull"
				if err := c.Create(ctx, secret); err != nil {
					return err
				}
				return c.Create(ctx, &corev1.ServiceAccount{
					ObjectMeta:       metav1.ObjectMeta{Name: "catalogd", Namespace: "default"},
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: "sa-pull"}},
				})
			},
		},
		{
			name:  "global pull secret",
			flags: []string{"--global-pull-secret", "default/global-pull"},
			setup: func(ctx context.Context, c client.Client, secret *corev1.Secret) error {
				secret.Name = "global-pull"
				return c.Create(ctx, secret)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restCfg := kubetest.Start(t)
			ctrllog.SetLogger(logr.Discard())

			reg := registrytest.New(t, registrytest.WithBasicAuth("puller", "s3cret"))
			ref := reg.PushCatalog(t, "catalogs/demo:v1", "../../test/testdata/demo", registrytest.PushOptions{})
			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{catalogdv1.AddToScheme, corev1.AddToScheme} {
				if err := add(scheme); err != nil {
					t.Fatal(err)
				}
			}
			c, err := client.New(restCfg, client.Options{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			dockerConfig := fmt.Sprintf(`{"auths":{%q:{"username":"puller","password":"s3cret"}}}`, reg.Host)
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
				Type:       corev1.SecretTypeDockerConfigJson,
				Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)},
			}
			if err := tt.setup(ctx, c, secret); err != nil {
				t.Fatal(err)
			}

			listen, grpcListen := freeAddr(t), freeAddr(t)
			cfg, err := parseFlags(append([]string{
				"--data-dir", t.TempDir(), "--listen", listen, "--grpc-listen", grpcListen, "--metrics-bind-address", "0",
				"--health-probe-bind-address", "0", "--insecure-registry", reg.Host,
			}, tt.flags...))
			if err != nil {
				t.Fatal(err)
			}
			// The manager runs once per subtest in one process.
			cfg.SkipControllerNameValidation = true
			cfg.Metrics = prometheus.NewRegistry()

			done := make(chan struct{})
			var runErr error
			go func() {
				defer close(done)
				runErr = RunManager(ctx, restCfg, cfg, testr.New(t))
			}()
			t.Cleanup(func() {
				cancel()
				<-done
				if runErr != nil {
					t.Errorf("manager: %v", runErr)
				}
			})

			cat := &catalogdv1.ClusterCatalog{
				ObjectMeta: metav1.ObjectMeta{Name: "demo"},
				Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
					Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: reg.Host + "/catalogs/demo:v1"},
				}},
			}
			if err := c.Create(ctx, cat); err != nil {
				t.Fatal(err)
			}

			want := len(fbcfacts.Load(t, "../../test/testdata/demo").Packages)
			deadline := time.Now().Add(60 * time.Second)
			var lastErr error
			for {
				if lastErr = servedPackages(ctx, c, ref, want); lastErr == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for the catalog to be served: %v", lastErr)
				}
				select {
				case <-done:
					t.Fatal("manager stopped early (its error is reported below)")
				case <-time.After(100 * time.Millisecond):
				}
			}
			// Every replica serves OLM v0's registry API too, with --grpc-listen.
			if got := grpcPackages(t, grpcListen, "demo"); len(got) != want {
				t.Errorf("the registry API lists %d packages (%v), want %d", len(got), got, want)
			}
		})
	}
}

// grpcPackages lists the packages of catalog through the registry API at
// addr.
func grpcPackages(t *testing.T, addr, catalog string) []string {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(catalog+".catalogd:50051"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := api.NewRegistryClient(conn).ListPackages(context.Background(), &api.ListPackageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.GetName())
	}
}

// servedPackages checks the catalog is Serving at ref and that the query API
// at its status URL lists want packages.
func servedPackages(ctx context.Context, c client.Client, ref string, want int) error {
	cat := &catalogdv1.ClusterCatalog{}
	if err := c.Get(ctx, types.NamespacedName{Name: "demo"}, cat); err != nil {
		return err
	}
	if !meta.IsStatusConditionTrue(cat.Status.Conditions, catalogdv1.TypeServing) {
		return fmt.Errorf("not serving: %+v", cat.Status.Conditions)
	}
	if rs := cat.Status.ResolvedSource; rs == nil || rs.Image == nil || rs.Image.Ref != ref {
		return fmt.Errorf("resolvedSource %+v, want %s", rs, ref)
	}
	if cat.Status.URLs == nil {
		return fmt.Errorf("no status.urls")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cat.Status.URLs.Base+"/packages?limit=1000", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", req.URL, resp.Status, body)
	}
	var list catalogdclient.PackageList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("decoding package list: %w", err)
	}
	if len(list.Items) != want {
		return fmt.Errorf("API lists %d packages, want %d", len(list.Items), want)
	}
	return nil
}
