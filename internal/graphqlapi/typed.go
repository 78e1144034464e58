package graphqlapi

import (
	"errors"
	"fmt"

	"github.com/graphql-go/graphql"

	"github.com/catalogd/catalogd/internal/query"
)

// The typed questions, under the root field catalog: what the REST API
// answers, resolved through internal/query as it resolves them. Their
// type names carry "Catalogd_": catalogd's own names are made of letters
// and digits only, so no catalog schema can take one of them, and no
// catalog schema's list field can be "catalog", as those all end in "s".

var bundleRefType = graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_BundleRef", Fields: graphql.Fields{
	"name":    {Type: graphql.String},
	"version": {Type: graphql.String},
}})

var channelType = graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_Channel", Fields: graphql.Fields{
	"name":        {Type: graphql.NewNonNull(graphql.String)},
	"head":        {Type: bundleRefType, Description: "The channel's head; null when it has no single head (headProblem says why)"},
	"headProblem": {Type: graphql.String},
	"entryCount":  {Type: graphql.Int},
	"isDefault":   {Type: graphql.Boolean},
	"deprecation": {Type: graphql.String},
}})

var packageType = graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_Package", Fields: graphql.Fields{
	"name":           {Type: graphql.NewNonNull(graphql.String)},
	"defaultChannel": {Type: graphql.String},
	"description":    {Type: graphql.String},
	"channels": {Type: graphql.NewList(channelType), Resolve: func(p graphql.ResolveParams) (any, error) {
		r := runOf(p.Context)
		if stop, err := r.halt(); stop {
			return nil, err
		}
		pkg, ok := p.Source.(packageValue)
		if !ok {
			return nil, nil
		}
		chs, err := r.cat.Channels(p.Context, pkg.pkg)
		if err != nil {
			return nil, r.fail(err)
		}
		return channelValues(chs), r.fail(r.charge(64 * len(chs)))
	}},
}})

var upgradesType = graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_Upgrades", Fields: graphql.Fields{
	"from": {Type: bundleRefType},
	"edges": {Type: graphql.NewList(graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_UpgradeEdge", Fields: graphql.Fields{
		"name":    {Type: graphql.String},
		"version": {Type: graphql.String},
		"channel": {Type: graphql.String},
		"rules":   {Type: graphql.NewList(graphql.String), Description: "replaces, skips or skipRange, as found"},
	}})), Description: "Where the bundle may upgrade to directly, newest first"},
	"heads": {Type: graphql.NewList(graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_ChannelHead", Fields: graphql.Fields{
		"channel": {Type: graphql.String},
		"name":    {Type: graphql.String},
		"version": {Type: graphql.String},
	}})), Description: "The heads of the channels considered"},
}})

var providerType = graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_Provider", Fields: graphql.Fields{
	"package": {Type: graphql.String},
	"bundle":  {Type: graphql.String},
	"version": {Type: graphql.String},
	"channels": {Type: graphql.NewList(graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_ProviderChannel", Fields: graphql.Fields{
		"name":      {Type: graphql.String},
		"isHead":    {Type: graphql.Boolean},
		"isDefault": {Type: graphql.Boolean},
	}}))},
}})

var catalogType = graphql.NewObject(graphql.ObjectConfig{Name: "Catalogd_Catalog", Fields: graphql.Fields{
	"package": {
		Type:        packageType,
		Description: "A package with its channels and their heads; null if the catalog has none of that name",
		Args:        graphql.FieldConfigArgument{"name": {Type: graphql.NewNonNull(graphql.String)}},
		Resolve: func(p graphql.ResolveParams) (any, error) {
			r := runOf(p.Context)
			if stop, err := r.halt(); stop {
				return nil, err
			}
			pkg, err := r.cat.Package(p.Context, p.Args["name"].(string))
			if errors.Is(err, query.ErrNotFound) {
				return nil, nil
			}
			if err != nil {
				return nil, r.fail(err)
			}
			return packageValueOf(pkg), r.fail(r.charge(len(pkg.Description)))
		},
	},
	"upgrades": {
		Type:        upgradesType,
		Description: "The upgrade edges from a bundle, named by name or version, in one channel or all",
		Args: graphql.FieldConfigArgument{
			"package": {Type: graphql.NewNonNull(graphql.String)},
			"from":    {Type: graphql.NewNonNull(graphql.String), Description: "The name or the version of the installed bundle"},
			"channel": {Type: graphql.String},
		},
		Resolve: func(p graphql.ResolveParams) (any, error) {
			r := runOf(p.Context)
			if stop, err := r.halt(); stop {
				return nil, err
			}
			pkg, from := p.Args["package"].(string), p.Args["from"].(string)
			channel, _ := p.Args["channel"].(string)
			src, err := r.cat.BundleByName(p.Context, pkg, from)
			if errors.Is(err, query.ErrNotFound) {
				byVersion, verr := r.cat.BundlesByVersion(p.Context, pkg, from)
				switch {
				case verr != nil:
					return nil, r.fail(verr)
				case len(byVersion) == 0:
					return nil, r.fail(fmt.Errorf("package %q has no bundle named %q nor any bundle of that version", pkg, from))
				case len(byVersion) > 1:
					return nil, r.fail(fmt.Errorf("several bundles of package %q have version %q; name one of them", pkg, from))
				}
				src, err = byVersion[0], nil
			}
			if err != nil {
				return nil, r.fail(err)
			}
			up, err := r.cat.UpgradesFrom(p.Context, pkg, src, channel)
			if err != nil {
				return nil, r.fail(err)
			}
			return upgradesValue(up), r.fail(r.charge(64 * (len(up.Edges) + len(up.Heads))))
		},
	},
	"providers": {
		Type:        graphql.NewList(providerType),
		Description: "The bundles that provide a group/version/kind, by package and newest first",
		Args: graphql.FieldConfigArgument{
			"group":   {Type: graphql.NewNonNull(graphql.String)},
			"version": {Type: graphql.NewNonNull(graphql.String)},
			"kind":    {Type: graphql.NewNonNull(graphql.String)},
			"latest":  {Type: graphql.Boolean, DefaultValue: false, Description: "Only bundles that head a channel"},
		},
		Resolve: func(p graphql.ResolveParams) (any, error) {
			r := runOf(p.Context)
			if stop, err := r.halt(); stop {
				return nil, err
			}
			latest, _ := p.Args["latest"].(bool)
			g := query.GVK{Group: p.Args["group"].(string), Version: p.Args["version"].(string), Kind: p.Args["kind"].(string)}
			ps, err := r.cat.Providers(p.Context, g, latest)
			if err != nil {
				return nil, r.fail(err)
			}
			return providerValues(ps), r.fail(r.charge(64 * len(ps)))
		},
	},
}})

// catalogField is the root of the typed questions.
func catalogField() *graphql.Field {
	return &graphql.Field{
		Type:        catalogType,
		Description: "Typed questions about the catalog, as its REST API answers them (catalogd extension)",
		Resolve:     func(graphql.ResolveParams) (any, error) { return struct{}{}, nil },
	}
}
