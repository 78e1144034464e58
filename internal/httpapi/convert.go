package httpapi

import (
	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
)

// This file is the one place where what package query reads becomes what the
// API answers (the types generated from openapi.yaml). Arrays the spec
// requires are answered as [] when empty, never null: the converters make
// them non-nil, whatever package query returned.

// nonNil returns s, or an empty slice when s is nil.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// convertAll converts each element of s with convert, into a non-nil slice.
func convertAll[From, To any](s []From, convert func(From) To) []To {
	out := make([]To, len(s))
	for i, v := range s {
		out[i] = convert(v)
	}
	return out
}

func apiDeprecation(msg string) catalogapi.Deprecation { return catalogapi.Deprecation{Message: msg} }

func apiCounts(c query.Counts) catalogapi.CatalogCounts {
	return catalogapi.CatalogCounts{Packages: c.Packages, Channels: c.Channels, Bundles: c.Bundles}
}

// apiCatalogSummary describes catalog c; live is its live index, nil when
// it has none. The state is derived from live, so it always agrees with the
// counts beside it.
func apiCatalogSummary(c catalogs.Catalog, live *store.Info, counts query.Counts) catalogapi.CatalogSummary {
	out := catalogapi.CatalogSummary{Name: c.Name, Priority: c.Priority, Source: c.Source,
		State: catalogapi.CatalogState(c.State(live != nil)), LastError: c.LastError}
	if live == nil {
		return out
	}
	built := live.BuiltAt.UTC()
	out.IndexedAt = &built
	out.ResolvedDigest = live.Digest
	out.Counts = apiCounts(counts)
	return out
}

// apiCatalogDetail is a catalog's summary with its index's schemas and
// problems, and how the index was built (and, when it was built here,
// why it was not taken prebuilt, when notPrebuilt is about its digest);
// live is nil when it has none.
func apiCatalogDetail(sum catalogapi.CatalogSummary, notPrebuilt catalogs.NotPrebuilt, live *store.Info, schemas []query.SchemaCount, problems []query.Problem) catalogapi.CatalogDetail {
	out := catalogapi.CatalogDetail{
		Name: sum.Name, Priority: sum.Priority, Source: sum.Source, State: sum.State, LastError: sum.LastError,
		IndexedAt: sum.IndexedAt, ResolvedDigest: sum.ResolvedDigest, Counts: sum.Counts,
		Schemas: convertAll(schemas, apiSchemaCount), Problems: convertAll(problems, apiProblem),
	}
	if live != nil {
		out.Build = catalogapi.IndexBuild{Mode: catalogapi.IndexBuildMode(live.Build.Mode),
			PackagesRebuilt: live.Build.PackagesRebuilt, Reason: live.Build.Reason}
		if live.Build.Mode != index.ModePrebuilt && notPrebuilt.Digest == live.Digest {
			out.Build.NotPrebuilt = notPrebuilt.Reason
		}
	}
	return out
}

// apiSchemaCount marks the schemas the index interprets as known.
func apiSchemaCount(c query.SchemaCount) catalogapi.SchemaCount {
	return catalogapi.SchemaCount{Schema: c.Schema, Count: c.Count, Known: knownSchemas[c.Schema]}
}

func apiProblem(p query.Problem) catalogapi.ValidationProblem {
	return catalogapi.ValidationProblem{Package: p.Package, Position: p.Position, Message: p.Message}
}

// apiLinks and apiMaintainers leave a package without any as nil, which
// the answer omits.
func apiLinks(links []query.Link) []catalogapi.Link {
	if len(links) == 0 {
		return nil
	}
	return convertAll(links, func(l query.Link) catalogapi.Link { return catalogapi.Link{Name: l.Name, Url: l.URL} })
}

func apiMaintainers(maintainers []query.Maintainer) []catalogapi.Maintainer {
	if len(maintainers) == 0 {
		return nil
	}
	return convertAll(maintainers, func(m query.Maintainer) catalogapi.Maintainer {
		return catalogapi.Maintainer{Name: m.Name, Email: m.Email}
	})
}

func apiPackageSummary(p query.PackageSummary) catalogapi.PackageSummary {
	d := p.Display
	return catalogapi.PackageSummary{
		Name: p.Name, DefaultChannel: p.DefaultChannel, Channels: nonNil(p.Channels), Deprecation: apiDeprecation(p.Deprecation),
		Digest:      p.Digest,
		DisplayName: d.DisplayName, Provider: d.Provider, Keywords: d.Keywords, Maturity: d.Maturity,
		ShortDescription: d.ShortDescription, Links: apiLinks(d.Links), Maintainers: apiMaintainers(d.Maintainers),
	}
}

