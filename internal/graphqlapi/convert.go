package graphqlapi

import "github.com/catalogd/catalogd/internal/query"

// convert.go is the one place this surface turns the read API's domain
// values into what its GraphQL types resolve: maps keyed by field name,
// which graphql-go's default resolver reads.

// packageValue is a package as Catalogd_Package resolves it (graphql-go's
// default resolver reads a struct by its json tags); the domain value
// rides along for the channels' resolver.
type packageValue struct {
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
	Description    string `json:"description"`
	pkg            query.Package
}

func packageValueOf(p query.Package) packageValue {
	return packageValue{Name: p.Name, DefaultChannel: p.DefaultChannel, Description: p.Description, pkg: p}
}

func bundleRef(b query.BundleRef) any {
	if b.Name == "" {
		return nil
	}
	return map[string]any{"name": b.Name, "version": b.Version}
}

func channelValues(chs []query.ChannelSummary) []any {
	out := make([]any, len(chs))
	for i, c := range chs {
		out[i] = map[string]any{"name": c.Name, "head": bundleRef(c.Head), "headProblem": nullable(c.HeadProblem),
			"entryCount": c.EntryCount, "isDefault": c.IsDefault, "deprecation": nullable(c.Deprecation)}
	}
	return out
}

func upgradesValue(u query.Upgrades) map[string]any {
	edges := make([]any, len(u.Edges))
	for i, e := range u.Edges {
		rules := make([]any, len(e.Rules))
		for j, r := range e.Rules {
			rules[j] = string(r)
		}
		edges[i] = map[string]any{"name": e.Name, "version": e.Version, "channel": e.Channel, "rules": rules}
	}
	heads := make([]any, len(u.Heads))
	for i, h := range u.Heads {
		heads[i] = map[string]any{"channel": h.Channel, "name": h.Name, "version": h.Version}
	}
	return map[string]any{"from": bundleRef(u.From), "edges": edges, "heads": heads}
}

func providerValues(ps []query.Provider) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		chs := make([]any, len(p.Channels))
		for j, c := range p.Channels {
			chs[j] = map[string]any{"name": c.Name, "isHead": c.IsHead, "isDefault": c.IsDefault}
		}
		out[i] = map[string]any{"package": p.Package, "bundle": p.Bundle, "version": p.Version, "channels": chs}
	}
	return out
}

// nullable answers "" as null: a channel without a problem or a
// deprecation has none.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
