package packageapi

import (
	"context"
	"math"

	"github.com/catalogd/catalogd/internal/query"
)

// packageData is what the index says of one package that its manifest
// shows, as internal/query answers it; convert.go turns it into a
// PackageManifest.
type packageData struct {
	Package  query.Package
	Summary  query.PackageSummary
	Channels []channelData
	// Bundles are every bundle of the package with the channels listing
	// it; Ranks gives each one's place in the package's version order.
	Bundles []query.BundleSummary
	Ranks   map[string]int
	// Deprecations are the package's deprecation entries (package,
	// channels and bundles).
	Deprecations []query.DeprecationFact
}

// channelData is a channel with everything the index holds of its head;
// Head is zero when the channel has no head.
type channelData struct {
	Summary query.ChannelSummary
	Head    *query.BundleDetail
}

// readPackage reads what a package's manifest shows: a handful of queries
// per package and one per channel head (heads shared by channels are read
// once).
func readPackage(ctx context.Context, c *query.Catalog, sum query.PackageSummary) (packageData, error) {
	pkg, err := c.Package(ctx, sum.Name)
	if err != nil {
		return packageData{}, err
	}
	d := packageData{Package: pkg, Summary: sum}
	chans, err := c.Channels(ctx, pkg)
	if err != nil {
		return packageData{}, err
	}
	heads := map[string]*query.BundleDetail{}
	for _, ch := range chans {
		cd := channelData{Summary: ch}
		if ch.Head.Name != "" {
			head, ok := heads[ch.Head.Name]
			if !ok {
				detail, err := c.BundleDetail(ctx, pkg.Name, ch.Head.Name)
				if err != nil {
					return packageData{}, err
				}
				head = &detail
				heads[ch.Head.Name] = head
			}
			cd.Head = head
		}
		d.Channels = append(d.Channels, cd)
	}
	bundles, err := c.Bundles(ctx, pkg.Name, "", math.MaxInt64, -1)
	if err != nil {
		return packageData{}, err
	}
	d.Ranks = make(map[string]int, len(bundles))
	for _, b := range bundles {
		d.Ranks[b.Name] = b.Rank
	}
	if d.Bundles, err = c.BundleSummaries(ctx, pkg.Name, bundles); err != nil {
		return packageData{}, err
	}
	facts, err := c.PackageFacts(ctx, pkg.Name)
	if err != nil {
		return packageData{}, err
	}
	d.Deprecations = facts.Deprecations
	return d, nil
}
