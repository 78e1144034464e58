package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/server"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/internal/version"
)

// newServeCommand is `catalogd serve`.
func newServeCommand(logs *logFlags) *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve --catalog NAME=DIR|IMAGE [--catalog ...] --data-dir DIR [flags]",
		Short: "index catalogs from directories or images and serve the API; no cluster needed",
		Long: `Index file-based catalogs into SQLite under --data-dir and serve the catalog
API on --listen. A catalog that fails to index stays listed in /catalogs with
the reason in lastError while the others serve.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cfg.complete(args); err != nil {
				return err
			}
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			log.Info("catalogd serve starting", "version", version.String())
			ctx, stop := signalContext()
			defer stop()
			ln, err := net.Listen("tcp", cfg.listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", cfg.listen, err)
			}
			return serve(ctx, cfg, ln, cmd.OutOrStdout(), log)
		},
	}
	cfg.bind(cmd.Flags())
	return cmd
}

// serve runs `catalogd serve` on ln until ctx ends: it registers the
// indexes kept in the data directory (they answer at once), serves the API,
// syncs every catalog (in parallel), prints a summary to out, then keeps
// them current: failures are retried with backoff, image tags polled every
// --poll-interval, and with --watch directories re-indexed as they change.
// A catalog that fails to index does not stop the server: its LastError
// says why.
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
			UserAgent:          "catalogd/" + version.String(),
			Logger:             log.WithName("unpack"),
		}); err != nil {
			return usageError{fmt.Errorf("--ca-file %s: %w", cfg.caFile, err)}
		}
	}

	table := catalogs.NewTable()
	svc := catalogsync.New(catalogsync.Options{
		Store:       store,
		Table:       table,
		Log:         log.WithName("sync"),
		SyncTimeout: cfg.syncTimeout,
		DataDir:     cfg.dataDir,
	})
	sources := map[string]catalogsync.Fetcher{}
	for _, c := range cfg.catalogs {
		var src catalogsync.Fetcher = catalogsync.DirFetcher{Path: c.dir}
		if c.image != nil {
			src = catalogsync.ImageFetcher{Ref: c.image, Unpacker: unpacker, TempDir: unpackDir}
		}
		sources[c.name] = src
	}
	// An index of a catalog no longer listed, or one another source left
	// under a listed name, is removed rather than served.
	if err := svc.Prune(func(name, ref string) bool { return sources[name] != nil && sources[name].Built(ref) }); err != nil {
		return err
	}
	svc.Load()
	for _, c := range cfg.catalogs {
		spec := catalogsync.Spec{Name: c.name, Fetcher: sources[c.name], Priority: c.priority}
		if c.image != nil {
			spec.PollInterval = cfg.pollInterval
		}
		svc.Set(spec)
	}
	svc.MarkLoaded()

	api, err := httpapi.New(table, store, httpapi.Options{Log: log.WithName("http")})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		API:         api,
		Ready:       svc.Ready,
		TLSCertFile: cfg.tlsCert,
		TLSKeyFile:  cfg.tlsKey,
		Log:         log.WithName("http"),
	})
	if err != nil {
		return usageError{err}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	base := srv.Scheme() + "://" + urlHost(ln.Addr())
	fmt.Fprintf(out, "catalogd serving %s, indexes in %s\n", base, filepath.Join(cfg.dataDir, "index"))
	log.Info("serving the catalog API", "address", ln.Addr().String(), "catalogs", len(cfg.catalogs))

	var background sync.WaitGroup
	if cfg.watch {
		for _, c := range cfg.catalogs {
			if c.image != nil {
				fmt.Fprintf(out, "  (%s comes from an image: --watch does not apply to it)\n", c.name)
				continue
			}
			background.Go(func() { watch(ctx, svc, c.name, c.dir, log) })
		}
	}

	results := svc.SyncAll(ctx)
	if ctx.Err() == nil {
		printSummary(out, base, cfg, api, results, cfg.watch)
	}
	background.Go(func() { _ = svc.Start(ctx) })

	err = <-served
	log.Info("shutting down")
	background.Wait()
	return err
}

// watch re-indexes a directory catalog whenever its files change, until ctx
// ends.
func watch(ctx context.Context, svc *catalogsync.Service, name, dir string, log logr.Logger) {
	log = log.WithName("watch").WithValues("catalog", name)
	err := catalogdir.Watch(logr.NewContext(ctx, log), dir, catalogdir.DefaultDebounce, func() {
		log.Info("catalog directory changed; re-indexing")
		svc.Trigger(name)
	})
	if err != nil {
		log.Error(err, "not watching the catalog directory any more")
	}
}

// printSummary tells whoever started the server what each catalog holds,
// what went wrong, and what to try first. It asks the API itself, so the
// summary says what a client would be told, whether the index was just
// built or kept from an earlier run.
func printSummary(out io.Writer, base string, cfg serveConfig, api http.Handler, results map[string]catalogsync.Outcome, watching bool) {
	var b bytes.Buffer
	first := ""
	for _, c := range cfg.catalogs {
		detail, err := catalogDetail(api, c.name)
		if err != nil {
			fmt.Fprintf(&b, "  %s: cannot be read: %v\n", c.name, err)
			continue
		}
		if r := results[c.name]; r.Err != nil {
			state := "Pending"
			if detail.IndexedAt != nil {
				state = "Serving its previous index"
			}
			fmt.Fprintf(&b, "  %s: NOT INDEXED (%s): %v\n", c.name, state, r.Err)
			continue
		}
		how := "unchanged since the last run"
		if r := results[c.name]; r.Rebuilt {
			how = "indexed in " + r.Duration.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %s: %d packages, %d channels, %d bundles (%s, from %s)\n",
			c.name, detail.Counts.Packages, detail.Counts.Channels, detail.Counts.Bundles, how, c.value)
		if n := len(detail.Problems); n > 0 {
			fmt.Fprintf(&b, "    %d problems (the packages concerned still answer; all in %s/catalogs/%s):\n", n, base, c.name)
			for _, p := range detail.Problems[:min(n, 3)] {
				fmt.Fprintf(&b, "      %s: %s\n", p.Package, p.Message)
			}
			if n > 3 {
				fmt.Fprintf(&b, "      ...\n")
			}
		}
		if first == "" {
			first = c.name
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

// catalogDetail asks api for GET /catalogs/{name}, in process.
func catalogDetail(api http.Handler, name string) (client.CatalogDetail, error) {
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/catalogs/"+name, nil))
	var d client.CatalogDetail
	if rec.Code != http.StatusOK {
		return d, fmt.Errorf("GET /catalogs/%s: %d %s", name, rec.Code, bytes.TrimSpace(rec.Body.Bytes()))
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		return d, fmt.Errorf("GET /catalogs/%s: %w", name, err)
	}
	return d, nil
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