// apiPackage is a package's answer: the package, its channels, its
// deprecation message and its validation problems.
func apiPackage(p query.Package, channels []query.ChannelSummary, deprecation string, problems []query.Problem) catalogapi.Package {
	d := p.Display
	return catalogapi.Package{
		Name: p.Name, DefaultChannel: p.DefaultChannel, Description: p.Description, HasIcon: p.HasIcon,
		Channels: convertAll(channels, apiChannelSummary), Deprecation: apiDeprecation(deprecation),
		Problems: convertAll(problems, apiProblem), Digest: p.Digest,
		DisplayName: d.DisplayName, Provider: d.Provider, Keywords: d.Keywords, Maturity: d.Maturity,
		ShortDescription: d.ShortDescription, Links: apiLinks(d.Links), Maintainers: apiMaintainers(d.Maintainers),
	}
}

func apiBundleRef(b query.BundleRef) catalogapi.BundleRef {
	return catalogapi.BundleRef{Name: b.Name, Version: b.Version}
}

func apiChannelSummary(c query.ChannelSummary) catalogapi.ChannelSummary {
	return catalogapi.ChannelSummary{Name: c.Name, Head: apiBundleRef(c.Head), HeadProblem: c.HeadProblem,
		EntryCount: c.EntryCount, IsDefault: c.IsDefault, Deprecation: apiDeprecation(c.Deprecation)}
}

func apiChannel(c query.Channel) catalogapi.Channel {
	return catalogapi.Channel{Name: c.Name, Package: c.Package, Head: apiBundleRef(c.Head), HeadProblem: c.HeadProblem,
		IsDefault: c.IsDefault, Deprecation: apiDeprecation(c.Deprecation),
		Entries: convertAll(c.Entries, func(e query.ChannelEntry) catalogapi.ChannelEntry {
			return catalogapi.ChannelEntry{Name: e.Name, Version: e.Version, Replaces: e.Replaces, SkipRange: e.SkipRange, Skips: e.Skips}
		})}
}

func apiBundleSummary(b query.BundleSummary) catalogapi.BundleSummary {
	return catalogapi.BundleSummary{Name: b.Name, Version: b.Version, Release: b.Release, Image: b.Image,
		Channels: nonNil(b.Channels), Deprecation: apiDeprecation(b.Deprecation)}
}

func apiGVK(g query.GVK) catalogapi.GVK {
	return catalogapi.GVK{Group: g.Group, Version: g.Version, Kind: g.Kind}
}

func apiBundle(b query.BundleDetail) catalogapi.Bundle {
	return catalogapi.Bundle{
		Name: b.Name, Package: b.Package, Version: b.Version, Release: b.Release, Image: b.Image,
		Properties: convertAll(b.Properties, func(p query.Property) catalogapi.Property {
			return catalogapi.Property{Type: p.Type, Value: p.Value}
		}),
		RelatedImages: convertAll(b.RelatedImages, func(r query.RelatedImage) catalogapi.RelatedImage {
			return catalogapi.RelatedImage{Name: r.Name, Image: r.Image}
		}),
		ProvidedGVKs: convertAll(b.ProvidedGVKs, apiGVK),
		RequiredGVKs: convertAll(b.RequiredGVKs, apiGVK),
		RequiredPackages: convertAll(b.RequiredPackages, func(r query.PackageRequirement) catalogapi.PackageRequirement {
			return catalogapi.PackageRequirement{PackageName: r.PackageName, VersionRange: r.VersionRange}
		}),
		Channels: convertAll(b.Channels, func(c query.BundleChannel) catalogapi.BundleChannel {
			return catalogapi.BundleChannel{Channel: c.Channel, Replaces: c.Replaces, SkipRange: c.SkipRange, Skips: c.Skips, IsHead: c.IsHead}
		}),
		Deprecation: apiDeprecation(b.Deprecation),
	}
}

func apiUpgrades(u query.Upgrades) catalogapi.UpgradeList {
	return catalogapi.UpgradeList{
		From: apiBundleRef(u.From),
		Items: convertAll(u.Edges, func(e query.UpgradeEdge) catalogapi.UpgradeEdge {
			return catalogapi.UpgradeEdge{Name: e.Name, Version: e.Version, Channel: e.Channel,
				Rules: convertAll(e.Rules, func(r query.UpgradeRule) catalogapi.UpgradeRule { return catalogapi.UpgradeRule(r) })}
		}),
		Heads: convertAll(u.Heads, func(h query.ChannelHead) catalogapi.ChannelHead {
			return catalogapi.ChannelHead{Channel: h.Channel, Name: h.Name, Version: h.Version}
		}),
	}
}

