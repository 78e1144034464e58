package packageapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
)

// copyCatalog copies a test catalog into a directory the test may edit.
func copyCatalog(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// editCatalog rewrites the catalog file in dir: drop removes the blobs
// whose line contains any of its strings, add appends blobs.
func editCatalog(t *testing.T, dir string, drop []string, add ...string) {
	t.Helper()
	path := filepath.Join(dir, "catalog.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !slices.ContainsFunc(drop, func(s string) bool { return strings.Contains(line, s) }) {
			out = append(out, line)
		}
	}
	out = append(out, add...)
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newPackage is a package of one bundle that describes itself.
func newPackage(name, version string) []string {
	return []string{
		fmt.Sprintf(`{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`, name),
		fmt.Sprintf(`{"schema":"olm.channel","package":%q,"name":"stable","entries":[{"name":"%s.v%s"}]}`, name, name, version),
		fmt.Sprintf(`{"schema":"olm.bundle","package":%q,"name":"%s.v%s","image":"quay.io/example/%s:%s","properties":[`+
			`{"type":"olm.package","value":{"packageName":%q,"version":%q}},`+
			`{"type":"olm.csv.metadata","value":{"displayName":%q,"provider":{"name":"Example"}}}]}`,
			name, name, version, name, version, name, version, name),
	}
}

// watchFrom starts a watch of packagemanifests in testNamespace from
// resourceVersion rv with the given label selector.
func (e *env) watchFrom(t *testing.T, rv, selector string) (watch.Interface, error) {
	t.Helper()
	opts := &metav1.ListOptions{Watch: true, ResourceVersion: rv, LabelSelector: selector}
	return e.client(t, e.reader).Get().Namespace(testNamespace).Resource("packagemanifests").
		VersionedParams(opts, metav1.ParameterCodec).Timeout(time.Minute).Watch(context.Background())
}

// collect reads events until want of them arrived, then for quiet more
// to catch any that should not come.
func collect(t *testing.T, w watch.Interface, want int, quiet time.Duration) []watch.Event {
	t.Helper()
	var got []watch.Event
	deadline := time.After(20 * time.Second)
	for len(got) < want {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %d events, want %d", len(got), want)
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatalf("%d events within 20s, want %d: %v", len(got), want, describeEvents(got))
		}
	}
	extra := time.After(quiet)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-extra:
			return got
		}
	}
}

