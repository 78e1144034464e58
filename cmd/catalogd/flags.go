package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/validation"
)

// usageError is a mistake in the command line: exit code 2, and a hint to
// read the usage, instead of a runtime failure's exit code 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// catalogFlag is one --catalog, with its --priority.
type catalogFlag struct {
	name string
	// value is as given; exactly one of dir (absolute) and image is set.
	value    string
	dir      string
	image    name.Reference
	priority int32
}

// serveConfig is the validated command line of `catalogd serve`.
type serveConfig struct {
	catalogs []catalogFlag // in command-line order
	listen   string
	dataDir  string
	watch    bool
	// verbosity is the logr V-level up to which logs are written.
	verbosity          int
	insecureRegistries []string
	caFile             string
	caBundle           []byte
}

// hasImages reports whether any catalog comes from an image.
func (c serveConfig) hasImages() bool {
	for _, cat := range c.catalogs {
		if cat.image != nil {
			return true
		}
	}
	return false
}

const serveUsage = `Usage: catalogd serve --catalog NAME=DIR|IMAGE [--catalog ...] --data-dir DIR [flags]

Index file-based catalogs into SQLite under --data-dir and serve the catalog
API on --listen. A catalog that fails to index stays listed in /catalogs with
the reason in lastError while the others serve.

Flags:
`

// newServeFlags declares the flags of `catalogd serve` on a new FlagSet and
// returns it with the raw values the repeatable flags collect.
func newServeFlags(cfg *serveConfig, catalogArgs, priorityArgs *[]string) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, usage by printUsage
	fs.Func("catalog", "serve catalog `NAME=DIR|IMAGE`: DIR is a file-based catalog directory, IMAGE a\n"+
		"catalog image with its registry host (quay.io/org/catalog:tag); repeatable", func(v string) error {
		*catalogArgs = append(*catalogArgs, v)
		return nil
	})
	fs.Func("priority", "give catalogs priorities as `NAME=N` (int32, default 0; higher answers first); repeatable", func(v string) error {
		*priorityArgs = append(*priorityArgs, v)
		return nil
	})
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "serve the API on this `host:port` (port 0 picks a free one)")
	fs.StringVar(&cfg.dataDir, "data-dir", "", "keep indexes (and unpacked images) in `DIR`; required")
	fs.BoolVar(&cfg.watch, "watch", false, "re-index a directory catalog when its files change; a broken edit keeps the last good index serving")
	fs.IntVar(&cfg.verbosity, "v", 0, "log verbosity `N`: 0 start-up and failures, 1 each index build, 2 each file event")
	fs.Func("insecure-registry", "talk plain HTTP to the registry at `host[:port]`; repeatable", func(v string) error {
		if v == "" || strings.ContainsAny(v, "/ ") {
			return errors.New("want host or host:port")
		}
		cfg.insecureRegistries = append(cfg.insecureRegistries, v)
		return nil
	})
	fs.StringVar(&cfg.caFile, "ca-file", "", "also trust the PEM certificates in `FILE` for registries")
	return fs
}

