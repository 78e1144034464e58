// Package catalogcli is kubectl-catalog, the command line that explores
// catalogs from a terminal: catalogs, packages, channels with their heads,
// versions in a range, upgrades from an installed version, who provides an
// API, one bundle, what a ClusterExtension would install (resolve). It reaches catalogd through the current kubeconfig (the
// Kubernetes API server's service proxy), a server URL (--server), or no
// server at all: --dir, --image and --source index the catalog on this machine into
// a cache and answer with the API's own handler in process. The cache
// (cache.go) is a directory internal/datadir owns, bounded in size, least
// recently used entries out first. Every way goes
// through the client generated from openapi.yaml, so answers are the same,
// and -o json|yaml prints the API's own objects. convert.go is the one place
// that turns those objects into tables and descriptions. Everything printed
// for a person, errors included, has the catalog's control characters
// escaped (termtext.Safe), so that a catalog cannot drive the terminal.
package catalogcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/spf13/cobra"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/termtext"
	"github.com/catalogd/catalogd/internal/version"
)

// Run runs kubectl-catalog with args and returns the exit code: 0, or 1
// after printing what went wrong (errorText).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	r := newRunner(stdout, stderr)
	cmd := r.root()
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "error: %s\n", r.errorText(err))
		return 1
	}
	return 0
}

// errorText is how an error is printed. An error from a command is one
// line, termtext.Safe, because it may quote catalog text (bundle names,
// the server's problem details) that must neither drive the terminal nor
// forge lines. cobra's own complaints about the command line, made before
// any command ran, quote only what the user typed and keep their layout,
// lines and indenting tabs, as kubectl's do: "unknown command" is followed
// by a "Did you mean this?" block.
func (r *runner) errorText(err error) string {
	if r.started {
		return termtext.Safe(err.Error())
	}
	lines := strings.Split(strings.TrimRight(err.Error(), "\n"), "\n")
	for i, l := range lines {
		text := strings.TrimLeft(l, "\t")
		lines[i] = l[:len(l)-len(text)] + termtext.Safe(text)
	}
	return strings.Join(lines, "\n")
}

// runner holds the flags every command shares.
type runner struct {
	connect *connectFlags
	out     outputFlags
	catalog string
	stdout  io.Writer
	// stderr hears what is not an answer: that there is nothing to show.
	stderr io.Writer
	// started is set once the command line parsed and a command began.
	started bool
}

func newRunner(stdout, stderr io.Writer) *runner {
	return &runner{connect: newConnectFlags(stderr), stdout: stdout, stderr: stderr}
}

// root builds the command tree.
func (r *runner) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-catalog",
		Short: "Explore OLM catalogs served by catalogd, or read offline",
		Long: `Explore OLM file-based catalogs: packages, channels and their heads,
versions, upgrade edges and API providers.

Where the answers come from:
  (default)       the catalogd Service of the current kubeconfig's cluster,
                  through the Kubernetes API server (needs get on
                  services/proxy)
  --server URL    a catalogd server (also $` + ServerEnv + `)
  --dir DIR       a catalog directory, indexed on this machine once per content
  --image REF     a catalog image, pulled and indexed once per digest
  --source SOURCE any catalog source, indexed once per content: a directory,
                  an image, oci:DIR[:TAG], git::URL[//DIR][?ref=REF], or an
                  http(s) URL of a .tar, .tar.gz, .json or .yaml

--dir, --image and --source keep their indexes in the offline cache,
  ` + cacheHelp() + `
bounded by --cache-max-size (default $` + CacheMaxSizeEnv + `, else ` + defaultCacheMaxSize + `),
least recently used out first. 'kubectl catalog cache' shows it, and
'kubectl catalog cache clear' empties it.

Every command asks all catalogs in priority order unless -c names one.`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl catalog"},
		PersistentPreRunE: func(*cobra.Command, []string) error {
			r.started = true
			return r.out.validate()
		},
	}
	root.SetOut(r.stdout)
	root.SetErr(r.stderr)
	// Help fits 80 columns: pflag wraps each flag's usage to that width
	// (though not inside a word longer than the space left, which
	// TestHelp catches).
	root.SetUsageTemplate(strings.NewReplacer(".FlagUsages |", ".FlagUsagesWrapped 80 |",
		"for more information about a command.", "for more about a command.").Replace(root.UsageTemplate()))
	fs := root.PersistentFlags()
	bindVerbosity(fs)
	r.connect.bind(fs)
	r.out.bind(fs)
	fs.StringVarP(&r.catalog, "catalog", "c", "", "ask only the catalog `NAME` (default: every catalog, in priority order)")
	_ = root.RegisterFlagCompletionFunc("catalog", r.complete(func(ctx context.Context, c *conn, _ []string) ([]string, error) {
		return r.catalogNames(ctx, c, false)
	}))
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(r.catalogsCmd(), r.packagesCmd(), r.showCmd(), r.channelsCmd(), r.versionsCmd(),
		r.upgradesCmd(), r.providersCmd(), r.bundleCmd(), r.cacheCmd())
	root.AddCommand(r.changesCmd(), r.resolveCmd(), versionCmd())
	return root
}

