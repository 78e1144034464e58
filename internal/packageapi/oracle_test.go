package packageapi

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
)

// expectedManifests computes, independently of catalogd's parser, index
// and queries, the PackageManifests packageserver would serve for the
// catalog in dir: operator-registry reads the catalog into its model and
// turns each channel head into the CSV its registry server hands
// packageserver (api.ConvertModelBundleToAPIBundle), and this function
// describes them as packageserver does. Keyed by package name; metadata
// that the server alone decides (namespace, resourceVersion, creation
// time) is left out.
func expectedManifests(t testing.TB, dir, catalog string, catalogLabels map[string]string) map[string]pkgv1.PackageManifest {
	t.Helper()
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]pkgv1.PackageManifest{}
	for _, p := range m {
		pm := pkgv1.PackageManifest{
			TypeMeta:   metav1.TypeMeta{Kind: "PackageManifest", APIVersion: "packages.operators.coreos.com/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Status: pkgv1.PackageManifestStatus{
				CatalogSource: catalog, CatalogSourceDisplayName: catalog,
				PackageName: p.Name, DefaultChannel: p.DefaultChannel.Name,
			},
		}
		if p.Deprecation != nil {
			pm.Status.Deprecation = &pkgv1.Deprecation{Message: p.Deprecation.Message}
		}
		labels := maps.Clone(catalogLabels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels["catalog"], labels["catalog-namespace"] = catalog, ""
		var (
			defaultCSV    *v1alpha1.ClusterServiceVersion
			providerSet   bool
			defaultElided bool
		)
		for _, chName := range slices.Sorted(maps.Keys(p.Channels)) {
			ch := p.Channels[chName]
			csv, images, ok := headCSV(t, ch)
			if !ok {
				defaultElided = defaultElided || chName == pm.Status.DefaultChannel
				continue
			}
			if defaultCSV == nil || chName == pm.Status.DefaultChannel {
				defaultCSV = csv
			}
			pc := pkgv1.PackageChannel{Name: chName, CurrentCSV: csv.Name, CurrentCSVDesc: describeCSV(csv, images), Entries: channelEntries(ch)}
			if ch.Deprecation != nil {
				pc.Deprecation = &pkgv1.Deprecation{Message: ch.Deprecation.Message}
			}
			pm.Status.Channels = append(pm.Status.Channels, pc)
			if !providerSet || chName == pm.Status.DefaultChannel {
				pm.Status.Provider = pkgv1.AppLink{Name: csv.Spec.Provider.Name, URL: csv.Spec.Provider.URL}
				labels["provider"], labels["provider-url"] = csv.Spec.Provider.Name, csv.Spec.Provider.URL
				providerSet = true
			}
		}
		if len(pm.Status.Channels) == 0 {
			continue
		}
		if defaultElided {
			pm.Status.DefaultChannel = pm.Status.Channels[0].Name
		}
		maps.Copy(labels, defaultCSV.Labels)
		hasOS := slices.ContainsFunc(slices.Collect(maps.Keys(labels)), func(k string) bool { return strings.HasPrefix(k, "operatorframework.io/os.") })
		hasArch := slices.ContainsFunc(slices.Collect(maps.Keys(labels)), func(k string) bool { return strings.HasPrefix(k, "operatorframework.io/arch.") })
		if !hasOS {
			labels["operatorframework.io/os.linux"] = "supported"
		}
		if !hasArch {
			labels["operatorframework.io/arch.amd64"] = "supported"
		}
		pm.Labels = labels
		out[p.Name] = pm
	}
	return out
}

