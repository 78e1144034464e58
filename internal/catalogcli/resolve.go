package catalogcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/catalogd/catalogd/client"
)

func (r *runner) resolveCmd() *cobra.Command {
	var channels []string
	var versionRange, installed, installedBundle, installedRelease, policy, selector string
	var bundleRelease bool
	cmd := &cobra.Command{
		Use:   "resolve PACKAGE [--installed VERSION]",
		Short: "Show which bundle a ClusterExtension would install, and why",
		Long: `Resolve a ClusterExtension's catalog source as operator-controller does,
and list every bundle with the rule it fails or how it ranked. Exits 1,
after the list, when no bundle is found, catalogs of the same priority
tie, or the bundle chosen declares a dependency (its verdict Refused,
naming the property), with operator-controller's message.`,
		Args: cobra.ExactArgs(1),
		Example: "  kubectl catalog resolve aurora-cache --channel stable --installed 1.1.1\n" +
			"  kubectl catalog resolve aurora-cache --installed 1.1.1 \\\n" +
			"      --installed-bundle aurora-cache.v1.1.1 --bundle-release-support",
		ValidArgsFunction: r.completeArgs(r.packageNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch policy {
			case "", string(client.UpgradeConstraintPolicyCatalogProvided), string(client.UpgradeConstraintPolicySelfCertified):
			default:
				return fmt.Errorf("--upgrade-constraint-policy %q: want CatalogProvided or SelfCertified", policy)
			}
			if cmd.Flags().Changed("upgrade-edges") {
				return errors.New("--upgrade-edges was removed: operator-controller removed its ForceSemverUpgradeConstraints gate " +
					"(operator-controller #1638, January 2025), so every cluster follows the channels' replaces, skips and skipRange, " +
					"which resolve always does; drop the flag")
			}
			if selector != "" && r.catalog != "" {
				return errors.New("--selector and -c do not go together: -c asks one catalog, the selector chooses among all")
			}
			// Unset, the server's setting applies.
			var release *bool
			if cmd.Flags().Changed("bundle-release-support") {
				release = &bundleRelease
			}
			// Set, even empty, it is the release.
			var instRelease *string
			if cmd.Flags().Changed("installed-release") {
				instRelease = &installedRelease
			}
			var failure error
			err := r.run(cmd, true, func(ctx context.Context, c *conn) ([]answer, error) {
				res, err := resolve(ctx, c, r.catalog, &client.ResolveParams{Package: args[0], Channels: channels, Version: versionRange,
					Installed: installed, InstalledBundle: installedBundle, InstalledRelease: instRelease, BundleReleaseSupport: release,
					UpgradeConstraintPolicy: client.UpgradeConstraintPolicy(policy), CatalogSelector: selector})
				if res == nil {
					return nil, err
				}
				failure = err
				return []answer{{catalog: r.catalog, obj: res}}, nil
			})
			if err != nil {
				return err
			}
			return failure
		},
	}
	cmd.Flags().StringArrayVar(&channels, "channel", nil, "only bundles the channel `NAME` lists; repeatable (default: every channel)")
	cmd.Flags().StringVar(&versionRange, "version", "", "only versions in the semver `RANGE`, for example '>=1.2.0 <2.0.0' (default: every version)")
	cmd.Flags().StringVar(&installed, "installed", "", "the installed `VERSION` (its release as build metadata, 1.2.0+2): only it and its successors are candidates (default: a first install, any version)")
	cmd.Flags().StringVar(&installedBundle, "installed-bundle", "", "the installed bundle's `NAME`, which replaces and skips must name (default: every bundle of the --installed version and release counts as installed)")
	cmd.Flags().StringVar(&installedRelease, "installed-release", "", "the installed bundle's `RELEASE` when its status records it apart from --installed, even empty (default: none)")
	cmd.Flags().BoolVar(&bundleRelease, "bundle-release-support", false, "read releases as operator-controller with its BundleReleaseSupport gate on (an explicit release of olm.package first) or, =false, off (build metadata only) (default: the server's)")
	cmd.Flags().StringVar(&policy, "upgrade-constraint-policy", "", "which versions the `POLICY` lets succeed --installed: CatalogProvided, its successors only, or SelfCertified, any (default: CatalogProvided)")
	// Kept hidden, so that a command line still passing it fails saying why.
	cmd.Flags().String("upgrade-edges", "", "removed")
	_ = cmd.Flags().MarkHidden("upgrade-edges")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only catalogs whose labels match the `SELECTOR`, for example tier=prod (default: every catalog)")
	_ = cmd.RegisterFlagCompletionFunc("channel", r.complete(r.channelNames))
	_ = cmd.RegisterFlagCompletionFunc("installed", r.complete(r.versionNames))
	_ = cmd.RegisterFlagCompletionFunc("installed-bundle", r.complete(r.bundleNames))
	_ = cmd.RegisterFlagCompletionFunc("upgrade-constraint-policy", cobra.FixedCompletions(
		[]string{string(client.UpgradeConstraintPolicyCatalogProvided), string(client.UpgradeConstraintPolicySelfCertified)}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// resolve asks /resolve, or one catalog's when catalog is set. A failed
// resolution returns the resolution the server sent with it and an error
// with its message; any other failure, no resolution.
func resolve(ctx context.Context, c *conn, catalog string, p *client.ResolveParams) (*client.Resolution, error) {
	var hr *http.Response
	var body []byte
	var ok *client.Resolution
	if catalog != "" {
		rsp, err := c.api.ResolveInCatalogWithResponse(ctx, catalog, &client.ResolveInCatalogParams{Package: p.Package,
			Channels: p.Channels, Version: p.Version, Installed: p.Installed, InstalledBundle: p.InstalledBundle, InstalledRelease: p.InstalledRelease,
			BundleReleaseSupport: p.BundleReleaseSupport, UpgradeConstraintPolicy: p.UpgradeConstraintPolicy})
		if res, err := okOr(c, rsp, err, func(r *client.ResolveInCatalogResponse) (*client.Resolution, *http.Response, []byte) {
			return r.JSON200, r.HTTPResponse, r.Body
		}); err == nil || rsp == nil {
			return res, err
		}
		hr, body = rsp.HTTPResponse, rsp.Body
	} else {
		rsp, err := c.api.ResolveWithResponse(ctx, p)
		if res, err := okOr(c, rsp, err, func(r *client.ResolveResponse) (*client.Resolution, *http.Response, []byte) {
			return r.JSON200, r.HTTPResponse, r.Body
		}); err == nil || rsp == nil {
			return res, err
		}
		hr, body = rsp.HTTPResponse, rsp.Body
	}
	failed := c.failed(hr, body)
	if hr.StatusCode != http.StatusNotFound && hr.StatusCode != http.StatusConflict && hr.StatusCode != http.StatusUnprocessableEntity {
		return nil, failed
	}
	// A failed resolution is a problem document with the resolution's members.
	if err := json.Unmarshal(body, &ok); err != nil || ok == nil || len(ok.Catalogs) == 0 {
		return nil, failed
	}
	return ok, failed
}

// resolveVerdict is what the VERDICT column says of a bundle: the rules it
// fails, or why it ranks lower, in its catalog or across catalogs; the
// bundle chosen across catalogs is refused, naming its dependency
// property, when it declares one.
func resolveVerdict(cat client.ResolveCatalog, b client.ResolveCandidate) string {
	if len(b.Rejections) > 0 {
		parts := make([]string, len(b.Rejections))
		for i, r := range b.Rejections {
			parts[i] = string(r)
		}
		return strings.Join(parts, ",")
	}
	if b.Ranking == client.ResolveCandidateRankingChosen && cat.Outcome != client.ResolveCatalogOutcomeChosen {
		return "Catalog" + string(cat.Outcome)
	}
	if b.Ranking == client.ResolveCandidateRankingChosen && b.Dependency != "" {
		return "Refused(" + string(b.Dependency) + ")"
	}
	return string(b.Ranking)
}