// versionCmd is `kubectl catalog version`, which says what --version says,
// as `kubectl version` does for kubectl.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl catalog",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s version %s\n", cmd.Root().DisplayName(), version.String())
			return err
		},
	}
}

// run connects, asks and prints. A table gets a CATALOG column when the
// answers may come from several catalogs (no -c) and do not name their
// catalog themselves (as the lists of catalogs and providers do).
func (r *runner) run(cmd *cobra.Command, namesCatalogs bool, ask func(ctx context.Context, c *conn) ([]answer, error)) error {
	ctx := cmd.Context()
	c, err := r.connect.connect(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	answers, err := ask(ctx, c)
	if err != nil {
		return err
	}
	printed, err := r.out.print(r.stdout, answers, r.catalog == "" && !namesCatalogs)
	if err == nil && !printed {
		_, err = fmt.Fprintln(r.stderr, noResources(answers))
	}
	return err
}

// noResources says that there is nothing to show, as kubectl get does
// ("No resources found in default namespace."), naming the catalog when
// the answers are of one.
func noResources(answers []answer) string {
	var catalogs []string
	for _, a := range answers {
		if a.catalog != "" && !slices.Contains(catalogs, a.catalog) {
			catalogs = append(catalogs, a.catalog)
		}
	}
	if len(catalogs) == 1 {
		return "No resources found in catalog " + termtext.Safe(catalogs[0]) + "."
	}
	return "No resources found"
}

// catalogNames is -c, or every catalog in priority order; servingOnly
// leaves out those that cannot answer queries.
func (r *runner) catalogNames(ctx context.Context, c *conn, servingOnly bool) ([]string, error) {
	if r.catalog != "" {
		return []string{r.catalog}, nil
	}
	list, err := listCatalogs(ctx, c)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, cat := range list.Items {
		if !servingOnly || cat.State == client.CatalogStateServing {
			names = append(names, cat.Name)
		}
	}
	return names, nil
}

func listCatalogs(ctx context.Context, c *conn) (*client.CatalogList, error) {
	rsp, err := c.api.ListCatalogsWithResponse(ctx, nil)
	return okOr(c, rsp, err, func(r *client.ListCatalogsResponse) (*client.CatalogList, *http.Response, []byte) {
		return r.JSON200, r.HTTPResponse, r.Body
	})
}

// okOr returns a response's 200 body, or the error that says why there
// is none.
func okOr[R any, T any](c *conn, rsp *R, err error, parts func(*R) (*T, *http.Response, []byte)) (*T, error) {
	var ae *apiError
	if errors.As(err, &ae) {
		return nil, ae
	}
	if err != nil {
		return nil, c.unreachable(err)
	}
	ok, hr, body := parts(rsp)
	if ok == nil {
		return nil, c.failed(hr, body)
	}
	return ok, nil
}

// eachCatalog asks every serving catalog (or -c's) about a package and
// keeps the answers of those that have it. A package no catalog has is
// one error that names it.
func (r *runner) eachCatalog(ctx context.Context, c *conn, pkg string, ask func(catalog string) (any, error)) ([]answer, error) {
	names, err := r.catalogNames(ctx, c, true)
	if err != nil {
		return nil, err
	}
	var answers []answer
	for _, name := range names {
		obj, err := ask(name)
		if r.catalog == "" && notFound(err, "package") {
			continue
		}
		if err != nil {
			return nil, err
		}
		answers = append(answers, answer{catalog: name, obj: obj})
	}
	if len(answers) == 0 && pkg != "" {
		return nil, fmt.Errorf("package %q is in no serving catalog (asked %s); %s", pkg, orNone(strings.Join(names, ", ")), listHints["package"])
	}
	return answers, nil
}

func (r *runner) catalogsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "catalogs",
		Short:   "List the catalogs, their state and counts, in priority order",
		Args:    cobra.NoArgs,
		Example: "  kubectl catalog catalogs -o wide",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.run(cmd, true, func(ctx context.Context, c *conn) ([]answer, error) {
				if r.catalog != "" {
					rsp, err := c.api.GetCatalogWithResponse(ctx, r.catalog, nil)
					d, err := okOr(c, rsp, err, func(r *client.GetCatalogResponse) (*client.CatalogDetail, *http.Response, []byte) {
						return r.JSON200, r.HTTPResponse, r.Body
					})
					return []answer{{catalog: r.catalog, obj: d}}, err
				}
				list, err := listCatalogs(ctx, c)
				return []answer{{obj: list}}, err
			})
		},
	}
}

