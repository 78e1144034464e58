// Command catalogd is the catalog server for OLM file-based catalogs.
//
// `catalogd serve` indexes catalogs given on the command line (directories,
// images and artifacts, OCI layouts, git repositories, HTTP archives) and serves the catalog API, with no cluster needed; it is
// what `make run` starts. `catalogd manager` runs in a cluster: the
// ClusterCatalog controllers and the same API. Both are wired by
// internal/daemon, the composition root; this package only parses the
// command line and sets up logging. Exit codes: 0 after a clean shutdown
// (SIGINT or SIGTERM), 1 on a runtime failure, 2 on a mistake in the
// command line.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/catalogd/catalogd/internal/daemon"
	"github.com/catalogd/catalogd/internal/memlimit"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/version"
)

func main() {
	// No heap profile is ever taken from catalogd, but the runtime samples
	// allocations for one whenever a linked package could write one (gRPC
	// links runtime/pprof), and its table of samples is about 1.4 MiB,
	// most of it resident once a build has allocated a few hundred MB.
	runtime.MemProfileRate = 0
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a mistake in the command line: exit code 2, and a hint to
// read the usage, instead of a runtime failure's exit code 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// optionsError is an error of a subcommand's flags and arguments: a mistake
// in the command line, except a catalog location that names nothing, which
// is a catalog that cannot be read (exit 1, as validate --help says).
func optionsError(err error) error {
	var missing daemon.MissingCatalogError
	if errors.As(err, &missing) {
		return err
	}
	return usageError{err}
}

// logFlags are the logging flags every subcommand takes.
type logFlags struct {
	verbosity int
	format    string
}

func (l *logFlags) bind(cmd *cobra.Command) {
	cmd.PersistentFlags().IntVarP(&l.verbosity, "verbosity", "v", 0, "log verbosity `N`: 0 start-up and failures, 1 each index build and request, 2 each file event (default 0)")
	cmd.PersistentFlags().StringVar(&l.format, "log-format", "console", "log as `console|json`: console for people, json for log collectors")
}

// logger builds the process's logger from the flags.
func (l *logFlags) logger(w io.Writer) (logr.Logger, error) {
	if l.verbosity < 0 || l.verbosity > 10 {
		return logr.Logger{}, usagef("--verbosity %d: want a level from 0 to 10", l.verbosity)
	}
	var enc zapcore.Encoder
	switch l.format {
	case "console":
		c := zap.NewDevelopmentEncoderConfig()
		c.EncodeTime = zapcore.RFC3339TimeEncoder
		enc = zapcore.NewConsoleEncoder(c)
	case "json":
		c := zap.NewProductionEncoderConfig()
		c.EncodeTime = zapcore.RFC3339TimeEncoder
		enc = zapcore.NewJSONEncoder(c)
	default:
		return logr.Logger{}, usagef("--log-format %q: want console or json", l.format)
	}
	sink := zapcore.AddSync(w)
	core := zapcore.NewCore(enc, sink, zap.NewAtomicLevelAt(zapcore.Level(-l.verbosity)))
	// Failures here are about catalogs, not code: a stack trace on each
	// would bury the message. Every entry at the level asked for is
	// written, none sampled away.
	return zapr.NewLogger(zap.New(core, zap.ErrorOutput(sink), zap.AddStacktrace(zapcore.DPanicLevel))), nil
}

// applyMemoryLimit shares the container's memory limit between the Go
// runtime and SQLite (package memlimit), applies both shares, and logs
// them, so that an operator can see what each allocator works to. It
// returns what each live index may keep. It is done here, once per process
// and before any SQLite connection opens, and not in the composition root,
// which tests run many times in one process.
func applyMemoryLimit(log logr.Logger) store.Memory {
	budget, err := memlimit.Apply(os.DirFS("/"), os.Getenv)
	if err != nil {
		log.Error(err, "cannot read the memory limit of this container")
	}
	if budget.Source == memlimit.None {
		log.Info("no memory limit found; the Go runtime collects by GOGC alone, SQLite keeps to fixed bounds")
	}
	sq := budget.SQLite
	if err := memlimit.ApplySQLite(sq); err != nil {
		log.Error(err, "SQLite's memory is bounded only by the page cache of each connection")
	}
	log.Info("memory budget", "limit", budget.Limit, "from", string(budget.Source), "goLimit", budget.Go,
		"sqliteSoftHeapLimit", sq.SoftHeapLimit, "sqliteHardHeapLimit", sq.HardHeapLimit,
		"connsPerIndex", sq.Conns, "cacheKiBPerConn", sq.CacheKiB)
	return store.Memory{Conns: sq.Conns, CacheKiB: sq.CacheKiB}
}

// signalContext ends on SIGINT or SIGTERM; after the first signal, a second
// one ends the process at once.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// newRoot builds the command tree.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var logs logFlags
	root := &cobra.Command{
		Use:           "catalogd",
		Short:         "catalogd is a catalog server for OLM file-based catalogs.",
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// --version says what `catalogd version` says; -v is the verbosity.
	root.SetVersionTemplate("catalogd {{.Version}}\n")
	// Help fits 80 columns: pflag wraps each flag's usage to that width
	// (though not inside a word longer than the space left, which
	// TestHelp catches).
	root.SetUsageTemplate(strings.ReplaceAll(root.UsageTemplate(), ".FlagUsages |", ".FlagUsagesWrapped 80 |"))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	logs.bind(root)

	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "print the version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "catalogd", version.String())
			return err
		},
	})
	root.AddCommand(newServeCommand(&logs))
	root.AddCommand(newManagerCommand(&logs))
	root.AddCommand(newValidateCommand(&logs))
	root.AddCommand(newIndexCommand(&logs))
	return root
}

