package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/source"
)

// Serve runs `catalogd serve` until ctx ends: it serves the API (the
// indexes kept in the data directory answer at once), syncs every catalog
// of the command line in parallel, prints a summary to out, then keeps them
// current: failures are retried with backoff, every source but directories
// polled every --poll-interval, and with --watch directories re-indexed as
// they change.
// A catalog that fails to index does not stop the server: its LastError
// says why.
func Serve(ctx context.Context, cfg ServeConfig, out io.Writer, log logr.Logger) (err error) {
	core, err := cfg.Complete(log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, core.Close()) }()

	fetchers := map[string]catalogsync.Fetcher{}
	for _, c := range cfg.Catalogs {
		if fetchers[c.Name], err = core.Fetcher(c.Source, source.Credentials{}); err != nil {
			return fmt.Errorf("--catalog %s=%s: %w", c.Name, c.Value, err)
		}
	}
	// An index of a catalog no longer listed, or one another source left
	// under a listed name, is removed rather than served.
	if err := core.Sync.Prune(func(name, ref string) bool { return fetchers[name] != nil && fetchers[name].Built(ref) }); err != nil {
		return err
	}
	for _, c := range cfg.Catalogs {
		spec := catalogsync.Spec{Name: c.Name, Fetcher: fetchers[c.Name], Priority: c.Priority, Labels: c.Labels}
		if c.Source.Dir == "" {
			spec.PollInterval = cfg.PollInterval
		}
		core.Sync.Set(spec)
	}
	core.Sync.MarkLoaded()

	// The servers stop together: when ctx ends, or when one fails.
	serving, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 2)
	go func() { served <- core.Server.Serve(serving, core.Listener) }()
	base := core.Server.Scheme() + "://" + urlHost(core.Listener.Addr())
	fmt.Fprintf(out, "catalogd serving %s, indexes in %s\n", base, filepath.Join(cfg.DataDir, datadir.IndexDir))
	log.Info("serving the catalog API", "address", core.Listener.Addr().String(), "catalogs", len(cfg.Catalogs))
	if core.GRPC != nil {
		go func() { served <- core.GRPC.Serve(serving, core.GRPCListener) }()
		fmt.Fprintf(out, "OLM v0's registry API (gRPC) on %s: dial CATALOG.<any host name>:%s, whose first label names the catalog\n",
			core.GRPCListener.Addr(), port(core.GRPCListener.Addr()))
		log.Info("serving OLM v0's registry API", "address", core.GRPCListener.Addr().String())
	}

	var background sync.WaitGroup
	if cfg.Watch {
		for _, c := range cfg.Catalogs {
			if c.Source.Dir == "" {
				fmt.Fprintf(out, "  (%s is not a directory: --watch does not apply to it; --poll-interval does)\n", c.Name)
				continue
			}
			background.Go(func() { watch(ctx, core.Sync, c.Name, c.Source.Dir, log) })
		}
	}

	// The pages start-up read (flag parsing, the packages' initialisers)
	// are given back before the first build as well as after it: kept,
	// they were a third of the first build's peak resident set on the
	// bench catalog (66 MiB; 42-48 without them, issue 35), and the build
	// reads few of them again.
	if cfg.PageOutStartup {
		pageOutStartup(log)
	}
	results := core.Sync.SyncAll(ctx)
	if ctx.Err() == nil {
		printSummary(out, base, cfg, core.API, results)
		// Start-up ends with the first sync of every catalog; what the
		// builds read of the executable is not needed to serve.
		if cfg.PageOutStartup {
			pageOutStartup(log)
		}
	}
	background.Go(func() { _ = core.Sync.Start(ctx) })

	err = <-served
	stopServing()
	if core.GRPC != nil {
		err = errors.Join(err, <-served)
	}
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
func printSummary(out io.Writer, base string, cfg ServeConfig, api http.Handler, results map[string]catalogsync.Outcome) {
	var b bytes.Buffer
	first := ""
	for _, c := range cfg.Catalogs {
		detail, err := catalogDetail(api, c.Name)
		if err != nil {
			fmt.Fprintf(&b, "  %s: cannot be read: %v\n", c.Name, err)
			continue
		}
		if r := results[c.Name]; r.Err != nil {
			// The state the API tells, so that the summary and GET
			// /catalogs agree: Failed when the content itself is wrong and
			// only a change of source helps, Pending when a retry may.
			state := string(detail.State)
			if detail.State == catalogapi.CatalogStateServing {
				state = "Serving its previous index"
			}
			fmt.Fprintf(&b, "  %s: NOT INDEXED (%s): %v\n", c.Name, state, r.Err)
			continue
		}
		how := "unchanged since the last run"
		if r := results[c.Name]; r.Rebuilt {
			how = "indexed in " + r.Duration.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %s: %d packages, %d channels, %d bundles (%s, from %s)\n",
			c.Name, detail.Counts.Packages, detail.Counts.Channels, detail.Counts.Bundles, how, c.Value)
		if n := len(detail.Problems); n > 0 {
			fmt.Fprintf(&b, "    %d problems (the packages concerned still answer; all in %s/catalogs/%s):\n", n, base, c.Name)
			for _, p := range detail.Problems[:min(n, 3)] {
				fmt.Fprintf(&b, "      %s: %s\n", p.Package, p.Message)
			}
			if n > 3 {
				fmt.Fprintf(&b, "      ...\n")
			}
		}
		if first == "" {
			first = c.Name
		}
	}
	if cfg.Watch {
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
func catalogDetail(api http.Handler, name string) (catalogapi.CatalogDetail, error) {
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/catalogs/"+name, nil))
	var d catalogapi.CatalogDetail
	if rec.Code != http.StatusOK {
		return d, fmt.Errorf("GET /catalogs/%s: %d %s", name, rec.Code, bytes.TrimSpace(rec.Body.Bytes()))
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		return d, fmt.Errorf("GET /catalogs/%s: %w", name, err)
	}
	return d, nil
}

// port is the port of a listen address.
func port(addr net.Addr) string {
	_, p, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return p
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