func describeEvents(evs []watch.Event) []string {
	var out []string
	for _, ev := range evs {
		m, ok := ev.Object.(*pkgv1.PackageManifest)
		if !ok {
			out = append(out, fmt.Sprintf("%s %T", ev.Type, ev.Object))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s/%s@%s", ev.Type, m.Status.CatalogSource, m.Name, m.Namespace))
	}
	slices.Sort(out)
	return out
}

// TestWatchFollowsSwaps checks that a watch from a list's resourceVersion
// sees ADDED, MODIFIED and DELETED for exactly the packages a swap added,
// changed and removed, and DELETED for every package of a removed catalog,
// with increasing resourceVersions; and that resourceVersions the server
// cannot answer from get 410 Gone (too old) or 504 (too new).
func TestWatchFollowsSwaps(t *testing.T) {
	mainDir := copyCatalog(t, "testdata/main")
	cats := map[string]testCatalog{"main": {dir: mainDir}, "other": {dir: "testdata/other", priority: 5}}
	e := startEnv(t, cats)
	list := e.list(t, e.reader, testNamespace, nil)
	w, err := e.watchFrom(t, list.ResourceVersion, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// alpha-op gains a bundle, delta-op goes, zeta-op comes; beta-op and
	// the other catalog stay as they are.
	editCatalog(t, mainDir, []string{`"delta-op`},
		`{"schema":"olm.bundle","package":"alpha-op","name":"alpha-op.v1.3.0","image":"quay.io/example/alpha-op:1.3.0","properties":[{"type":"olm.package","value":{"packageName":"alpha-op","version":"1.3.0"}},{"type":"olm.csv.metadata","value":{"displayName":"Alpha","provider":{"name":"Example, Inc."}}}]}`,
		`{"schema":"olm.channel","package":"alpha-op","name":"fast","entries":[{"name":"alpha-op.v1.3.0"}]}`)
	editCatalog(t, mainDir, nil, newPackage("zeta-op", "0.0.1")...)
	e.index(t, "main", cats["main"])
	got := collect(t, w, 3, time.Second)
	want := []string{"ADDED main/zeta-op@team", "DELETED main/delta-op@team", "MODIFIED main/alpha-op@team"}
	if d := describeEvents(got); !slices.Equal(d, want) {
		t.Errorf("events of the swap: %v, want %v", d, want)
	}
	last := checkVersions(t, list.ResourceVersion, got)

	if err := e.store.Remove("other"); err != nil {
		t.Fatal(err)
	}
	got = collect(t, w, 1, time.Second)
	if d := describeEvents(got); !slices.Equal(d, []string{"DELETED other/alpha-op@team"}) {
		t.Errorf("events of the removal: %v, want the other catalog's alpha-op deleted", d)
	}
	last = checkVersions(t, last, got)

	t.Run("resume from a resourceVersion", func(t *testing.T) {
		w, err := e.watchFrom(t, list.ResourceVersion, "catalog=main")
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		got := collect(t, w, 3, 500*time.Millisecond)
		if d := describeEvents(got); !slices.Equal(d, want) {
			t.Errorf("replayed %v, want %v", d, want)
		}
	})
	t.Run("from 0: the current state first", func(t *testing.T) {
		w, err := e.watchFrom(t, "0", "")
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		got := collect(t, w, 3, 500*time.Millisecond)
		if d := describeEvents(got); !slices.Equal(d, []string{"ADDED main/alpha-op@team", "ADDED main/beta-op@team", "ADDED main/zeta-op@team"}) {
			t.Errorf("got %v, want every current package ADDED", d)
		}
	})
	for _, tc := range []struct {
		name, rv string
		status   int
	}{
		{"too old", "1", http.StatusGone},
		{"too new", strconv.FormatUint(mustUint(t, last)+1000, 10), http.StatusGatewayTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := e.watchFrom(t, tc.rv, "")
			if err == nil {
				// Some errors arrive as the watch's first event.
				ev := <-w.ResultChan()
				w.Stop()
				if st, ok := ev.Object.(*metav1.Status); ok && ev.Type == watch.Error && int(st.Code) == tc.status {
					return
				}
				t.Fatalf("watch from %s: %v %v, want status %d", tc.rv, ev.Type, ev.Object, tc.status)
			}
			if statusOf(err) != tc.status {
				t.Errorf("watch from %s: %v, want status %d", tc.rv, err, tc.status)
			}
		})
	}
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkVersions checks that events carry increasing resourceVersions
// above from, and returns the last.
func checkVersions(t *testing.T, from string, evs []watch.Event) string {
	t.Helper()
	prev := mustUint(t, from)
	for _, ev := range evs {
		m := ev.Object.(*pkgv1.PackageManifest)
		rv := mustUint(t, m.ResourceVersion)
		if rv <= prev {
			t.Errorf("%s %s: resourceVersion %d after %d", ev.Type, m.Name, rv, prev)
		}
		prev = rv
	}
	return strconv.FormatUint(prev, 10)
}

// TestInformerFollowsSwaps runs client-go's informer (list, then watch from
// the list's resourceVersion, as controllers and the console's backends
// do) and checks that its store follows a swap.
func TestInformerFollowsSwaps(t *testing.T) {
	mainDir := copyCatalog(t, "testdata/main")
	cats := map[string]testCatalog{"main": {dir: mainDir}}
	e := startEnv(t, cats)
	rc := e.client(t, e.reader)
	lw := toolscache.NewFilteredListWatchFromClient(rc, "packagemanifests", testNamespace, func(*metav1.ListOptions) {})
	inf := toolscache.NewSharedIndexInformer(lw, &pkgv1.PackageManifest{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.Run(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	names := func() []string {
		var out []string
		for _, o := range inf.GetStore().List() {
			m := o.(runtime.Object).(*pkgv1.PackageManifest)
			out = append(out, m.Name+"="+m.Status.Channels[0].CurrentCSV)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(), []string{"alpha-op=alpha-op.v1.2.0-rc.1", "beta-op=beta-op.v2.0.0", "delta-op=delta-op.v0.2.0"}; !slices.Equal(got, want) {
		t.Fatalf("informer holds %v, want %v", got, want)
	}
	editCatalog(t, mainDir, []string{`"beta-op`}, newPackage("zeta-op", "0.0.1")...)
	e.index(t, "main", cats["main"])
	want := []string{"alpha-op=alpha-op.v1.2.0-rc.1", "delta-op=delta-op.v0.2.0", "zeta-op=zeta-op.v0.0.1"}
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Equal(names(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("informer holds %v, want %v", names(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
