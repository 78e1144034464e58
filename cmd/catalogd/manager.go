//go:build manager

package main

import (
	"fmt"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/catalogd/catalogd/internal/daemon"
	"github.com/catalogd/catalogd/internal/version"
)

// newManagerCommand is `catalogd manager`: the ClusterCatalog controllers,
// in the binary built with -tags manager (catalogd-manager, and /catalogd
// in the image).
func newManagerCommand(logs *logFlags) *cobra.Command {
	var opts daemon.ManagerOptions
	cmd := &cobra.Command{
		Use:   "manager --data-dir DIR [flags]",
		Short: "run the ClusterCatalog controllers and the API in a cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := opts.Validate()
			if err != nil {
				return optionsError(err)
			}
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctrl.SetLogger(log)
			restCfg, err := cfg.RESTConfig()
			if err != nil {
				return fmt.Errorf("load kubeconfig: %w", err)
			}
			log.Info("catalogd manager starting", "version", version.String())
			cfg.IndexMemory = applyMemoryLimit(log)
			ctx, stop := signalContext()
			defer stop()
			return daemon.RunManager(ctx, restCfg, cfg, log)
		},
	}
	opts.BindFlags(cmd.Flags())
	return cmd
}
