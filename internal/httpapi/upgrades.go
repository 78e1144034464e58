package httpapi

import (
	"errors"
	"net/http"

	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

// listUpgrades answers which bundles a bundle may upgrade to directly, by
// OLM's rules (see query.Catalog.UpgradesFrom). from names the
// installed bundle, or gives its version when one bundle has it.
func (s *Server) listUpgrades(r *http.Request, snap *store.Snapshot) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	from := q.Get("from")
	if from == "" {
		return nil, badParam("from", "from is required: the name or the version of the installed bundle")
	}
	pkg, err := lookupPackage(ctx, snap, pathParam(r, "package"))
	if err != nil {
		return nil, err
	}
	src, err := snap.Catalog.BundleByName(ctx, pkg.Name, from)
	if errors.Is(err, query.ErrNotFound) {
		byVersion, err := snap.Catalog.BundlesByVersion(ctx, pkg.Name, from)
		if err != nil {
			return nil, err
		}
		switch len(byVersion) {
		case 0:
			return nil, notFound("from", "package %q has no bundle named %q nor any bundle of that version", pkg.Name, from)
		case 1:
			src = byVersion[0]
		default:
			p := badParam("from", "several bundles of package %q have version %q; name one of them", pkg.Name, from)
			for _, b := range byVersion {
				p.candidates = append(p.candidates, b.Name)
			}
			return nil, p
		}
	} else if err != nil {
		return nil, err
	}

	channel := "" // every channel
	if q.Has("channel") {
		channel = q.Get("channel")
		exists, err := snap.Catalog.HasChannel(ctx, pkg.Name, channel)
		if err != nil {
			return nil, err
		}
		if !exists {
			return nil, notFound("channel", "package %q has no channel %q", pkg.Name, channel)
		}
	}
	upgrades, err := snap.Catalog.UpgradesFrom(ctx, pkg.Name, src, channel)
	if err != nil {
		return nil, err
	}
	return apiUpgrades(upgrades), nil
}
