//go:build manager

package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
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
