// Command catalogd is the catalog server for OLM file-based catalogs.
//
// `catalogd serve` indexes catalog directories (or images) given on the
// command line and serves the catalog API, with no cluster needed; it is
// what `make run` starts. `catalogd manager` runs in a cluster: the
// ClusterCatalog controller and the same API (see internal/manager). Exit
// codes: 0 after a clean shutdown (SIGINT or SIGTERM), 1 on a runtime
// failure, 2 on a mistake in the command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/catalogd/catalogd/internal/manager"
)

const usage = `catalogd is a catalog server for OLM file-based catalogs.

Usage:
  catalogd serve --catalog NAME=DIR|IMAGE [--catalog ...] --data-dir DIR [flags]
      index catalogs from directories or images and serve the API; no cluster needed
  catalogd manager --data-dir DIR [flags]
      run the ClusterCatalog controller and the API in a cluster
  catalogd help

Run 'catalogd serve -h' or 'catalogd manager -h' for the flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the process's exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "manager":
		return runManager(args[1:], stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "catalogd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func runServe(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseServe(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return fail(stderr, err)
	}
	log := zap.New(
		zap.WriteTo(stderr),
		zap.ConsoleEncoder(),
		zap.Level(zapcore.Level(-cfg.verbosity)),
		// Failures here are about catalogs, not code: a stack trace on
		// each would bury the message.
		zap.StacktraceLevel(zapcore.DPanicLevel),
	)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one ends the process at once.
	context.AfterFunc(ctx, stop)

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fail(stderr, fmt.Errorf("listen on %s: %w", cfg.listen, err))
	}
	if err := serve(ctx, cfg, ln, stdout, log); err != nil {
		return fail(stderr, err)
	}
	return 0
}

func runManager(args []string, stderr io.Writer) int {
	// Parsed here first only to tell a usage error (exit 2) from a failure.
	if _, _, err := manager.ParseFlags(args, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "catalogd manager: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	if err := manager.Run(ctx, args); err != nil {
		fmt.Fprintf(stderr, "catalogd manager: %v\n", err)
		return 1
	}
	return 0
}

// fail reports err and returns its exit code: 2 for a usage error.
func fail(stderr io.Writer, err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "catalogd serve: %v\nRun 'catalogd serve -h' for the flags.\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "catalogd serve: %v\n", err)
	return 1
}
