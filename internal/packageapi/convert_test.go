package packageapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/catalogd/catalogd/internal/query"
)

// TestToManifestSharesHeads checks that channels with the same head share
// one description of it (the cache keeps every manifest, so a package whose
// channels all lead to one bundle keeps its CSV's text once), and that
// channels with different heads each get their own.
func TestToManifestSharesHeads(t *testing.T) {
	head := func(name, version string) *query.BundleDetail {
		md, err := json.Marshal(map[string]any{
			"displayName": "Aurora", "description": "a long description of " + name,
			"annotations": map[string]string{"alm-examples": "[]"},
			"keywords":    []string{"cache"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return &query.BundleDetail{Name: name, Version: version, Properties: []query.Property{{Type: "olm.csv.metadata", Value: md}}}
	}
	one, other := head("aurora.v1.0.0", "1.0.0"), head("aurora.v2.0.0", "2.0.0")
	tests := []struct {
		name      string
		heads     [2]*query.BundleDetail
		wantShare bool
	}{
		{"one head, two channels", [2]*query.BundleDetail{one, one}, true},
		{"two heads", [2]*query.BundleDetail{one, other}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := packageData{
				Package: query.Package{Name: "aurora", DefaultChannel: "stable"},
				Channels: []channelData{
					{Summary: query.ChannelSummary{Name: "fast", Head: query.BundleRef{Name: tc.heads[0].Name}}, Head: tc.heads[0]},
					{Summary: query.ChannelSummary{Name: "stable", Head: query.BundleRef{Name: tc.heads[1].Name}}, Head: tc.heads[1]},
				},
			}
			m, ok := toManifest(catalogMeta{Name: "demo"}, d)
			if !ok || len(m.Status.Channels) != 2 {
				t.Fatalf("manifest %v (ok %v): want two channels", m, ok)
			}
			// Each channel is described by its own head.
			for i, ch := range m.Status.Channels {
				if want := tc.heads[i].Name; ch.CurrentCSV != want || !strings.HasSuffix(ch.CurrentCSVDesc.LongDescription, " of "+want) {
					t.Errorf("channel %s: head %s described as %q, want %s", ch.Name, ch.CurrentCSV, ch.CurrentCSVDesc.LongDescription, want)
				}
			}
			a, b := m.Status.Channels[0].CurrentCSVDesc, m.Status.Channels[1].CurrentCSVDesc
			shared := unsafe.StringData(a.LongDescription) == unsafe.StringData(b.LongDescription) &&
				reflect.ValueOf(a.Annotations).UnsafePointer() == reflect.ValueOf(b.Annotations).UnsafePointer() &&
				unsafe.SliceData(a.Keywords) == unsafe.SliceData(b.Keywords)
			if shared != tc.wantShare {
				t.Errorf("descriptions share their memory: %v, want %v", shared, tc.wantShare)
			}
		})
	}
}
