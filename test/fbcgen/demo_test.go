package fbcgen_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// demoDir is the hand-written catalog served by `make run`; test/testdata/README.md
// says which package demonstrates what.
const demoDir = "../testdata/demo"

func loadDemo(t *testing.T) (*declcfg.DeclarativeConfig, model.Model) {
	t.Helper()
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(demoDir))
	if err != nil {
		t.Fatalf("load demo catalog: %v", err)
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		t.Fatalf("convert demo catalog to model: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("validate demo catalog: %v", err)
	}
	return cfg, m
}

func TestDemoCatalogValidates(t *testing.T) {
	cfg, m := loadDemo(t)

	if got, want := len(cfg.Packages), 5; got != want {
		t.Errorf("packages: got %d, want %d", got, want)
	}
	if got, want := len(cfg.Channels), 13; got != want {
		t.Errorf("channels: got %d, want %d", got, want)
	}
	if got, want := len(cfg.Bundles), 30; got != want {
		t.Errorf("bundles: got %d, want %d", got, want)
	}
	if got, want := len(cfg.Deprecations), 2; got != want {
		t.Errorf("olm.deprecations blobs: got %d, want %d", got, want)
	}

	icons := 0
	for _, p := range cfg.Packages {
		if p.Icon != nil {
			icons++
			if len(p.Icon.Data) == 0 || p.Icon.MediaType == "" {
				t.Errorf("package %s: icon without data or media type", p.Name)
			}
		}
	}
	if icons != 4 {
		t.Errorf("packages with an icon: got %d, want 4 (all but paper-lantern)", icons)
	}

	// Each package has its own default channel name, so a client can't assume "stable".
	defaults := map[string]string{}
	for name, p := range m {
		defaults[name] = p.DefaultChannel.Name
	}
	wantDefaults := map[string]string{
		"aurora-cache": "stable", "lighthouse-metrics": "stable-v3", "quarry-db": "v2",
		"tidewater-backup": "fast", "paper-lantern": "alpha",
	}
	for pkg, want := range wantDefaults {
		if defaults[pkg] != want {
			t.Errorf("package %s: default channel %q, want %q", pkg, defaults[pkg], want)
		}
	}
}

func TestDemoCatalogKeepsCustomSchema(t *testing.T) {
	cfg, _ := loadDemo(t)
	var notes []declcfg.Meta
	for _, o := range cfg.Others {
		if o.Schema == "io.catalogd.demo.note" {
			notes = append(notes, o)
		}
	}
	if len(notes) != 1 {
		t.Fatalf("io.catalogd.demo.note blobs: got %d, want 1 (others: %d)", len(notes), len(cfg.Others))
	}
	n := notes[0]
	if n.Package != "tidewater-backup" || n.Name != "support-window" {
		t.Errorf("note identity: got package %q name %q", n.Package, n.Name)
	}
	var body struct {
		Review struct {
			Ticket int `json:"ticket"`
		} `json:"review"`
	}
	if err := json.Unmarshal(n.Blob, &body); err != nil || body.Review.Ticket != 4711 {
		t.Errorf("note blob lost its nested fields (err %v): %s", err, n.Blob)
	}
}