func (r *runner) packagesCmd() *cobra.Command {
	var search string
	cmd := &cobra.Command{
		Use:     "packages",
		Short:   "List the packages of every catalog, or search them",
		Args:    cobra.NoArgs,
		Example: "  kubectl catalog packages\n  kubectl catalog packages --search 'cache'",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.run(cmd, false, func(ctx context.Context, c *conn) ([]answer, error) {
				answers, err := r.eachCatalog(ctx, c, "", func(catalog string) (any, error) {
					return listPackages(ctx, c, catalog, search)
				})
				return answers, asFlag(err, "q", "--search", search)
			})
		},
	}
	cmd.Flags().StringVar(&search, "search", "", "search for `WORDS` in name, display name, keywords, provider and description, best match first (default: list every package)")
	return cmd
}

// listPackages reads every page.
func listPackages(ctx context.Context, c *conn, catalog, search string) (*client.PackageList, error) {
	params := &client.ListPackagesParams{}
	if search != "" {
		params.Q = &search
	}
	items, err := allPages(func(cont *string) ([]client.PackageSummary, string, error) {
		params.Continue = cont
		rsp, err := c.api.ListPackagesWithResponse(ctx, catalog, params)
		page, err := okOr(c, rsp, err, func(r *client.ListPackagesResponse) (*client.PackageList, *http.Response, []byte) {
			return r.JSON200, r.HTTPResponse, r.Body
		})
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.Continue, nil
	})
	return &client.PackageList{Items: items}, err
}

// allPages gathers the items of a paged list: page asks for the page after
// the continue token (nil for the first) and returns its items and the
// next token, empty on the last page.
func allPages[T any](page func(cont *string) ([]T, string, error)) ([]T, error) {
	all := []T{}
	var cont *string
	for {
		items, next, err := page(cont)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		cont = &next
	}
}

func (r *runner) showCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "show PACKAGE",
		Short:             "Describe a package: provider, channels and their heads, problems",
		Args:              cobra.ExactArgs(1),
		Example:           "  kubectl catalog show aurora-cache",
		ValidArgsFunction: r.completeArgs(r.packageNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.run(cmd, false, func(ctx context.Context, c *conn) ([]answer, error) {
				return r.eachCatalog(ctx, c, args[0], func(catalog string) (any, error) {
					rsp, err := c.api.GetPackageWithResponse(ctx, catalog, args[0], nil)
					return okOr(c, rsp, err, func(r *client.GetPackageResponse) (*client.Package, *http.Response, []byte) {
						return r.JSON200, r.HTTPResponse, r.Body
					})
				})
			})
		},
	}
}

