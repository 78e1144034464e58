package reconcile_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/reconcile"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/registrytest"
)

// testContentChangedEvent pushes an edited version of the demo under the
// tag a polled catalog follows, and reads from the API server the Event
// the swap records: it names the packages an independent diff of the two
// versions finds added, removed and changed.
func testContentChangedEvent(t *testing.T, e *env, demo *fbcfacts.Catalog) {
	tag := "catalogs/changes:latest"
	v1 := e.reg.PushCatalog(t, tag, demoDir, registrytest.PushOptions{})
	one := 1
	e.create(t, "changes", e.reg.Host+"/"+tag, func(cat *catalogdv1.ClusterCatalog) {
		cat.Spec.Source.Image.PollIntervalMinutes = &one
	})
	await.Until(t, "changes to serve v1", waitTimeout, func() error { return e.servingDigest(t, "changes", v1) })
	if n := len(contentEvents(t, e, "changes")); n != 0 {
		t.Errorf("%d content-change Events after the first index, want none: nothing changed", n)
	}

	blobs, _ := fbcchange.Edit(t, demo)
	edited := filepath.Join(t.TempDir(), "v2")
	fbcchange.Write(t, edited, blobs, fbcchange.PerPackage)
	want := fbcchange.Diff(t, demo, fbcfacts.Load(t, edited))
	names := append(slices.Clone(want.Added), want.Removed...)
	for pkg := range want.Changed {
		names = append(names, pkg)
	}
	slices.Sort(names)
	wantNote := fmt.Sprintf("%d packages changed (%d added, %d removed, %d changed): %s", len(names),
		len(want.Added), len(want.Removed), len(want.Changed), strings.Join(names, ", "))

	v2 := e.reg.PushCatalog(t, tag, edited, registrytest.PushOptions{})
	await.Until(t, "changes to serve v2", waitTimeout, func() error { return e.servingDigest(t, "changes", v2) })
	await.Until(t, "the content-change Event", waitTimeout, func() error {
		events := contentEvents(t, e, "changes")
		if len(events) != 1 {
			return fmt.Errorf("%d content-change Events, want 1", len(events))
		}
		ev := events[0]
		if ev.Note != wantNote || ev.Type != "Normal" || ev.Regarding.Kind != "ClusterCatalog" {
			return fmt.Errorf("Event %s %s %q regarding %s, want Normal %q regarding the ClusterCatalog", ev.Type, ev.Reason, ev.Note, ev.Regarding.Kind, wantNote)
		}
		return nil
	})
}

// contentEvents lists the content-change Events of a catalog; Events of a
// cluster-scoped object live in the default namespace.
func contentEvents(t *testing.T, e *env, catalog string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := e.c.List(context.Background(), &list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == catalog && ev.Reason == reconcile.ReasonContentChanged {
			out = append(out, ev)
		}
	}
	return out
}

// TestChangesMessage: the Event's note names the first packages in name
// order, counts the rest, and stays within the bound however long the
// names.
func TestChangesMessage(t *testing.T) {
	names := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%02d", prefix, i))
		}
		return out
	}
	changedOf := func(pkgs ...string) []query.PackageChange {
		var out []query.PackageChange
		for _, p := range pkgs {
			out = append(out, query.PackageChange{Package: p})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		changes query.Changes
		want    string
	}{
		{"none", query.Changes{}, ""},
		{"one", query.Changes{Changed: changedOf("etcd")}, "1 package changed (0 added, 0 removed, 1 changed): etcd"},
		{"mixed, in name order", query.Changes{Added: []string{"c"}, Removed: []string{"a"}, Changed: changedOf("b")},
			"3 packages changed (1 added, 1 removed, 1 changed): a, b, c"},
		{"past ten", query.Changes{Added: names("p", 12)},
			"12 packages changed (12 added, 0 removed, 0 changed): " + strings.Join(names("p", 10), ", ") + " and 2 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := reconcile.ChangesMessage(tc.changes)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("message = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
	long := query.Changes{Added: names(strings.Repeat("x", 250), 10)}
	if got, ok := reconcile.ChangesMessage(long); !ok || len(got) > 1000 || !strings.HasPrefix(got, "10 packages changed") {
		t.Errorf("message of long names: %d bytes: %q", len(got), got)
	}
}
