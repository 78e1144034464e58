//go:build manager && packageapi

package daemon

import (
	"os"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/catalogd/catalogd/internal/packageapi"
)

// packageAPI returns what builds the package API (--package-api) over the
// core's store and table once RunManager has wired them: an aggregated API
// server every replica runs. Only a binary built with -tags manager,packageapi
// (catalogd-package-api) has it, because linking k8s.io/apiserver costs
// every process, whatever its flags (docs/architecture.md, "What the binary
// links").
func packageAPI(restCfg *rest.Config, cfg ManagerConfig, log logr.Logger) (func(*Core) (manager.Runnable, func() bool, error), error) {
	return func(core *Core) (manager.Runnable, func() bool, error) {
		srv, err := packageapi.New(packageapi.Config{
			BindAddress:   cfg.PackageAPIBindAddress,
			CertDir:       cfg.PackageAPICertDir,
			Kube:          restCfg,
			HomeNamespace: podNamespace(),
			Log:           log,
		}, core.Store, core.Table)
		if err != nil {
			return nil, nil, err
		}
		return everyReplica(srv.Run), srv.Loaded, nil
	}, nil
}

// podNamespace is the namespace the manager runs in (the one a listing of
// packages across all namespaces shows them in): $POD_NAMESPACE, else the
// service account's, else "default" outside a cluster.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return "default"
}