// newServeCommand is `catalogd serve`.
func newServeCommand(logs *logFlags) *cobra.Command {
	var opts daemon.ServeOptions
	cmd := &cobra.Command{
		Use:   "serve --catalog NAME=SOURCE [--catalog ...] --data-dir DIR [flags]",
		Short: "index catalogs from any source and serve them; no cluster",
		Long: `Index file-based catalogs into SQLite under --data-dir and serve the catalog
API on --listen. A catalog that fails to index stays listed in /catalogs with
the reason in lastError while the others serve.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := opts.Validate(args)
			if err != nil {
				return optionsError(err)
			}
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			log.Info("catalogd serve starting", "version", version.String())
			cfg.IndexMemory = applyMemoryLimit(log)
			ctx, stop := signalContext()
			defer stop()
			return daemon.Serve(ctx, cfg, cmd.OutOrStdout(), log)
		},
	}
	opts.BindFlags(cmd.Flags())
	return cmd
}

// errProblemsFound is what `catalogd validate` returns when the catalog has
// problems: exit code 1, with nothing more to print than the problems.
var errProblemsFound = errors.New("the catalog has problems")

// newValidateCommand is `catalogd validate`.
func newValidateCommand(logs *logFlags) *cobra.Command {
	var opts daemon.ValidateOptions
	cmd := &cobra.Command{
		Use:   "validate SOURCE [flags]",
		Short: "index a catalog as the server would and print every problem",
		Long: `Index a file-based catalog (a directory, an image with its registry host,
oci:DIR[:TAG], git::URL[//DIR][?ref=REF], or an http(s) URL of an archive or
file) into a temporary directory, as catalogd serve and catalogd manager
would, and print every problem they would report, one per line as
file:line:column: package: message (or -o json). Exit 0 when the catalog is
clean, 1 when it has problems or cannot be read, 2 on a mistake in the command
line.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := opts.Validate(args)
			if err != nil {
				return optionsError(err)
			}
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			n, err := daemon.Validate(ctx, cfg, cmd.OutOrStdout(), log)
			if err != nil {
				return err
			}
			if n > 0 {
				if !cfg.JSON {
					fmt.Fprintf(cmd.ErrOrStderr(), "%d problem(s) found\n", n)
				}
				return errProblemsFound
			}
			return nil
		},
	}
	opts.BindFlags(cmd.Flags())
	return cmd
}

// newIndexCommand is `catalogd index`, whose one subcommand publishes a
// catalog's index beside it.
func newIndexCommand(logs *logFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "work with the indexes catalogd builds",
		Args:  cobra.NoArgs,
	}
	var opts daemon.PublishOptions
	publish := &cobra.Command{
		Use:   "publish IMAGE [flags]",
		Short: "build a catalog image's index and push it beside the image",
		Long: `Pull the catalog image or artifact IMAGE (with its registry host, by tag or
digest), build its index exactly as catalogd serve and catalogd manager would,
and push it to the same repository as an OCI artifact referring to the
catalog (artifactType application/vnd.catalogd.index.v2+json; the database
and content compressed with zstd), through the referrers API or, where the
registry has none, the referrers tag scheme.
Replicas of this catalogd's index schema then download and check it instead
of building it (--prebuilt-index). Run it in the catalog's CI right after the
image is pushed, with credentials that may push there (the docker config).
Publishing again pushes nothing when an index of this schema is there.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := opts.Validate(args)
			if err != nil {
				return optionsError(err)
			}
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			return daemon.Publish(ctx, cfg, cmd.OutOrStdout(), log)
		},
	}
	opts.BindFlags(publish.Flags())
	cmd.AddCommand(publish)
	return cmd
}

// run executes the command line and returns the process's exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	if errors.Is(err, errProblemsFound) {
		return 1
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for the flags.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	return 1
}

// isCobraUsage reports cobra's own complaints about the command line (an
// unknown subcommand, stray arguments), which it returns as plain errors.
func isCobraUsage(err error) bool {
	for _, p := range []string{"unknown command", "unknown flag", "accepts ", "requires ", "invalid argument"} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}
