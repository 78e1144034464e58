package packageapi

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/store"
)

// TestPackKeepsManifests checks that a packed manifest is field for field
// the manifest it copies, nil and empty apart, and that what a manifest
// shared with itself (a head's description, shared by the channels that
// lead to it) stays shared.
func TestPackKeepsManifests(t *testing.T) {
	desc := pkgv1.CSVDescription{
		DisplayName: "Aurora", LongDescription: "a long description",
		Annotations: map[string]string{"alm-examples": "[]", "capabilities": "Basic Install"},
		Keywords:    []string{"cache", "aurora"},
		Provider:    pkgv1.AppLink{Name: "Example", URL: "https://example.com"},
		CustomResourceDefinitions: pkgv1.CustomResourceDefinitions{
			Owned: []pkgv1.CRDDescription{{Name: "auroras.example.com", Version: "v1", Kind: "Aurora"}},
		},
		InstallModes: []pkgv1.InstallMode{{Type: "AllNamespaces", Supported: true}},
	}
	manifest := func(name string, chans ...pkgv1.PackageChannel) *pkgv1.PackageManifest {
		return &pkgv1.PackageManifest{
			TypeMeta: metav1.TypeMeta{Kind: "PackageManifest", APIVersion: pkgv1.SchemeGroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7",
				CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
				Labels:            map[string]string{"catalog": "demo", "catalog-namespace": "", "provider": "Example"}},
			Status: pkgv1.PackageManifestStatus{CatalogSource: "demo", PackageName: name, DefaultChannel: "stable",
				Channels: chans, Deprecation: &pkgv1.Deprecation{Message: "gone"}},
		}
	}
	cases := []struct {
		name  string
		ms    []*pkgv1.PackageManifest
		share bool // the first manifest's two channels share the description
	}{
		{"channels sharing a head", []*pkgv1.PackageManifest{manifest("aurora",
			pkgv1.PackageChannel{Name: "fast", CurrentCSV: "aurora.v1", CurrentCSVDesc: desc, Entries: []pkgv1.ChannelEntry{{Name: "aurora.v1", Version: "1.0.0"}}},
			pkgv1.PackageChannel{Name: "stable", CurrentCSV: "aurora.v1", CurrentCSVDesc: desc, Entries: []pkgv1.ChannelEntry{}},
		)}, true},
		{"nil, empty and zero values", []*pkgv1.PackageManifest{
			manifest("empty", pkgv1.PackageChannel{Name: "stable", CurrentCSVDesc: pkgv1.CSVDescription{Keywords: []string{}, Annotations: map[string]string{}}}),
			manifest("nil", pkgv1.PackageChannel{Name: "stable"}),
			{},
		}, false},
		{"two manifests with the same strings", []*pkgv1.PackageManifest{
			manifest("one", pkgv1.PackageChannel{Name: "stable", CurrentCSVDesc: desc}),
			manifest("two", pkgv1.PackageChannel{Name: "stable", CurrentCSVDesc: desc}),
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			packed := slices.Clone(tc.ms)
			pack(packed)
			for i := range tc.ms {
				if packed[i] == tc.ms[i] {
					t.Errorf("manifest %d: not copied", i)
				}
				if !reflect.DeepEqual(packed[i], tc.ms[i]) {
					t.Errorf("manifest %d packed:\n%+v\nwant\n%+v", i, packed[i], tc.ms[i])
				}
			}
			if tc.share {
				a, b := packed[0].Status.Channels[0].CurrentCSVDesc, packed[0].Status.Channels[1].CurrentCSVDesc
				if unsafe.SliceData(a.Keywords) != unsafe.SliceData(b.Keywords) ||
					reflect.ValueOf(a.Annotations).UnsafePointer() != reflect.ValueOf(b.Annotations).UnsafePointer() ||
					unsafe.SliceData(a.CustomResourceDefinitions.Owned) != unsafe.SliceData(b.CustomResourceDefinitions.Owned) {
					t.Error("the channels' descriptions no longer share their slices and maps")
				}
			}
		})
	}
}

// TestCachePacksManifests checks that the manifests a sync converts are
// held packed: every string of them, each distinct one once, in a single
// buffer exactly their size, rather than strings of their own among the
// conversion's garbage.
func TestCachePacksManifests(t *testing.T) {
	st, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	table := catalogs.NewTable()
	content, err := catalogdir.Read(context.Background(), "testdata/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	table.Put(catalogs.Catalog{Name: "main", Source: "testdata/main", Labels: map[string]string{"tier": "gold"}})
	if _, _, _, err := st.Update(context.Background(), "main", content); err != nil {
		t.Fatal(err)
	}
	c := newCache(st, table, 1, testr.New(t))
	c.mark("main")
	c.syncDirty(context.Background())
	entries, _ := c.snapshot()
	if len(entries) == 0 {
		t.Fatal("no manifest")
	}

	// Every string the manifests hold, by content, with where each copy
	// of it is. The resourceVersion is set after packing, by the sync.
	where := map[string]map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			if s := v.String(); s != "" {
				if where[s] == nil {
					where[s] = map[uintptr]bool{}
				}
				where[s][uintptr(unsafe.Pointer(unsafe.StringData(s)))] = true
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Key())
				walk(it.Value())
			}
		case reflect.Struct:
			if !opaque(v.Type()) {
				for i := range v.NumField() {
					walk(v.Field(i))
				}
			}
		}
	}
	for _, e := range entries {
		m := *e.obj
		m.ResourceVersion = ""
		walk(reflect.ValueOf(&m))
	}
	var lo, hi uintptr
	size := 0
	for s, at := range where {
		if len(at) != 1 {
			t.Errorf("%q held %d times, want once", s, len(at))
		}
		for p := range at {
			if lo == 0 || p < lo {
				lo = p
			}
			hi = max(hi, p+uintptr(len(s)))
		}
		size += len(s)
	}
	if span := int(hi - lo); span != size {
		t.Errorf("the manifests' %d distinct strings (%d bytes) span %d bytes of memory: not one buffer of them", len(where), size, span)
	}
}