func (r *runner) channelsCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "channels PACKAGE",
		Short:             "List a package's channels, each with its head",
		Args:              cobra.ExactArgs(1),
		Example:           "  kubectl catalog channels aurora-cache",
		ValidArgsFunction: r.completeArgs(r.packageNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.run(cmd, false, func(ctx context.Context, c *conn) ([]answer, error) {
				return r.eachCatalog(ctx, c, args[0], func(catalog string) (any, error) {
					return listChannels(ctx, c, catalog, args[0])
				})
			})
		},
	}
}

func listChannels(ctx context.Context, c *conn, catalog, pkg string) (*client.ChannelList, error) {
	rsp, err := c.api.ListChannelsWithResponse(ctx, catalog, pkg, nil)
	return okOr(c, rsp, err, func(r *client.ListChannelsResponse) (*client.ChannelList, *http.Response, []byte) {
		return r.JSON200, r.HTTPResponse, r.Body
	})
}

func (r *runner) versionsCmd() *cobra.Command {
	var channel, versionRange string
	cmd := &cobra.Command{
		Use:               "versions PACKAGE",
		Short:             "List a package's bundles, newest first, by channel or semver range",
		Args:              cobra.ExactArgs(1),
		Example:           "  kubectl catalog versions aurora-cache --channel stable --range '>=1.1 <2.0'",
		ValidArgsFunction: r.completeArgs(r.packageNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.run(cmd, false, func(ctx context.Context, c *conn) ([]answer, error) {
				answers, err := r.eachCatalog(ctx, c, args[0], func(catalog string) (any, error) {
					return listBundles(ctx, c, catalog, args[0], channel, versionRange)
				})
				return answers, asFlag(err, "version", "--range", versionRange)
			})
		},
	}
	cmd.Flags().StringVar(&channel, "channel", "", "only bundles of the channel `NAME` (default: every channel)")
	cmd.Flags().StringVar(&versionRange, "range", "", "only versions in the semver `RANGE`, for example '>=1.2.0 <2.0.0' or '~1.1'; a range without a pre-release leaves pre-releases out (default: every version)")
	_ = cmd.RegisterFlagCompletionFunc("channel", r.complete(r.channelNames))
	return cmd
}

// listBundles reads every page.
func listBundles(ctx context.Context, c *conn, catalog, pkg, channel, versionRange string) (*client.BundleList, error) {
	params := &client.ListBundlesParams{}
	if channel != "" {
		params.Channel = &channel
	}
	if versionRange != "" {
		params.Version = &versionRange
	}
	items, err := allPages(func(cont *string) ([]client.BundleSummary, string, error) {
		params.Continue = cont
		rsp, err := c.api.ListBundlesWithResponse(ctx, catalog, pkg, params)
		page, err := okOr(c, rsp, err, func(r *client.ListBundlesResponse) (*client.BundleList, *http.Response, []byte) {
			return r.JSON200, r.HTTPResponse, r.Body
		})
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.Continue, nil
	})
	return &client.BundleList{Items: items}, err
}

