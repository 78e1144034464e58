// Command kubectl-catalog explores OLM catalogs from a terminal: as a
// kubectl plugin (`kubectl catalog ...`, once it is on the PATH) or alone.
// The commands live in internal/catalogcli.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/catalogd/catalogd/internal/catalogcli"
)

// completionName is the name kubectl (1.26 and later) runs to complete
// `kubectl catalog ...`, with the words typed so far as its arguments; the
// README has it linked to this binary. Under that name the binary answers
// as cobra's __complete does, which is the protocol kubectl reads.
const completionName = "kubectl_complete-catalog"

func main() {
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == completionName {
		args = append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := catalogcli.Run(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
