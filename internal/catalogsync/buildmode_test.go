package catalogsync_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/catalogd/catalogd/internal/catalogsync"
)

// TestBuildMetricsByMode: each build is counted under the mode it ran in
// (full for the first index, incremental after an edit of one package), a
// failed build under the mode it was tried in, and a sync that builds
// nothing is not counted.
func TestBuildMetricsByMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e := newEnv(t, catalogsync.Options{Metrics: reg})
	e.svc.Set(catalogsync.Spec{Name: "c", Fetcher: catalogsync.DirFetcher{Path: dir}})
	want := map[string]uint64{}
	steps := []struct {
		name string
		edit func(t *testing.T)
		// fails says the sync fails to build.
		fails bool
		// mode is the mode the step's build runs in, "" when it builds
		// nothing: full with no live index, incremental once there is one
		// (a failed build is counted under the mode it was tried in).
		mode string
	}{
		{name: "first index", edit: func(*testing.T) {}, mode: "full"},
		{name: "unchanged", edit: func(*testing.T) {}},
		{name: "package added", edit: func(t *testing.T) {
			writeFileIn(t, filepath.Join(dir, "extra", "catalog.json"), extraCatalog)
		}, mode: "incremental"},
		{name: "broken", edit: func(t *testing.T) {
			writeFileIn(t, filepath.Join(dir, "extra", "catalog.json"), `{"schema":"olm.package","name":`)
		}, fails: true, mode: "incremental"},
	}
	for _, step := range steps {
		step.edit(t)
		_, err := e.svc.Sync(context.Background(), "c", nil)
		if (err != nil) != step.fails {
			t.Fatalf("%s: sync error %v; want failure %v", step.name, err, step.fails)
		}
		if step.mode != "" {
			want[step.mode]++
		}
		if got := buildsByMode(t, reg); !maps.Equal(got, want) {
			t.Errorf("%s: builds by mode %v; want %v", step.name, got, want)
		}
	}
}

// extraCatalog is a small valid package to add to a catalog.
const extraCatalog = `{"schema":"olm.package","name":"extra","defaultChannel":"stable"}
{"schema":"olm.channel","package":"extra","name":"stable","entries":[{"name":"extra.v1.0.0"}]}
{"schema":"olm.bundle","package":"extra","name":"extra.v1.0.0","image":"example.com/extra:1.0.0",
 "properties":[{"type":"olm.package","value":{"packageName":"extra","version":"1.0.0"}}]}
`

// buildsByMode is how many index builds the service has counted, by mode.
func buildsByMode(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "catalogd_index_build_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "mode" {
					out[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}

func writeFileIn(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
