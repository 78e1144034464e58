package fbcgen_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// generate writes a catalog into a fresh temporary directory, loads it back
// with operator-registry and validates it.
func generate(t *testing.T, opts fbcgen.Options) (string, fbcgen.Stats, *declcfg.DeclarativeConfig) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	st, err := fbcgen.Write(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(dir))
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		t.Fatalf("ConvertToModel: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return dir, st, cfg
}

// countLoaded computes Stats from what LoadFS read and from the files on
// disk, without using anything the generator reports.
func countLoaded(t *testing.T, dir string, cfg *declcfg.DeclarativeConfig) fbcgen.Stats {
	t.Helper()
	var c fbcgen.Stats
	c.Packages = len(cfg.Packages)
	for _, p := range cfg.Packages {
		if p.Icon != nil {
			c.Icons++
		}
	}
	c.Channels = len(cfg.Channels)
	for _, ch := range cfg.Channels {
		c.ChannelEntries += len(ch.Entries)
	}
	c.Bundles = len(cfg.Bundles)
	for _, b := range cfg.Bundles {
		c.RelatedImages += len(b.RelatedImages)
		c.Properties += len(b.Properties)
		for _, p := range b.Properties {
			switch p.Type {
			case property.TypePackage:
				var v property.Package
				if err := json.Unmarshal(p.Value, &v); err != nil {
					t.Fatal(err)
				}
				if len(semver.MustParse(v.Version).Pre) > 0 {
					c.PrereleaseBundles++
				}
			case property.TypeGVK:
				c.GVKs++
			case property.TypeGVKRequired:
				c.RequiredGVKs++
			case property.TypePackageRequired:
				c.RequiredPackages++
			case property.TypeCSVMetadata:
				c.CSVMetadata++
			case property.TypeBundleObject:
				var v struct {
					Data string `json:"data"`
				}
				if err := json.Unmarshal(p.Value, &v); err != nil {
					t.Fatal(err)
				}
				if crd, _ := crdOf(t, v.Data); crd != nil {
					c.CRDObjects++
					c.CRDObjectBytes += int64(len(v.Data))
				} else {
					c.BundleObjects++
					c.BundleObjectBytes += int64(len(v.Data))
				}
			default:
				if strings.HasPrefix(p.Type, "olm.") {
					t.Errorf("bundle %s: unexpected property type %s", b.Name, p.Type)
				}
				c.FillerProperties++
			}
		}
	}
	c.Deprecations = len(cfg.Deprecations)
	for _, d := range cfg.Deprecations {
		c.DeprecationEntries += len(d.Entries)
	}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		c.Files++
		c.Bytes += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkHeads finds each channel's head independently of operator-registry:
// the one entry that no other entry names in replaces or skips. There must be
// exactly one, and it must be the newest version in the channel.
func checkHeads(t *testing.T, cfg *declcfg.DeclarativeConfig) {
	t.Helper()
	for _, ch := range cfg.Channels {
		named := map[string]bool{}
		for _, e := range ch.Entries {
			if e.Replaces != "" {
				named[e.Replaces] = true
			}
			for _, s := range e.Skips {
				named[s] = true
			}
		}
		var heads []string
		var newest string
		var newestV semver.Version
		for _, e := range ch.Entries {
			if !named[e.Name] {
				heads = append(heads, e.Name)
			}
			v := semver.MustParse(strings.SplitN(e.Name, ".v", 2)[1])
			if newest == "" || v.GT(newestV) {
				newest, newestV = e.Name, v
			}
		}
		if len(heads) != 1 {
			t.Errorf("%s/%s: heads %v, want exactly one", ch.Package, ch.Name, heads)
			continue
		}
		if heads[0] != newest {
			t.Errorf("%s/%s: head %s is not the newest entry %s", ch.Package, ch.Name, heads[0], newest)
		}
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		opts fbcgen.Options
		// wantPackages and wantBundles are what the options ask for.
		wantPackages, wantBundles int
	}{
		{name: "defaults", opts: fbcgen.Options{}, wantPackages: 20, wantBundles: 200},
		{
			name:         "same size packages with objects and icons",
			opts:         fbcgen.Options{Packages: 5, BundlesPerPackage: 12, BundleObjectBytes: 3000, Icons: true, Seed: 2},
			wantPackages: 5, wantBundles: 60,
		},
		{
			name: "uneven with many channels and properties",
			opts: fbcgen.Options{Packages: 40, Bundles: 600, ChannelsPerPackage: 6, PropertiesPerBundle: 30,
				BundleObjectBytes: 4000, Icons: true, Seed: 7},
			wantPackages: 40, wantBundles: 600,
		},
		{
			name:         "CRD objects",
			opts:         fbcgen.Options{Packages: 3, Bundles: 12, BundleObjectBytes: 3000, CRDObjectBytes: 20_000, Seed: 8},
			wantPackages: 3, wantBundles: 12,
		},
		{
			name:         "single channel",
			opts:         fbcgen.Options{Packages: 8, Bundles: 50, ChannelsPerPackage: 1, Seed: 3},
			wantPackages: 8, wantBundles: 50,
		},
		{
			name:         "one bundle per package",
			opts:         fbcgen.Options{Packages: 10, BundlesPerPackage: 1, Seed: 4},
			wantPackages: 10, wantBundles: 10,
		},
		{
			name:         "a widely provided GVK and a long package",
			opts:         fbcgen.Options{Packages: 30, Bundles: 200, WideGVKBundles: 40, LongPackageBundles: 120, Seed: 6},
			wantPackages: 30, wantBundles: 200 - largestOf(t, fbcgen.Options{Packages: 30, Bundles: 200, Seed: 6}) + 120,
		},
		{
			name:         "no filler properties",
			opts:         fbcgen.Options{Packages: 3, Bundles: 30, PropertiesPerBundle: 1, Seed: 5},
			wantPackages: 3, wantBundles: 30,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, st, cfg := generate(t, tc.opts)
			if got := countLoaded(t, dir, cfg); got != st {
				t.Errorf("Stats differ from the loaded catalog:\nreported %+v\nloaded   %+v", st, got)
			}
			if st.Packages != tc.wantPackages || st.Bundles != tc.wantBundles {
				t.Errorf("got %d packages and %d bundles, want %d and %d", st.Packages, st.Bundles, tc.wantPackages, tc.wantBundles)
			}
			checkHeads(t, cfg)

			maxChannels := tc.opts.ChannelsPerPackage
			if maxChannels == 0 {
				maxChannels = 4
			}
			perPackage := map[string]int{}
			for _, ch := range cfg.Channels {
				perPackage[ch.Package]++
			}
			for pkg, n := range perPackage {
				if n > maxChannels {
					t.Errorf("package %s has %d channels, at most %d allowed", pkg, n, maxChannels)
				}
			}

			// Pre-releases live only in candidate channels.
			for _, ch := range cfg.Channels {
				for _, e := range ch.Entries {
					if strings.Contains(strings.SplitN(e.Name, ".v", 2)[1], "-") && ch.Name != "candidate" {
						t.Errorf("pre-release %s in channel %s/%s", e.Name, ch.Package, ch.Name)
					}
				}
			}

			wantProps := tc.opts.PropertiesPerBundle
			if wantProps == 0 {
				wantProps = 20
			}
			for _, b := range cfg.Bundles {
				filler := 0
				for _, p := range b.Properties {
					if !strings.HasPrefix(p.Type, "olm.") {
						filler++
					}
				}
				if len(b.Properties) < wantProps || (filler > 0 && len(b.Properties) != wantProps) {
					t.Errorf("bundle %s: %d properties (%d filler), want %d", b.Name, len(b.Properties), filler, wantProps)
					break
				}
			}

			if tc.opts.BundleObjectBytes > 0 {
				if st.BundleObjects != st.Bundles {
					t.Errorf("%d bundle objects for %d bundles", st.BundleObjects, st.Bundles)
				}
				avg := float64(st.BundleObjectBytes) / float64(st.BundleObjects)
				if want := float64(tc.opts.BundleObjectBytes); avg < 0.9*want || avg > 1.1*want {
					t.Errorf("bundle objects average %.0f bytes, want about %.0f", avg, want)
				}
				for _, b := range cfg.Bundles {
					if b.CsvJSON == "" {
						t.Errorf("bundle %s: operator-registry found no CSV in its bundle object", b.Name)
						break
					}
				}
			} else if st.BundleObjects != 0 {
				t.Errorf("%d bundle objects, want none", st.BundleObjects)
			}
			wide := 0
			perPkg := map[string]int{}
			for _, b := range cfg.Bundles {
				perPkg[b.Package]++
				for _, p := range b.Properties {
					var g property.GVK
					if p.Type == property.TypeGVK && json.Unmarshal(p.Value, &g) == nil &&
						g == (property.GVK{Group: fbcgen.WideGVK.Group, Version: fbcgen.WideGVK.Version, Kind: fbcgen.WideGVK.Kind}) {
						wide++
					}
				}
			}
			if wide != tc.opts.WideGVKBundles {
				t.Errorf("%d bundles provide the wide GVK, want %d", wide, tc.opts.WideGVKBundles)
			}
			if largest := slices.Max(slices.Collect(maps.Values(perPkg))); largest < tc.opts.LongPackageBundles {
				t.Errorf("the largest package has %d bundles, want at least %d", largest, tc.opts.LongPackageBundles)
			}
			if tc.opts.Icons != (st.Icons == st.Packages) || (!tc.opts.Icons && st.Icons != 0) {
				t.Errorf("Icons=%v but %d of %d packages have one", tc.opts.Icons, st.Icons, st.Packages)
			}
		})
	}
}

