package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// shutdownGrace is how long in-flight requests get to finish on SIGINT or
// SIGTERM before their connections are closed.
const shutdownGrace = 10 * time.Second

// serve runs `catalogd serve` on ln until ctx ends: it indexes every catalog
// (in parallel), serves the API meanwhile (catalogs answer as soon as their
// index is live), prints a summary to out, and with cfg.watch re-indexes
// directory catalogs as they change. A catalog that fails to index does not
// stop the server: its LastError says why.
func serve(ctx context.Context, cfg serveConfig, ln net.Listener, out io.Writer, log logr.Logger) error {
	defer ln.Close()
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	store, err := store.New(filepath.Join(cfg.dataDir, "index"), log.WithName("index"))
	if err != nil {
		return fmt.Errorf("open index store: %w", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error(err, "closing index store")
		}
	}()

	// Unpacked images are only needed while they are indexed; whatever is
	// left there was left by a crash.
	unpackDir := filepath.Join(cfg.dataDir, "unpack")
	if err := os.RemoveAll(unpackDir); err != nil {
		return fmt.Errorf("clear unpack directory: %w", err)
	}
	var unpacker *unpack.Unpacker
	if cfg.hasImages() {
		if unpacker, err = unpack.New(unpack.Options{
			CABundle:           cfg.caBundle,
			InsecureRegistries: cfg.insecureRegistries,
			UserAgent:          "catalogd",
			Logger:             log.WithName("unpack"),
		}); err != nil {
			return usageError{fmt.Errorf("--ca-file %s: %w", cfg.caFile, err)}
		}
	}

	reg := catalogs.NewRegistry()
	indexers := make([]*indexer, 0, len(cfg.catalogs))
	for _, c := range cfg.catalogs {
		var src contentSource = dirSource{path: c.dir}
		if c.image != nil {
			src = imageSource{ref: c.image, unpacker: unpacker, tmpDir: unpackDir}
		}
		x, err := register(store, reg, c, src, log)
		if err != nil {
			return err
		}
		indexers = append(indexers, x)
	}
	if err := dropUnlisted(store, cfg, log); err != nil {
		return err
	}

	api, err := httpapi.New(reg, store, httpapi.Options{Log: log.WithName("query")})
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		// No WriteTimeout: /api/v1/all of a large catalog streams for as long
		// as a slow client takes, and a fixed limit would cut it off.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       stdlog.New(logWriter{log.WithName("http")}, "", 0),
		// Requests keep the background context: cancelling them with ctx
		// would cut off the in-flight requests Shutdown lets finish.
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + urlHost(ln.Addr())
	fmt.Fprintf(out, "catalogd serving %s, indexes in %s\n", base, filepath.Join(cfg.dataDir, "index"))
	log.Info("serving the catalog API", "address", ln.Addr().String(), "catalogs", len(indexers))

	var background sync.WaitGroup
	if cfg.watch {
		for _, x := range indexers {
			if d, ok := x.src.(dirSource); ok {
				background.Go(func() { watch(ctx, x, d.path) })
			} else {
				fmt.Fprintf(out, "  (%s comes from an image: --watch does not apply to it)\n", x.name)
			}
		}
	}

	results := indexAll(ctx, indexers)
	if ctx.Err() == nil {
		printSummary(ctx, out, base, indexers, results, cfg.watch)
	}

	select {
	case <-ctx.Done():
		err = nil
	case err = <-served:
		err = fmt.Errorf("serve HTTP: %w", err)
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if shutdownErr := srv.Shutdown(shutdownCtx); shutdownErr != nil {
		err = errors.Join(err, fmt.Errorf("shut down HTTP server: %w", shutdownErr))
		_ = srv.Close()
	}
	background.Wait()
	return err
}

// register puts a catalog into the registry: Serving at once when --data-dir
// holds an index built from the same source (it answers while the new one
// builds), Pending otherwise. An index left there from another source under
// the same name is removed rather than served under this catalog's name.
func register(store *store.Store, reg *catalogs.Registry, c catalogFlag, src contentSource, log logr.Logger) (*indexer, error) {
	state := catalogs.Pending
	if info, ok := store.Info(c.name); ok {
		if src.Built(info.SourceRef) {
			state = catalogs.Serving
		} else {
			log.Info("removing an index built from another source", "catalog", c.name, "source", info.SourceRef)
			if err := store.Remove(c.name); err != nil {
				return nil, err
			}
		}
	}
	reg.Put(catalogs.Catalog{Name: c.name, Source: src.Describe(), Priority: c.priority, State: state})
	return &indexer{name: c.name, src: src, store: store, reg: reg, log: log.WithValues("catalog", c.name)}, nil
}

// dropUnlisted removes indexes of catalogs no longer on the command line, so
// that --data-dir does not grow with every catalog ever served from it.
func dropUnlisted(store *store.Store, cfg serveConfig, log logr.Logger) error {
	listed := map[string]bool{}
	for _, c := range cfg.catalogs {
		listed[c.name] = true
	}
	for _, name := range store.Catalogs() {
		if !listed[name] {
			log.Info("removing the index of a catalog that is no longer served", "catalog", name)
			if err := store.Remove(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// outcome is how the first sync of one catalog went.
type outcome struct {
	res syncResult
	err error
}

// indexAll syncs every catalog in parallel; each catalog is served as soon
// as its own index is live.
func indexAll(ctx context.Context, indexers []*indexer) []outcome {
	results := make([]outcome, len(indexers))
	var wg sync.WaitGroup
	for i, x := range indexers {
		wg.Go(func() {
			res, err := x.sync(ctx)
			results[i] = outcome{res, err}
		})
	}
	wg.Wait()
	return results
}

// watch re-indexes a directory catalog whenever its files change, until ctx
// ends. A failed re-index has already been logged and recorded by sync.
func watch(ctx context.Context, x *indexer, dir string) {
	log := x.log.WithName("watch")
	err := source.Watch(logr.NewContext(ctx, log), dir, source.DefaultDebounce, func() {
		log.Info("catalog directory changed; re-indexing")
		if res, err := x.sync(ctx); err == nil && res.rebuilt {
			log.Info("re-indexed", "duration", res.duration.Round(time.Millisecond).String())
		}
	})
	if err != nil {
		log.Error(err, "not watching the catalog directory any more")
	}
}

// printSummary tells whoever started the server what each catalog holds,
// what went wrong, and what to try first.
func printSummary(ctx context.Context, out io.Writer, base string, indexers []*indexer, results []outcome, watching bool) {
	var b bytes.Buffer
	first := ""
	for i, x := range indexers {
		r := results[i]
		if r.err != nil {
			state := "Pending"
			if _, ok := x.store.Info(x.name); ok {
				state = "Serving its previous index"
			}
			fmt.Fprintf(&b, "  %s: NOT INDEXED (%s): %v\n", x.name, state, r.err)
			continue
		}
		c, err := x.readCounts(ctx)
		if err != nil {
			fmt.Fprintf(&b, "  %s: indexed, but its index cannot be read: %v\n", x.name, err)
			continue
		}
		how := "unchanged since the last run"
		if r.res.rebuilt {
			how = "indexed in " + r.res.duration.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %s: %d packages, %d channels, %d bundles (%s, from %s)\n",
			x.name, c.packages, c.channels, c.bundles, how, x.src.Describe())
		if n := len(c.problems); n > 0 {
			fmt.Fprintf(&b, "    %d problems (the packages concerned still answer; all in %s/catalogs/%s):\n", n, base, x.name)
			for _, p := range c.problems[:min(n, 3)] {
				fmt.Fprintf(&b, "      %s\n", p)
			}
			if n > 3 {
				fmt.Fprintf(&b, "      ...\n")
			}
		}
		if first == "" {
			first = x.name
		}
	}
	if watching {
		fmt.Fprintf(&b, "Watching catalog directories: edits are re-indexed; a broken edit keeps the last good index and shows in lastError.\n")
	}
	fmt.Fprintf(&b, "Try:\n  curl -s %s/catalogs | jq\n", base)
	if first != "" {
		fmt.Fprintf(&b, "  curl -s %s/catalogs/%s/packages | jq\n", base, first)
	}
	fmt.Fprintf(&b, "  curl -s %s/openapi.yaml   # every endpoint\n", base)
	_, _ = out.Write(b.Bytes())
}

// urlHost turns a listen address into a host:port to put in a URL: an
// unspecified address (":8080", "[::]:8080") becomes localhost.
func urlHost(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// logWriter sends the HTTP server's own messages (TLS handshake errors,
// panics it recovered) to the structured log.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