// headCSV is the CSV of a channel's head as operator-registry's registry
// server gives it, with the images packageserver lists for it.
func headCSV(t testing.TB, ch *model.Channel) (*v1alpha1.ClusterServiceVersion, []string, bool) {
	head, err := ch.Head()
	if err != nil {
		return nil, nil, false
	}
	b, err := api.ConvertModelBundleToAPIBundle(*head)
	if err != nil {
		t.Fatalf("convert bundle %s: %v", head.Name, err)
	}
	var csv v1alpha1.ClusterServiceVersion
	if b.CsvJson == "" || json.Unmarshal([]byte(b.CsvJson), &csv) != nil {
		return nil, nil, false
	}
	var images []string
	var rcsv registry.ClusterServiceVersion
	if json.Unmarshal([]byte(b.CsvJson), &rcsv) == nil {
		ops, err1 := rcsv.GetOperatorImages()
		rel, err2 := rcsv.GetRelatedImages()
		if err1 == nil && err2 == nil {
			images = slices.Sorted(maps.Keys(ops))
			images = append(images, slices.Collect(maps.Keys(rel))...)
			slices.Sort(images)
			images = slices.Compact(images)
		}
	}
	return &csv, images, true
}

func describeCSV(csv *v1alpha1.ClusterServiceVersion, images []string) pkgv1.CSVDescription {
	d := pkgv1.CSVDescription{
		DisplayName:     csv.Spec.DisplayName,
		Version:         csv.Spec.Version.String(),
		Provider:        pkgv1.AppLink{Name: csv.Spec.Provider.Name, URL: csv.Spec.Provider.URL},
		Annotations:     csv.Annotations,
		Keywords:        csv.Spec.Keywords,
		Maturity:        csv.Spec.Maturity,
		LongDescription: csv.Spec.Description,
		NativeAPIs:      csv.Spec.NativeAPIs,
		MinKubeVersion:  csv.Spec.MinKubeVersion,
		RelatedImages:   images,
	}
	for _, l := range csv.Spec.Links {
		d.Links = append(d.Links, pkgv1.AppLink{Name: l.Name, URL: l.URL})
	}
	for _, m := range csv.Spec.Maintainers {
		d.Maintainers = append(d.Maintainers, pkgv1.Maintainer{Name: m.Name, Email: m.Email})
	}
	for _, im := range csv.Spec.InstallModes {
		d.InstallModes = append(d.InstallModes, pkgv1.InstallMode{Type: string(im.Type), Supported: im.Supported})
	}
	crds := func(in []v1alpha1.CRDDescription) (out []pkgv1.CRDDescription) {
		for _, c := range in {
			out = append(out, pkgv1.CRDDescription{Name: c.Name, Version: c.Version, Kind: c.Kind, DisplayName: c.DisplayName, Description: c.Description})
		}
		return out
	}
	apis := func(in []v1alpha1.APIServiceDescription) (out []pkgv1.APIServiceDescription) {
		for _, a := range in {
			out = append(out, pkgv1.APIServiceDescription{Name: a.Name, Group: a.Group, Version: a.Version, Kind: a.Kind, DisplayName: a.DisplayName, Description: a.Description})
		}
		return out
	}
	d.CustomResourceDefinitions = pkgv1.CustomResourceDefinitions{Owned: crds(csv.Spec.CustomResourceDefinitions.Owned), Required: crds(csv.Spec.CustomResourceDefinitions.Required)}
	d.APIServiceDefinitions = pkgv1.APIServiceDefinitions{Owned: apis(csv.Spec.APIServiceDefinitions.Owned), Required: apis(csv.Spec.APIServiceDefinitions.Required)}
	return d
}

// channelEntries lists a channel's bundles highest version first (ties by
// name), each with its own deprecation, as packageserver does.
func channelEntries(ch *model.Channel) []pkgv1.ChannelEntry {
	bundles := slices.Collect(maps.Values(ch.Bundles))
	slices.SortFunc(bundles, func(a, b *model.Bundle) int {
		va, _ := semver.Parse(a.Version.String())
		vb, _ := semver.Parse(b.Version.String())
		return cmp.Or(vb.Compare(va), strings.Compare(a.Name, b.Name))
	})
	var out []pkgv1.ChannelEntry
	for _, b := range bundles {
		e := pkgv1.ChannelEntry{Name: b.Name, Version: b.Version.String()}
		if b.Deprecation != nil {
			e.Deprecation = &pkgv1.Deprecation{Message: b.Deprecation.Message}
		}
		out = append(out, e)
	}
	return out
}