// printUsage writes the usage of `catalogd serve`, with long flags spelt as
// --name, the way the README and the Makefile spell them (the flag package
// takes one dash or two).
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, serveUsage)
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name
		}
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// parseServe parses and validates the arguments of `catalogd serve`. It
// returns flag.ErrHelp for -h, and a usageError for anything wrong.
func parseServe(args []string, stdout io.Writer) (serveConfig, error) {
	var (
		cfg                       serveConfig
		catalogArgs, priorityArgs []string
	)
	fs := newServeFlags(&cfg, &catalogArgs, &priorityArgs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, fs)
			return cfg, err
		}
		return cfg, usageError{err}
	}
	if fs.NArg() > 0 {
		return cfg, usagef("unexpected argument %q (catalogs are given as --catalog NAME=DIR)", fs.Arg(0))
	}
	if len(catalogArgs) == 0 {
		return cfg, usagef("no catalog to serve: give at least one --catalog NAME=DIR")
	}
	if cfg.dataDir == "" {
		return cfg, usagef("--data-dir is required: it is where the indexes are kept")
	}
	if cfg.verbosity < 0 || cfg.verbosity > 10 {
		return cfg, usagef("-v %d: want a level from 0 to 10", cfg.verbosity)
	}

	seen := map[string]int{} // name → index in cfg.catalogs
	for _, arg := range catalogArgs {
		c, err := parseCatalog(arg)
		if err != nil {
			return cfg, err
		}
		if _, dup := seen[c.name]; dup {
			return cfg, usagef("--catalog %s: catalog %q is given twice", arg, c.name)
		}
		seen[c.name] = len(cfg.catalogs)
		cfg.catalogs = append(cfg.catalogs, c)
	}
	prioritised := map[string]bool{}
	for _, arg := range priorityArgs {
		n, v, ok := strings.Cut(arg, "=")
		if !ok {
			return cfg, usagef("--priority %s: want NAME=N", arg)
		}
		i, known := seen[n]
		if !known {
			return cfg, usagef("--priority %s: no --catalog is named %q", arg, n)
		}
		if prioritised[n] {
			return cfg, usagef("--priority %s: catalog %q is given a priority twice", arg, n)
		}
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return cfg, usagef("--priority %s: %q is not a 32-bit integer", arg, v)
		}
		prioritised[n] = true
		cfg.catalogs[i].priority = int32(p)
	}
	if cfg.caFile != "" {
		b, err := os.ReadFile(cfg.caFile)
		if err != nil {
			return cfg, usagef("--ca-file: %w", err)
		}
		cfg.caBundle = b
	}
	return cfg, nil
}

// parseCatalog parses one NAME=DIR|IMAGE. A value naming an existing
// directory is a directory. Anything else must look like an image reference
// with a registry host: otherwise a mistyped directory such as
// test/testdata/dmeo would parse as docker.io/test/testdata/dmeo:latest and
// fail much later, and less clearly, as a failed pull.
func parseCatalog(arg string) (catalogFlag, error) {
	n, v, ok := strings.Cut(arg, "=")
	if !ok || v == "" {
		return catalogFlag{}, usagef("--catalog %s: want NAME=DIR or NAME=IMAGE", arg)
	}
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
		return catalogFlag{}, usagef("--catalog %s: name %q is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.'): %s",
			arg, n, strings.Join(errs, "; "))
	}
	c := catalogFlag{name: n, value: v}

	fi, err := os.Stat(v)
	switch {
	case err == nil && fi.IsDir():
		abs, err := filepath.Abs(v)
		if err != nil {
			return catalogFlag{}, usagef("--catalog %s: %w", arg, err)
		}
		c.dir = abs
		return c, nil
	case err == nil:
		return catalogFlag{}, usagef("--catalog %s: %s is a file; want the catalog's directory", arg, v)
	case !errors.Is(err, fs.ErrNotExist):
		return catalogFlag{}, usagef("--catalog %s: %w", arg, err)
	}

	if !looksLikeImage(v) {
		return catalogFlag{}, usagef("--catalog %s: no directory %s (an image reference needs a registry host, as in quay.io/org/catalog:tag)", arg, v)
	}
	ref, err := name.ParseReference(v)
	if err != nil {
		return catalogFlag{}, usagef("--catalog %s: no directory %s, and not an image reference: %w", arg, v, err)
	}
	c.image = ref
	return c, nil
}

// looksLikeImage reports whether v starts with a registry host, the way
// container tools tell a registry from a Docker Hub namespace.
func looksLikeImage(v string) bool {
	if strings.HasPrefix(v, ".") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") {
		return false
	}
	host, _, ok := strings.Cut(v, "/")
	return ok && (strings.ContainsAny(host, ".:") || host == "localhost")
}
