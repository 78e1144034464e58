//go:build manager && packageapi

package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/registrytest"
	"github.com/catalogd/catalogd/test/tlstest"
)

// TestManagerServesPackageAPI runs the manager of a binary built with the
// package API against envtest with --package-api: the aggregated server
// listens on --package-api-bind-address with the certificate of
// --package-api-cert-dir and, once a ClusterCatalog is indexed, lists its
// packages as PackageManifests to a client the kube-apiserver's client CA
// vouches for.
func TestManagerServesPackageAPI(t *testing.T) {
	restCfg := kubetest.Start(t)
	ctrllog.SetLogger(logr.Discard())
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", "../../test/testdata/demo", registrytest.PushOptions{})

	certDir := t.TempDir()
	certPEM, keyPEM := tlstest.SelfSigned(t, "127.0.0.1")
	writeFile(t, filepath.Join(certDir, "tls.crt"), string(certPEM))
	writeFile(t, filepath.Join(certDir, "tls.key"), string(keyPEM))
	pkgAddr := freeAddr(t)
	cfg, err := parseFlags([]string{
		"--data-dir", t.TempDir(), "--listen", freeAddr(t), "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--insecure-registry", reg.Host,
		"--package-api", "--package-api-bind-address", pkgAddr, "--package-api-cert-dir", certDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.SkipControllerNameValidation = true
	cfg.Metrics = prometheus.NewRegistry()
	t.Setenv("POD_NAMESPACE", "catalogd-test")

	ctx, cancel := context.WithCancel(context.Background())
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

	scheme := runtime.NewScheme()
	if err := catalogdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: reg.Host + "/catalogs/demo:v1"},
		}},
	}); err != nil {
		t.Fatal(err)
	}

	// envtest's admin client certificate, which the aggregated server
	// authenticates against the cluster's client CA.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	clientCert, err := tls.X509KeyPair(restCfg.CertData, restCfg.KeyData)
	if err != nil {
		t.Fatalf("envtest's client certificate: %v", err)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12,
	}}}
	var want []string
	for _, p := range fbcfacts.Load(t, "../../test/testdata/demo").Packages {
		want = append(want, p.Name)
	}
	slices.Sort(want)
	url := "https://" + pkgAddr + "/apis/packages.operators.coreos.com/v1/namespaces/default/packagemanifests"
	deadline := time.Now().Add(60 * time.Second)
	var got []string
	for {
		if got, err = manifestNames(ctx, hc, url); err == nil && slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v %q, want the demo catalog's packages %q", url, err, got, want)
		}
		select {
		case <-done:
			t.Fatal("manager stopped early (its error is reported below)")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// manifestNames lists the PackageManifests at url, sorted by name.
func manifestNames(ctx context.Context, hc *http.Client, url string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the list: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, it := range list.Items {
		names = append(names, it.Metadata.Name)
	}
	slices.Sort(names)
	return names, nil
}
