//go:build manager && !packageapi

package daemon

import (
	"errors"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// errNoPackageAPI is why this binary refuses --package-api: the package
// API is built on k8s.io/apiserver, whose linking alone costs every
// process about 18 MiB resident whatever its flags (docs/architecture.md,
// "What the binary links"), so only catalogd-package-api, built with -tags
// packageapi, has it. The flag stays, so that both binaries take the same
// command lines and a deployment's mistake is named rather than a flag
// left unknown.
var errNoPackageAPI = errors.New("--package-api: this catalogd binary is built without the package API; run catalogd-package-api (the /catalogd-package-api entrypoint of the catalogd image) instead")

// packageAPI refuses: see errNoPackageAPI.
func packageAPI(*rest.Config, ManagerConfig, logr.Logger) (func(*Core) (manager.Runnable, func() bool, error), error) {
	return nil, errNoPackageAPI
}
