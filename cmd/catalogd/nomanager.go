//go:build !manager

package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/catalogd/catalogd/internal/daemon"
)

// errNoManager is why this binary refuses `catalogd manager`. The
// controllers are built on controller-runtime and client-go, whose
// initialisation alone would cost every process of this binary about
// 10 MiB resident and a few MiB of heap whatever its command
// (docs/architecture.md, "What the binary links"): `catalogd serve`,
// validate and index publish need none of it. catalogd-manager, built
// with -tags manager, has the controllers, and is the catalogd image's
// /catalogd.
var errNoManager = errors.New("this catalogd binary is built without the ClusterCatalog controllers; run catalogd-manager (make build), or the catalogd image, whose /catalogd has them")

// newManagerCommand is `catalogd manager` in the default build: the same
// flags as catalogd-manager's, so that a command line is checked as it
// would be there (a mistake in it is exit 2), then refused (exit 1) before
// anything is opened.
func newManagerCommand(*logFlags) *cobra.Command {
	var opts daemon.ManagerOptions
	cmd := &cobra.Command{
		Use:   "manager --data-dir DIR [flags]",
		Short: "run the ClusterCatalog controllers in a cluster (catalogd-manager)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if _, err := opts.Validate(); err != nil {
				return optionsError(err)
			}
			return errNoManager
		},
	}
	opts.BindFlags(cmd.Flags())
	return cmd
}
