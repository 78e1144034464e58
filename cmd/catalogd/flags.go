package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/catalogd/catalogd/internal/catalogsync"
)

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
	// pollInterval is how often image tags are resolved again; 0 never.
	pollInterval       time.Duration
	syncTimeout        time.Duration
	insecureRegistries []string
	caFile             string
	caBundle           []byte
	tlsCert, tlsKey    string

	// Raw values of the repeatable flags, validated by complete.
	catalogArgs, priorityArgs []string
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

// bind declares the flags of `catalogd serve` on fs.
func (c *serveConfig) bind(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.catalogArgs, "catalog", nil, "serve catalog `NAME=DIR|IMAGE`: DIR is a file-based catalog directory, IMAGE a\n"+
		"catalog image with its registry host (quay.io/org/catalog:tag); repeatable")
	fs.StringArrayVar(&c.priorityArgs, "priority", nil, "give catalogs priorities as `NAME=N` (int32, default 0; higher answers first); repeatable")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "serve the API on this `host:port` (port 0 picks a free one)")
	fs.StringVar(&c.dataDir, "data-dir", "", "keep indexes (and unpacked images) in `DIR`; required")
	fs.BoolVar(&c.watch, "watch", false, "re-index a directory catalog when its files change; a broken edit keeps the last good index serving")
	fs.DurationVar(&c.pollInterval, "poll-interval", 0, "resolve image tags again this often and index new content (0: only at start-up and on failure)")
	fs.DurationVar(&c.syncTimeout, "sync-timeout", catalogsync.DefaultSyncTimeout, "deadline of one catalog sync (resolve, pull, unpack, index)")
	fs.StringArrayVar(&c.insecureRegistries, "insecure-registry", nil, "talk plain HTTP to the registry at `host[:port]`; repeatable")
	fs.StringVar(&c.caFile, "ca-file", "", "also trust the PEM certificates in `FILE` for registries")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve HTTPS with the PEM certificate in `FILE`, reloaded when it changes")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
}

// parseServe parses and validates the arguments of `catalogd serve` (tests
// use it; the command itself parses through cobra).
func parseServe(args []string) (serveConfig, error) {
	var cfg serveConfig
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.bind(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, usageError{err}
	}
	return cfg, cfg.complete(fs.Args())
}

// complete validates the parsed flags; args are the positional arguments.
func (cfg *serveConfig) complete(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q (catalogs are given as --catalog NAME=DIR)", args[0])
	}
	if len(cfg.catalogArgs) == 0 {
		return usagef("no catalog to serve: give at least one --catalog NAME=DIR")
	}
	if cfg.dataDir == "" {
		return usagef("--data-dir is required: it is where the indexes are kept")
	}
	if cfg.pollInterval < 0 {
		return usagef("--poll-interval %s: want a positive duration, or 0 for no polling", cfg.pollInterval)
	}
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together: give both or neither")
	}
	for _, r := range cfg.insecureRegistries {
		if r == "" || strings.ContainsAny(r, "/ ") {
			return usagef("--insecure-registry %q: want host or host:port", r)
		}
	}

	seen := map[string]int{} // name → index in cfg.catalogs
	for _, arg := range cfg.catalogArgs {
		c, err := parseCatalog(arg)
		if err != nil {
			return err
		}
		if _, dup := seen[c.name]; dup {
			return usagef("--catalog %s: catalog %q is given twice", arg, c.name)
		}
		seen[c.name] = len(cfg.catalogs)
		cfg.catalogs = append(cfg.catalogs, c)
	}
	prioritised := map[string]bool{}
	for _, arg := range cfg.priorityArgs {
		n, v, ok := strings.Cut(arg, "=")
		if !ok {
			return usagef("--priority %s: want NAME=N", arg)
		}
		i, known := seen[n]
		if !known {
			return usagef("--priority %s: no --catalog is named %q", arg, n)
		}
		if prioritised[n] {
			return usagef("--priority %s: catalog %q is given a priority twice", arg, n)
		}
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return usagef("--priority %s: %q is not a 32-bit integer", arg, v)
		}
		prioritised[n] = true
		cfg.catalogs[i].priority = int32(p)
	}
	if cfg.caFile != "" {
		b, err := os.ReadFile(cfg.caFile)
		if err != nil {
			return usagef("--ca-file: %w", err)
		}
		cfg.caBundle = b
	}
	return nil
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
