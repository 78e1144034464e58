// Command kubectl-catalog explores OLM catalogs from a terminal: as a
// kubectl plugin (`kubectl catalog ...`, once it is on the PATH) or alone.
// The commands live in internal/catalogcli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/catalogd/catalogd/internal/catalogcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := catalogcli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