func (r *runner) upgradesCmd() *cobra.Command {
	var from, channel string
	cmd := &cobra.Command{
		Use:               "upgrades PACKAGE --from VERSION",
		Short:             "List where an installed version can upgrade to, and by which rule",
		Args:              cobra.ExactArgs(1),
		Example:           "  kubectl catalog upgrades aurora-cache --from 1.1.1",
		ValidArgsFunction: r.completeArgs(r.packageNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.run(cmd, false, func(ctx context.Context, c *conn) ([]answer, error) {
				params := &client.ListUpgradesParams{From: from}
				if channel != "" {
					params.Channel = &channel
				}
				return r.eachCatalog(ctx, c, args[0], func(catalog string) (any, error) {
					rsp, err := c.api.ListUpgradesWithResponse(ctx, catalog, args[0], params)
					return okOr(c, rsp, err, func(r *client.ListUpgradesResponse) (*client.UpgradeList, *http.Response, []byte) {
						return r.JSON200, r.HTTPResponse, r.Body
					})
				})
			})
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the installed bundle, by `VERSION` or name (required)")
	cmd.Flags().StringVar(&channel, "channel", "", "only upgrades within the channel `NAME` (default: every channel)")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.RegisterFlagCompletionFunc("channel", r.complete(r.channelNames))
	_ = cmd.RegisterFlagCompletionFunc("from", r.complete(r.versionNames))
	return cmd
}

func (r *runner) providersCmd() *cobra.Command {
	var group, apiVersion, kind string
	var latest bool
	cmd := &cobra.Command{
		Use:   "providers KIND.GROUP/VERSION",
		Short: "List the bundles that provide an API (group/version/kind)",
		Long: `List the bundles that provide an API. Name it as KIND.GROUP/VERSION
(KIND/VERSION for the core group), or with --kind, --group and --version.`,
		Args:    cobra.MaximumNArgs(1),
		Example: "  kubectl catalog providers ServiceProbe.observability.example.com/v1",
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := parseGVK(args, group, apiVersion, kind)
			if err != nil {
				return err
			}
			return r.run(cmd, true, func(ctx context.Context, c *conn) ([]answer, error) {
				var l *bool
				if latest {
					l = &latest
				}
				if r.catalog != "" {
					rsp, err := c.api.ListCatalogProvidersWithResponse(ctx, r.catalog, &client.ListCatalogProvidersParams{Group: &g.Group, Version: g.Version, Kind: g.Kind, Latest: l})
					list, err := okOr(c, rsp, err, func(r *client.ListCatalogProvidersResponse) (*client.ProviderList, *http.Response, []byte) {
						return r.JSON200, r.HTTPResponse, r.Body
					})
					return []answer{{catalog: r.catalog, obj: list}}, err
				}
				rsp, err := c.api.ListProvidersWithResponse(ctx, &client.ListProvidersParams{Group: &g.Group, Version: g.Version, Kind: g.Kind, Latest: l})
				list, err := okOr(c, rsp, err, func(r *client.ListProvidersResponse) (*client.ProviderList, *http.Response, []byte) {
					return r.JSON200, r.HTTPResponse, r.Body
				})
				return []answer{{obj: list}}, err
			})
		},
	}
	cmd.Flags().StringVar(&group, "group", "", "the API `GROUP` (default: the core group)")
	cmd.Flags().StringVar(&apiVersion, "version", "", "the API `VERSION`, for example v1 (required without KIND.GROUP/VERSION)")
	cmd.Flags().StringVar(&kind, "kind", "", "the `KIND`, for example EtcdCluster (required without KIND.GROUP/VERSION)")
	cmd.Flags().BoolVar(&latest, "latest", false, "only the newest providing bundle of each package")
	return cmd
}

// parseGVK reads KIND.GROUP/VERSION, or the flags; a flag given wins.
func parseGVK(args []string, group, apiVersion, kind string) (client.GVK, error) {
	var g client.GVK
	if len(args) == 1 {
		kg, v, ok := strings.Cut(args[0], "/")
		if !ok {
			return g, fmt.Errorf("%q names no API version: write KIND.GROUP/VERSION, for example EtcdCluster.etcd.database.coreos.com/v1beta2", args[0])
		}
		g.Kind, g.Group, _ = strings.Cut(kg, ".")
		g.Version = v
	}
	for _, f := range []struct{ dst, val *string }{{&g.Group, &group}, {&g.Version, &apiVersion}, {&g.Kind, &kind}} {
		if *f.val != "" {
			*f.dst = *f.val
		}
	}
	if g.Kind == "" || g.Version == "" {
		return g, errors.New("name the API as KIND.GROUP/VERSION, or with --kind and --version (and --group)")
	}
	return g, nil
}

func (r *runner) bundleCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "bundle PACKAGE NAME|VERSION",
		Short:             "Describe a bundle: image, channels, provided and required APIs",
		Args:              cobra.ExactArgs(2),
		Example:           "  kubectl catalog bundle aurora-cache 1.2.0",
		ValidArgsFunction: r.completeArgs(r.packageNames, r.versionNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.run(cmd, false, func(ctx context.Context, c *conn) ([]answer, error) {
				return r.eachCatalog(ctx, c, args[0], func(catalog string) (any, error) {
					return getBundle(ctx, c, catalog, args[0], args[1])
				})
			})
		},
	}
}

