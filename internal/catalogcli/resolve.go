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
	var versionRange, installed, policy, edges, selector string
	cmd := &cobra.Command{
		Use:   "resolve PACKAGE [--installed VERSION] [flags]",
		Short: "Show which bundle a ClusterExtension would install, and why",
		Long: `Resolve a ClusterExtension's catalog source as operator-controller does,
and list every bundle with the rule it fails or how it ranked. Exits 1,
after the list, when no bundle is found or catalogs of the same priority
tie, with operator-controller's message.`,
		Args:              cobra.ExactArgs(1),
		Example:           "  kubectl catalog resolve aurora-cache --channel stable --installed 1.1.1",
		ValidArgsFunction: r.completeArgs(r.packageNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch policy {
			case "", string(client.UpgradeConstraintPolicyCatalogProvided), string(client.UpgradeConstraintPolicySelfCertified):
			default:
				return fmt.Errorf("--upgrade-constraint-policy %q: want CatalogProvided or SelfCertified", policy)
			}
			switch edges {
			case "", string(client.UpgradeEdgesLegacy), string(client.UpgradeEdgesSemver):
			default:
				return fmt.Errorf("--upgrade-edges %q: want legacy or semver", edges)
			}
			if selector != "" && r.catalog != "" {
				return errors.New("--selector and -c do not go together: -c asks one catalog, the selector chooses among all")
			}
			var failure error
			err := r.run(cmd, true, func(ctx context.Context, c *conn) ([]answer, error) {
				res, err := resolve(ctx, c, r.catalog, &client.ResolveParams{Package: args[0], Channels: channels, Version: versionRange,
					Installed: installed, UpgradeConstraintPolicy: client.UpgradeConstraintPolicy(policy), UpgradeEdges: client.UpgradeEdges(edges),
					CatalogSelector: selector})
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
	cmd.Flags().StringVar(&installed, "installed", "", "the installed `VERSION`: only it and its successors are candidates (default: a first install, any version)")
	cmd.Flags().StringVar(&policy, "upgrade-constraint-policy", "", "which versions the `POLICY` lets succeed --installed: CatalogProvided, its successors only, or SelfCertified, any (default: CatalogProvided)")
	cmd.Flags().StringVar(&edges, "upgrade-edges", "", "the upgrade edges, `legacy|semver`, by which bundles succeed --installed, as operator-controller's semver feature gate chooses: "+
		"legacy (replaces, skips, skipRange) or semver (the caret range of --installed) (default: the server's)")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only catalogs whose labels match the `SELECTOR`, for example tier=prod (default: every catalog)")
	_ = cmd.RegisterFlagCompletionFunc("channel", r.complete(r.channelNames))
	_ = cmd.RegisterFlagCompletionFunc("installed", r.complete(r.versionNames))
	_ = cmd.RegisterFlagCompletionFunc("upgrade-constraint-policy", cobra.FixedCompletions(
		[]string{string(client.UpgradeConstraintPolicyCatalogProvided), string(client.UpgradeConstraintPolicySelfCertified)}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("upgrade-edges", cobra.FixedCompletions(
		[]string{string(client.UpgradeEdgesLegacy), string(client.UpgradeEdgesSemver)}, cobra.ShellCompDirectiveNoFileComp))
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
			Channels: p.Channels, Version: p.Version, Installed: p.Installed, UpgradeConstraintPolicy: p.UpgradeConstraintPolicy,
			UpgradeEdges: p.UpgradeEdges})
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
	if hr.StatusCode != http.StatusNotFound && hr.StatusCode != http.StatusConflict {
		return nil, failed
	}
	// A failed resolution is a problem document with the resolution's members.
	if err := json.Unmarshal(body, &ok); err != nil || ok == nil || len(ok.Catalogs) == 0 {
		return nil, failed
	}
	return ok, failed
}

// resolveVerdict is what the VERDICT column says of a bundle: the rules it
// fails, or why it ranks lower, in its catalog or across catalogs. A bundle
// outside the caret range of semver upgrade edges names the range.
func resolveVerdict(res *client.Resolution, cat client.ResolveCatalog, b client.ResolveCandidate) string {
	if len(b.Rejections) > 0 {
		parts := make([]string, len(b.Rejections))
		for i, r := range b.Rejections {
			parts[i] = string(r)
			if r == client.ResolveCandidateRejectionsNotSemverSuccessor && res.SuccessorRange != "" {
				parts[i] += "(" + res.SuccessorRange + ")"
			}
		}
		return strings.Join(parts, ",")
	}
	if b.Ranking == client.ResolveCandidateRankingChosen && cat.Outcome != client.ResolveCatalogOutcomeChosen {
		return "Catalog" + string(cat.Outcome)
	}
	return string(b.Ranking)
}