// largestOf is the bundle count of the largest package opts generate.
func largestOf(t *testing.T, opts fbcgen.Options) int {
	_, _, cfg := generate(t, opts)
	perPkg := map[string]int{}
	for _, b := range cfg.Bundles {
		perPkg[b.Package]++
	}
	return slices.Max(slices.Collect(maps.Values(perPkg)))
}

// TestWriteShape checks that a medium catalog has the graph and property
// features the generator promises, not just that it validates.
func TestWriteShape(t *testing.T) {
	_, st, cfg := generate(t, fbcgen.Options{Packages: 60, Bundles: 900, Seed: 11})

	var skips, skipRanges, skipRangeOnly, crossChannelTail int
	channelsOf := map[string]int{}
	for _, ch := range cfg.Channels {
		inChannel := map[string]bool{}
		for _, e := range ch.Entries {
			inChannel[e.Name] = true
			channelsOf[e.Name]++
		}
		for i, e := range ch.Entries {
			skips += len(e.Skips)
			if e.SkipRange != "" {
				skipRanges++
				if i == 0 && e.Replaces == "" {
					skipRangeOnly++
				}
			}
			if e.Replaces != "" && !inChannel[e.Replaces] {
				crossChannelTail++
			}
		}
	}
	multi := 0
	for _, n := range channelsOf {
		if n > 1 {
			multi++
		}
	}
	providers := map[property.GVK]map[string]bool{}
	for _, b := range cfg.Bundles {
		props, err := property.Parse(b.Properties)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range props.GVKs {
			if providers[g] == nil {
				providers[g] = map[string]bool{}
			}
			providers[g][b.Package] = true
		}
	}
	shared := 0
	for _, pkgs := range providers {
		if len(pkgs) > 1 {
			shared++
		}
	}
	for what, n := range map[string]int{
		"skips": skips, "skipRange": skipRanges, "channels entered only by skipRange": skipRangeOnly,
		"first entries replacing another channel's bundle": crossChannelTail, "bundles in several channels": multi,
		"GVKs with several providers": shared, "pre-release bundles": st.PrereleaseBundles,
		"olm.gvk.required": st.RequiredGVKs, "olm.package.required": st.RequiredPackages,
		"deprecations": st.Deprecations,
	} {
		if n == 0 {
			t.Errorf("no %s in a catalog of %d bundles", what, st.Bundles)
		}
	}

	// Heavy tail: the largest package dwarfs the median one.
	sizes := map[string]int{}
	for _, b := range cfg.Bundles {
		sizes[b.Package]++
	}
	largest, small := 0, 0
	for _, n := range sizes {
		largest = max(largest, n)
		if n <= 10 {
			small++
		}
	}
	if largest < 60 || small < len(sizes)/2 {
		t.Errorf("bundle counts are not heavy-tailed: largest package %d, %d of %d packages with <= 10", largest, small, len(sizes))
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestWriteDeterministic(t *testing.T) {
	opts := fbcgen.Options{Packages: 12, Bundles: 150, BundleObjectBytes: 3000, Icons: true, Seed: 42}
	write := func(o fbcgen.Options) map[string][]byte {
		dir := filepath.Join(t.TempDir(), "c")
		if _, err := fbcgen.Write(context.Background(), dir, o); err != nil {
			t.Fatal(err)
		}
		return readTree(t, dir)
	}
	a, b := write(opts), write(opts)
	if len(a) != len(b) {
		t.Fatalf("same seed, %d files vs %d", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("same seed, %s differs", name)
		}
	}
	opts.Seed = 43
	c := write(opts)
	same := len(a) == len(c)
	for name, data := range a {
		same = same && bytes.Equal(data, c[name])
	}
	if same {
		t.Error("different seeds wrote identical catalogs")
	}
}

func TestWriteBundleObjectIsCSV(t *testing.T) {
	_, _, cfg := generate(t, fbcgen.Options{Packages: 2, BundlesPerPackage: 3, BundleObjectBytes: 5000, Seed: 9})
	for _, b := range cfg.Bundles {
		var csv struct {
			Kind string `json:"kind"`
			Spec struct {
				Version string `json:"version"`
			} `json:"spec"`
		}
		if err := json.Unmarshal([]byte(b.CsvJSON), &csv); err != nil {
			t.Fatalf("bundle %s: %v", b.Name, err)
		}
		if csv.Kind != "ClusterServiceVersion" || !strings.HasSuffix(b.Name, ".v"+csv.Spec.Version) {
			t.Errorf("bundle %s: CSV kind %q version %q", b.Name, csv.Kind, csv.Spec.Version)
		}
		// The property's data is standard base64, as opm writes it.
		for _, p := range b.Properties {
			if p.Type == property.TypeBundleObject {
				var v struct {
					Data string `json:"data"`
				}
				if err := json.Unmarshal(p.Value, &v); err != nil {
					t.Fatal(err)
				}
				if _, err := base64.StdEncoding.DecodeString(v.Data); err != nil {
					t.Errorf("bundle %s: %v", b.Name, err)
				}
			}
		}
	}
}

// crd is what TestWriteCRDObjects reads of a CRD.
type crd struct {
	Kind string `json:"kind"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name string `json:"name"`
		} `json:"versions"`
	} `json:"spec"`
}

// crdOf decodes a bundle object's base64 data and returns it as a CRD, or
// nil if it is another kind of object; n is its decoded size.
func crdOf(t *testing.T, data string) (c *crd, n int) {
	t.Helper()
	doc, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	var v crd
	if json.Unmarshal(doc, &v) != nil || v.Kind != "CustomResourceDefinition" {
		return nil, len(doc)
	}
	return &v, len(doc)
}

// TestWriteCRDObjects: with CRDObjectBytes, each bundle carries the CRD of
// every group, version and kind it provides (olm.gvk) other than the shared
// ones, each about the size asked for.
func TestWriteCRDObjects(t *testing.T) {
	const size = 300_000
	_, st, cfg := generate(t, fbcgen.Options{Packages: 3, Bundles: 9, CRDObjectBytes: size, Seed: 11})
	if st.CRDObjects == 0 {
		t.Fatal("no CRD objects written")
	}
	for _, b := range cfg.Bundles {
		var group string
		gvks := map[string]bool{}
		for _, p := range b.Properties {
			if p.Type == property.TypeGVK {
				var g property.GVK
				if err := json.Unmarshal(p.Value, &g); err != nil {
					t.Fatal(err)
				}
				gvks[g.Group+"/"+g.Version+"/"+g.Kind] = true
			}
			if p.Type == property.TypeBundleObject {
				var v struct {
					Data string `json:"data"`
				}
				if err := json.Unmarshal(p.Value, &v); err != nil {
					t.Fatal(err)
				}
				c, n := crdOf(t, v.Data)
				if c == nil {
					continue
				}
				if len(v.Data) < size*9/10 || len(v.Data) > size*11/10 {
					t.Errorf("bundle %s: CRD of %d base64 bytes (%d decoded), want about %d", b.Name, len(v.Data), n, size)
				}
				if len(c.Spec.Versions) != 1 || !gvks[c.Spec.Group+"/"+c.Spec.Versions[0].Name+"/"+c.Spec.Names.Kind] {
					t.Errorf("bundle %s: CRD for %s %+v, which it does not list as olm.gvk (%v)", b.Name, c.Spec.Group, c.Spec.Names, gvks)
				}
				group = c.Spec.Group
			}
		}
		if group == "" {
			t.Errorf("bundle %s has no CRD object", b.Name)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stale.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{}); err == nil {
		t.Error("Write into a non-empty directory succeeded")
	}
	for _, opts := range []fbcgen.Options{
		{Packages: 10, Bundles: 5},
		{Bundles: 100, BundlesPerPackage: 5},
		{Packages: -1},
	} {
		if _, err := fbcgen.Write(context.Background(), filepath.Join(t.TempDir(), "c"), opts); err == nil {
			t.Errorf("Write(%+v) succeeded", opts)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fbcgen.Write(ctx, filepath.Join(t.TempDir(), "c"), fbcgen.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a cancelled context: %v", err)
	}
}