// getBundle finds a bundle by name or, failing that, by version.
func getBundle(ctx context.Context, c *conn, catalog, pkg, nameOrVersion string) (*client.Bundle, error) {
	b, err := fetchBundle(ctx, c, catalog, pkg, nameOrVersion)
	if !notFound(err, "bundle") {
		return b, err
	}
	v, verr := semver.StrictNewVersion(nameOrVersion)
	if verr != nil {
		return nil, err
	}
	list, lerr := listBundles(ctx, c, catalog, pkg, "", "="+v.String())
	if lerr != nil {
		return nil, lerr
	}
	var names []string
	for _, s := range list.Items {
		if s.Version == v.String() {
			names = append(names, s.Name)
		}
	}
	switch len(names) {
	case 0:
		return nil, err
	case 1:
		return fetchBundle(ctx, c, catalog, pkg, names[0])
	}
	return nil, fmt.Errorf("package %q has %d bundles of version %s in catalog %q (%s); name one", pkg, len(names), v, catalog, strings.Join(names, ", "))
}

func fetchBundle(ctx context.Context, c *conn, catalog, pkg, name string) (*client.Bundle, error) {
	rsp, err := c.api.GetBundleWithResponse(ctx, catalog, pkg, name, nil)
	return okOr(c, rsp, err, func(r *client.GetBundleResponse) (*client.Bundle, *http.Response, []byte) {
		return r.JSON200, r.HTTPResponse, r.Body
	})
}

// completer lists the names that may come next, given the arguments so far.
type completer func(ctx context.Context, c *conn, args []string) ([]string, error)

// complete asks the server for names. A completion that fails offers
// nothing rather than printing an error into the user's shell.
func (r *runner) complete(list completer) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		c, err := r.connect.connect(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		defer c.close()
		names, err := list(ctx, c, args)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		seen := map[string]bool{}
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeArgs completes the i-th argument with the i-th completer.
func (r *runner) completeArgs(each ...completer) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(each) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return r.complete(each[len(args)])(cmd, args, toComplete)
	}
}

func (r *runner) packageNames(ctx context.Context, c *conn, _ []string) ([]string, error) {
	answers, err := r.eachCatalog(ctx, c, "", func(catalog string) (any, error) { return listPackages(ctx, c, catalog, "") })
	return answerNames(answers), err
}

func (r *runner) channelNames(ctx context.Context, c *conn, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	answers, err := r.eachCatalog(ctx, c, args[0], func(catalog string) (any, error) { return listChannels(ctx, c, catalog, args[0]) })
	return answerNames(answers), err
}

func (r *runner) versionNames(ctx context.Context, c *conn, args []string) ([]string, error) {
	return r.bundleFields(ctx, c, args, func(b client.BundleSummary) string { return b.Version })
}

func (r *runner) bundleNames(ctx context.Context, c *conn, args []string) ([]string, error) {
	return r.bundleFields(ctx, c, args, func(b client.BundleSummary) string { return b.Name })
}

// bundleFields completes a field of the bundles of the package args[0].
func (r *runner) bundleFields(ctx context.Context, c *conn, args []string, field func(client.BundleSummary) string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	answers, err := r.eachCatalog(ctx, c, args[0], func(catalog string) (any, error) {
		return listBundles(ctx, c, catalog, args[0], "", "")
	})
	var names []string
	for _, a := range answers {
		for _, b := range a.obj.(*client.BundleList).Items {
			names = append(names, field(b))
		}
	}
	return names, err
}

func answerNames(answers []answer) []string {
	var names []string
	for _, a := range answers {
		names = append(names, namesOf(a.obj)...)
	}
	return names
}