// apiProviders names the catalog the providers were found in.
func apiProviders(catalog string, providers []query.Provider) []catalogapi.Provider {
	return convertAll(providers, func(p query.Provider) catalogapi.Provider {
		return catalogapi.Provider{Catalog: catalog, Package: p.Package, Bundle: p.Bundle, Version: p.Version,
			Channels: convertAll(p.Channels, func(c query.ProviderChannel) catalogapi.ProviderChannel {
				return catalogapi.ProviderChannel{Name: c.Name, IsHead: c.IsHead, IsDefault: c.IsDefault}
			})}
	})
}

func apiChanges(c query.Changes) catalogapi.Changes {
	return catalogapi.Changes{From: c.From, To: c.To, Added: nonNil(c.Added), Removed: nonNil(c.Removed),
		Changed: convertAll(c.Changed, apiPackageChange)}
}

func apiPackageChange(c query.PackageChange) catalogapi.PackageChange {
	return catalogapi.PackageChange{Package: c.Package, DigestBefore: c.DigestBefore, DigestAfter: c.DigestAfter,
		Detailed: c.Detailed, ChannelsAdded: nonNil(c.ChannelsAdded), ChannelsRemoved: nonNil(c.ChannelsRemoved),
		Heads: convertAll(c.Heads, func(h query.HeadChange) catalogapi.HeadChange {
			return catalogapi.HeadChange{Channel: h.Channel, Before: h.Before, After: h.After}
		}),
		BundlesAdded: nonNil(c.BundlesAdded), BundlesRemoved: nonNil(c.BundlesRemoved),
		DeprecationsAdded:   convertAll(c.DeprecationsAdded, apiDeprecationEntry),
		DeprecationsRemoved: convertAll(c.DeprecationsRemoved, apiDeprecationEntry)}
}

func apiDeprecationEntry(d query.DeprecationFact) catalogapi.DeprecationEntry {
	return catalogapi.DeprecationEntry{Schema: d.Schema, Name: d.Name, Message: d.Message}
}

// apiResolution is a resolution as the API shows it.
func apiResolution(req query.ResolveRequest, res query.Resolution) catalogapi.Resolution {
	out := catalogapi.Resolution{Package: req.Package, BundleReleaseSupport: req.BundleRelease, Message: res.Error,
		Catalogs: make([]catalogapi.ResolveCatalog, 0, len(res.Catalogs))}
	if b, catalog := res.Bundle(); b != nil {
		out.Bundle = catalogapi.ResolvedBundle{Catalog: catalog, Name: b.Name, Version: b.Version, Release: b.Release,
			Image: b.Image, Deprecation: apiDeprecation(b.Deprecation)}
	}
	if b, catalog := res.RefusedBundle(); b != nil {
		out.Refused = catalogapi.RefusedBundle{Catalog: catalog, Name: b.Name, Version: b.Version, Release: b.Release,
			Image: b.Image, Deprecation: apiDeprecation(b.Deprecation), Dependency: catalogapi.DependencyProperty(b.Dependency)}
	}
	for _, c := range res.Catalogs {
		rc := catalogapi.ResolveCatalog{Name: c.Catalog, Priority: c.Priority, Outcome: catalogapi.ResolveCatalogOutcome(c.Outcome),
			Candidates: make([]catalogapi.ResolveCandidate, 0, len(c.Candidates))}
		for _, b := range c.Candidates {
			cand := catalogapi.ResolveCandidate{Name: b.Name, Version: b.Version, Release: b.Release, Image: b.Image,
				Channels: b.Channels, Deprecation: apiDeprecation(b.Deprecation), Ranking: catalogapi.ResolveCandidateRanking(b.Ranking),
				Dependency: catalogapi.DependencyProperty(b.Dependency),
				Rejections: make([]catalogapi.ResolveCandidateRejections, 0, len(b.Rejections))}
			for _, r := range b.Rejections {
				cand.Rejections = append(cand.Rejections, catalogapi.ResolveCandidateRejections(r))
			}
			for _, s := range b.Successor {
				cand.Successor = append(cand.Successor, catalogapi.ResolveCandidateSuccessor(s))
			}
			rc.Candidates = append(rc.Candidates, cand)
		}
		out.Catalogs = append(out.Catalogs, rc)
	}
	return out
}
