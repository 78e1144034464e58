package catalogcli_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// TestChangesOffline edits a catalog directory between two offline calls
// and checks that `changes --since` names, in every output format, the
// packages an independent diff of the two versions finds.
func TestChangesOffline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, "--dir", dir)
	list := decode[client.CatalogList](t, c, "catalogs")
	if len(list.Items) != 1 || list.Items[0].ResolvedDigest == "" {
		t.Fatalf("catalogs = %+v", list)
	}
	since := list.Items[0].ResolvedDigest

	before := fbcfacts.Load(t, dir)
	blobs, _ := fbcchange.Edit(t, before)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	fbcchange.Write(t, dir, blobs, fbcchange.PerPackage)
	want := fbcchange.Diff(t, before, fbcfacts.Load(t, dir))
	var wantChanged []string
	for pkg := range want.Changed {
		wantChanged = append(wantChanged, pkg)
	}
	slices.Sort(wantChanged)
	all := slices.Sorted(slices.Values(append(append(slices.Clone(want.Added), want.Removed...), wantChanged...)))

	got := decode[client.Changes](t, c, "changes", "--since", since)
	var gotChanged []string
	for _, p := range got.Changed {
		gotChanged = append(gotChanged, p.Package)
		w := want.Changed[p.Package]
		if !p.Detailed || !slices.Equal(p.BundlesAdded, nonNil(w.BundlesAdded)) || !slices.Equal(p.ChannelsRemoved, nonNil(w.ChannelsRemoved)) {
			t.Errorf("%s: %+v, want %+v", p.Package, p, w)
		}
	}
	if got.From != since || !slices.Equal(got.Added, want.Added) || !slices.Equal(got.Removed, want.Removed) || !slices.Equal(gotChanged, wantChanged) {
		t.Errorf("changes = from %s added %v removed %v changed %v, want from %s %v %v %v",
			got.From, got.Added, got.Removed, gotChanged, since, want.Added, want.Removed, wantChanged)
	}
	var fromYAML client.Changes
	if err := yaml.Unmarshal([]byte(c.ok(t, "changes", "--since", since, "-o", "yaml")), &fromYAML); err != nil || !reflect.DeepEqual(fromYAML, got) {
		t.Errorf("-o yaml = %+v (%v), want what -o json says", fromYAML, err)
	}
	if names := lines(c.ok(t, "changes", "--since", since, "-o", "name")); !slices.Equal(names, all) {
		t.Errorf("-o name = %v, want %v", names, all)
	}
	table := strings.Split(strings.TrimSpace(c.ok(t, "changes", "--since", since)), "\n")
	if len(table) != len(all)+1 || !strings.HasPrefix(table[0], "PACKAGE") {
		t.Fatalf("table:\n%s", strings.Join(table, "\n"))
	}
	for i, row := range table[1:] {
		kind := "changed"
		switch {
		case slices.Contains(want.Added, all[i]):
			kind = "added"
		case slices.Contains(want.Removed, all[i]):
			kind = "removed"
		}
		if f := strings.Fields(row); len(f) < 2 || f[0] != all[i] || f[1] != kind {
			t.Errorf("table row %q, want %s %s", row, all[i], kind)
		}
	}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"changes"}, `"since" not set`},
		{[]string{"changes", "--since", "sha256:never"}, "oldest version known is"},
	} {
		if _, errOut, ok := c.run(t, tc.args...); ok || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("%v: ok=%v, stderr %q, want an error saying %q", tc.args, ok, errOut, tc.wantErr)
		}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
