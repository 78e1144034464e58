package catalogcli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/catalogd/catalogd/client"
)

func (r *runner) changesCmd() *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "changes --since DIGEST",
		Short: "List packages added, removed and changed since an earlier version",
		Long: `List what changed in a catalog since an earlier version of it, named by
its content digest (the DIGEST column of "kubectl catalog catalogs -o wide",
noted then): packages added and removed, and for each changed package its
channels added and removed, heads that moved, and bundles and deprecations
added and removed. The server remembers a bounded number of versions; an
older one fails with the oldest it still knows.

--since is required: a digest is the only name of a version the server and
the client share. -c is required when more than one catalog serves.`,
		Args:    cobra.NoArgs,
		Example: "  kubectl catalog changes -c operatorhubio --since sha256:3f1d9c...\n  kubectl catalog changes --dir ./catalog --since sha256:3f1d9c... -o yaml",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.run(cmd, true, func(ctx context.Context, c *conn) ([]answer, error) {
				names, err := r.catalogNames(ctx, c, true)
				if err != nil {
					return nil, err
				}
				switch len(names) {
				case 0:
					return nil, errors.New("no catalog serves yet")
				case 1:
				default:
					return nil, fmt.Errorf("changes are of one catalog, and %d serve (%s): name one with -c", len(names), strings.Join(names, ", "))
				}
				changes, err := getChanges(ctx, c, names[0], since)
				return []answer{{catalog: names[0], obj: changes}}, err
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "the content `DIGEST` of the earlier version (required)")
	_ = cmd.MarkFlagRequired("since")
	return cmd
}

func getChanges(ctx context.Context, c *conn, catalog, since string) (*client.Changes, error) {
	rsp, err := c.api.GetChangesWithResponse(ctx, catalog, &client.GetChangesParams{Since: since})
	return okOr(c, rsp, err, func(r *client.GetChangesResponse) (*client.Changes, *http.Response, []byte) {
		return r.JSON200, r.HTTPResponse, r.Body
	})
}