// TestDemoCatalogIndexIgnore proves that .indexignore matters: the same tree
// without it fails to load because of aurora-cache/notes.txt.
func TestDemoCatalogIndexIgnore(t *testing.T) {
	if _, err := os.Stat(path.Join(demoDir, "aurora-cache", "notes.txt")); err != nil {
		t.Fatalf("the ignored file must exist for this test to mean anything: %v", err)
	}
	withoutIgnore := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(demoDir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".indexignore" {
			return err
		}
		data, err := os.ReadFile(path.Join(demoDir, p))
		if err != nil {
			return err
		}
		withoutIgnore[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = declcfg.LoadFS(context.Background(), withoutIgnore)
	if err == nil {
		t.Fatal("loading the demo catalog without .indexignore succeeded; notes.txt should break it")
	}
	t.Logf("without .indexignore: %v", err)
	// notes.txt is the only culprit: without it the tree loads again.
	delete(withoutIgnore, "aurora-cache/notes.txt")
	if _, err := declcfg.LoadFS(context.Background(), withoutIgnore); err != nil {
		t.Fatalf("without .indexignore and notes.txt: %v", err)
	}
}

func TestDemoCatalogGraphFeatures(t *testing.T) {
	cfg, m := loadDemo(t)

	heads := map[string]string{}
	for _, p := range m {
		for _, ch := range p.Channels {
			h, err := ch.Head()
			if err != nil {
				t.Fatalf("%s/%s: %v", p.Name, ch.Name, err)
			}
			heads[p.Name+"/"+ch.Name] = h.Name
		}
	}
	for key, want := range map[string]string{
		"aurora-cache/stable":        "aurora-cache.v1.3.0",
		"aurora-cache/fast":          "aurora-cache.v1.3.0",
		"aurora-cache/candidate":     "aurora-cache.v2.0.0-rc.2",
		"lighthouse-metrics/preview": "lighthouse-metrics.v3.2.0-beta.1",
		"quarry-db/v2":               "quarry-db.v2.1.0",
		"tidewater-backup/stable":    "tidewater-backup.v1.3.0",
	} {
		if heads[key] != want {
			t.Errorf("head of %s: got %q, want %q", key, heads[key], want)
		}
	}

	// aurora-cache.v1.3.0 is in stable, fast and candidate.
	inChannels := 0
	for _, ch := range m["aurora-cache"].Channels {
		if _, ok := ch.Bundles["aurora-cache.v1.3.0"]; ok {
			inChannels++
		}
	}
	if inChannels != 3 {
		t.Errorf("aurora-cache.v1.3.0 is in %d channels, want 3", inChannels)
	}

	// quarry-db v2 starts with an entry that nothing replaces: older bundles
	// reach it only through its skipRange.
	v2 := m["quarry-db"].Channels["v2"].Bundles["quarry-db.v2.0.0"]
	if v2.Replaces != "" || v2.SkipRange != ">=1.1.0 <2.0.0" {
		t.Errorf("quarry-db.v2.0.0 in v2: replaces %q skipRange %q", v2.Replaces, v2.SkipRange)
	}

	var skips, skipRanges int
	for _, c := range cfg.Channels {
		for _, e := range c.Entries {
			skips += len(e.Skips)
			if e.SkipRange != "" {
				skipRanges++
			}
		}
	}
	if skips == 0 || skipRanges == 0 {
		t.Errorf("want skips and skipRange in the demo graphs, got %d skips and %d skipRanges", skips, skipRanges)
	}

	// Deprecations: a channel and a bundle of aurora-cache, all of paper-lantern.
	if m["aurora-cache"].Channels["fast"].Deprecation == nil {
		t.Error("aurora-cache channel fast is not deprecated")
	}
	if m["aurora-cache"].Channels["stable"].Bundles["aurora-cache.v1.1.0"].Deprecation == nil {
		t.Error("aurora-cache.v1.1.0 is not deprecated")
	}
	if m["aurora-cache"].Deprecation != nil {
		t.Error("aurora-cache as a whole should not be deprecated")
	}
	if m["paper-lantern"].Deprecation == nil {
		t.Error("paper-lantern is not deprecated")
	}
}

func TestDemoCatalogProperties(t *testing.T) {
	cfg, _ := loadDemo(t)

	providers := map[property.GVK][]string{}
	var requiredGVKs, requiredPkgs, withObjects, withCSVMetadata int
	for _, b := range cfg.Bundles {
		props, err := property.Parse(b.Properties)
		if err != nil {
			t.Fatalf("bundle %s: %v", b.Name, err)
		}
		for _, g := range props.GVKs {
			if !slices.Contains(providers[g], b.Package) {
				providers[g] = append(providers[g], b.Package)
			}
		}
		requiredGVKs += len(props.GVKsRequired)
		requiredPkgs += len(props.PackagesRequired)
		for _, pr := range props.PackagesRequired {
			if pr.VersionRange == "" {
				t.Errorf("bundle %s: olm.package.required without versionRange", b.Name)
			}
		}
		if len(props.BundleObjects) > 0 {
			withObjects++
			if len(b.Objects) != len(props.BundleObjects) {
				t.Errorf("bundle %s: %d objects decoded from %d olm.bundle.object", b.Name, len(b.Objects), len(props.BundleObjects))
			}
			if b.CsvJSON == "" {
				t.Errorf("bundle %s: olm.bundle.object without a CSV", b.Name)
			}
		}
		for _, md := range props.CSVMetadatas {
			withCSVMetadata++
			if md.DisplayName == "" || md.Provider.Name == "" || md.Annotations["description"] == "" ||
				len(md.Keywords) == 0 || len(md.Links) == 0 || len(md.Maintainers) == 0 || md.Maturity == "" {
				t.Errorf("bundle %s: incomplete olm.csv.metadata", b.Name)
			}
		}
		if len(b.RelatedImages) == 0 {
			t.Errorf("bundle %s: no relatedImages", b.Name)
		}
	}

	probe := property.GVK{Group: "observability.example.com", Version: "v1", Kind: "ServiceProbe"}
	if got := providers[probe]; len(got) != 2 {
		t.Errorf("providers of %v: got %v, want aurora-cache and lighthouse-metrics", probe, got)
	}
	backup := property.GVK{Group: "backup.example.com", Version: "v1", Kind: "BackupSchedule"}
	if got := providers[backup]; len(got) != 2 {
		t.Errorf("providers of %v: got %v, want quarry-db and tidewater-backup", backup, got)
	}
	coreGroup := false
	for g := range providers {
		if g.Group == "" {
			coreGroup = true
		}
	}
	if !coreGroup {
		t.Error("no olm.gvk in the core (empty) group")
	}
	if requiredGVKs == 0 || requiredPkgs == 0 {
		t.Errorf("olm.gvk.required: %d, olm.package.required: %d; want both", requiredGVKs, requiredPkgs)
	}
	if withObjects != 3 {
		t.Errorf("bundles with olm.bundle.object: got %d, want 3", withObjects)
	}
	if withCSVMetadata != len(cfg.Bundles)-1 {
		t.Errorf("bundles with olm.csv.metadata: got %d, want all but paper-lantern.v0.3.0", withCSVMetadata)
	}
}
