// Package kubetest starts a real kube-apiserver and etcd (envtest) with the
// ClusterCatalog CRD installed, for tests of code that talks to a cluster.
// The binaries come from KUBEBUILDER_ASSETS, which `make test` sets to the
// ones `make envtest-bins` builds from source.
package kubetest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Start runs an apiserver for the test, stopped when it ends, and returns
// its client config. It skips the test, saying how to run it, when
// KUBEBUILDER_ASSETS is unset (plain `go test` outside make).
func Start(t testing.TB) *rest.Config {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset, so there is no kube-apiserver/etcd to test against: " +
			"run `make unit`, or `make envtest-bins` and then `KUBEBUILDER_ASSETS=$PWD/bin/k8s go test ./...`")
	}
	abs, err := filepath.Abs(assets)
	if err != nil {
		t.Fatal(err)
	}
	useExisting := false
	te := &envtest.Environment{
		BinaryAssetsDirectory: abs,
		CRDDirectoryPaths:     []string{filepath.Join(moduleRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		UseExistingCluster:    &useExisting,
	}
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		t.Fatalf("starting envtest with binaries from %s: %v", abs, err)
	}
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return cfg
}

// moduleRoot is the repository root, found from this file's place in it, so
// tests in any package find config/crd.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// WriteKubeconfig writes cfg as a kubeconfig file in a temporary directory
// of the test, for programs run against the test's API server.
func WriteKubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
