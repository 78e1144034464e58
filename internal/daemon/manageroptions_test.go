package daemon

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
