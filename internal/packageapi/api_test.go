package packageapi

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
)

// TestManifestsMatchCatalogs compares every field of every PackageManifest
// listed with what packageserver would serve for the catalogs' content,
// computed independently (expectedManifests): the test catalogs (two
// catalogs sharing a package, CSVs as olm.csv.metadata and as bundle
// objects, deprecations, a default channel without a describable head, a
// package without any) always, and the published community catalog where
// it is present.
func TestManifestsMatchCatalogs(t *testing.T) {
	cases := []struct {
		name string
		cats func(t *testing.T) map[string]testCatalog
	}{
		{"testdata", func(*testing.T) map[string]testCatalog {
			return map[string]testCatalog{
				"main":  {dir: "testdata/main", labels: map[string]string{"tier": "gold"}},
				"other": {dir: "testdata/other", priority: 5},
			}
		}},
		{"community-v4.20", func(t *testing.T) map[string]testCatalog {
			return map[string]testCatalog{"community": {dir: sharedCatalog(t)}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cats := tc.cats(t)
			e := startEnv(t, cats)
			want := map[string]pkgv1.PackageManifest{}
			for name, c := range cats {
				for pkg, m := range expectedManifests(t, c.dir, name, c.labels) {
					want[name+"/"+pkg] = m
				}
			}
			list := e.list(t, e.reader, testNamespace, nil)
			if list.ResourceVersion == "" {
				t.Error("list has no resourceVersion")
			}
			got := map[string]pkgv1.PackageManifest{}
			for _, m := range list.Items {
				if m.Namespace != testNamespace {
					t.Errorf("%s: namespace %q, want the request's %q", m.Name, m.Namespace, testNamespace)
				}
				if m.ResourceVersion == "" || m.CreationTimestamp.IsZero() {
					t.Errorf("%s: resourceVersion %q, creationTimestamp %v: want both set", m.Name, m.ResourceVersion, m.CreationTimestamp)
				}
				m.Namespace, m.ResourceVersion, m.CreationTimestamp = "", "", metav1.Time{}
				got[m.Status.CatalogSource+"/"+m.Name] = m
			}
			if len(got) != len(list.Items) {
				t.Errorf("list has %d items for %d catalog/package pairs", len(list.Items), len(got))
			}
			for _, key := range union(got, want) {
				g, w := jsonOf(t, got[key]), jsonOf(t, want[key])
				if g != w {
					t.Errorf("%s:\n got: %s\nwant: %s", key, g, w)
				}
			}
			if len(want) == 0 {
				t.Fatal("the catalogs have no package to compare")
			}
		})
	}
}

func union[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestQueries checks the answers that depend on the request: get's choice
// among catalogs, label and field selectors, namespaces, and the 403 of a
// user whose RBAC does not allow reading.
func TestQueries(t *testing.T) {
	e := startEnv(t, map[string]testCatalog{
		"main":  {dir: "testdata/main", priority: 0},
		"other": {dir: "testdata/other", priority: 5},
	})
	names := func(l *pkgv1.PackageManifestList) []string {
		var out []string
		for _, m := range l.Items {
			out = append(out, m.Status.CatalogSource+"/"+m.Name+"@"+m.Namespace)
		}
		return out
	}
	listCases := []struct {
		name      string
		namespace string
		params    map[string]string
		want      []string
	}{
		{"all in a namespace", testNamespace, nil,
			[]string{"other/alpha-op@team", "main/alpha-op@team", "main/beta-op@team", "main/delta-op@team"}},
		{"across namespaces, in the manager's", "", nil,
			[]string{"other/alpha-op@catalogd-system", "main/alpha-op@catalogd-system", "main/beta-op@catalogd-system", "main/delta-op@catalogd-system"}},
		{"by catalog label", testNamespace, map[string]string{"labelSelector": "catalog=main"},
			[]string{"main/alpha-op@team", "main/beta-op@team", "main/delta-op@team"}},
		{"by a head's CSV label", "default", map[string]string{"labelSelector": "operatorframework.io/arch.arm64=supported"},
			[]string{"main/alpha-op@default"}},
		{"by name: every catalog's", testNamespace, map[string]string{"fieldSelector": "metadata.name=alpha-op"},
			[]string{"other/alpha-op@team", "main/alpha-op@team"}},
		{"by name and label", testNamespace, map[string]string{"fieldSelector": "metadata.name=alpha-op", "labelSelector": "catalog=main"},
			[]string{"main/alpha-op@team"}},
		{"by namespace field", testNamespace, map[string]string{"fieldSelector": "metadata.namespace=elsewhere"}, nil},
		{"by a name nobody has", testNamespace, map[string]string{"fieldSelector": "metadata.name=nothing"}, nil},
	}
	for _, tc := range listCases {
		t.Run("list "+tc.name, func(t *testing.T) {
			if got := names(e.list(t, e.reader, tc.namespace, tc.params)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	getCases := []struct {
		name, pkg   string
		token       string
		wantCatalog string
		wantStatus  int
	}{
		{"the higher priority catalog answers", "alpha-op", e.reader, "other", http.StatusOK},
		{"a package of one catalog", "beta-op", e.reader, "main", http.StatusOK},
		{"a package without a describable head", "epsilon-op", e.reader, "", http.StatusNotFound},
		{"an unknown package", "nothing", e.reader, "", http.StatusNotFound},
		{"a user without RBAC", "alpha-op", e.outsder, "", http.StatusForbidden},
		{"anonymous", "alpha-op", "", "", http.StatusForbidden},
	}
	for _, tc := range getCases {
		t.Run("get "+tc.name, func(t *testing.T) {
			var m pkgv1.PackageManifest
			err := e.client(t, tc.token).Get().Namespace(testNamespace).Resource("packagemanifests").Name(tc.pkg).Do(context.Background()).Into(&m)
			if status := statusOf(err); status != tc.wantStatus {
				t.Fatalf("status %d (%v), want %d", status, err, tc.wantStatus)
			}
			if err == nil && (m.Status.CatalogSource != tc.wantCatalog || m.Namespace != testNamespace) {
				t.Errorf("answered from catalog %q in namespace %q, want %q in %q", m.Status.CatalogSource, m.Namespace, tc.wantCatalog, testNamespace)
			}
		})
	}

	t.Run("list by a user without RBAC", func(t *testing.T) {
		err := e.client(t, e.outsder).Get().Namespace(testNamespace).Resource("packagemanifests").Do(context.Background()).Error()
		if status := statusOf(err); status != http.StatusForbidden {
			t.Errorf("status %d (%v), want 403", status, err)
		}
	})
	t.Run("list by an unsupported field", func(t *testing.T) {
		err := e.client(t, e.reader).Get().Namespace(testNamespace).Resource("packagemanifests").Param("fieldSelector", "status.packageName=alpha-op").Do(context.Background()).Error()
		if status := statusOf(err); status != http.StatusBadRequest || !strings.Contains(err.Error(), "status.packageName") {
			t.Errorf("status %d (%v), want 400 naming the field", status, err)
		}
	})
}

func statusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return int(se.Status().Code)
	}
	return -1
}

// TestIcon checks that the icon subresource serves the package icon of
// the catalog a get answers from, as the catalog gave it, with its media
// type; a package without an icon gets the default SVG (defaulticon.svg),
// as packageserver serves one of its own, and a package that does not
// exist 404.
func TestIcon(t *testing.T) {
	e := startEnv(t, map[string]testCatalog{"main": {dir: "testdata/main"}})
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS("testdata/main"))
	if err != nil {
		t.Fatal(err)
	}
	fallback, err := os.ReadFile("defaulticon.svg")
	if err != nil {
		t.Fatal(err)
	}
	var svg struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(fallback, &svg); err != nil || svg.XMLName.Local != "svg" {
		t.Fatalf("defaulticon.svg: root %q (%v), want an svg document", svg.XMLName.Local, err)
	}
	type want struct {
		status    int
		body      []byte
		mediaType string
	}
	tests := map[string]want{"no-such-op": {status: http.StatusNotFound}}
	// The packages the API serves (TestManifestsMatchCatalogs checks
	// which): one without a describable channel has no manifest, so no
	// icon either.
	served := map[string]bool{}
	for _, m := range e.list(t, e.reader, testNamespace, nil).Items {
		served[m.Name] = true
	}
	with, without := 0, 0
	for _, p := range cfg.Packages {
		switch {
		case !served[p.Name]:
			tests[p.Name] = want{status: http.StatusNotFound}
		case p.Icon == nil:
			tests[p.Name] = want{http.StatusOK, fallback, "image/svg+xml"}
			without++
		default:
			tests[p.Name] = want{http.StatusOK, p.Icon.Data, p.Icon.MediaType}
			with++
		}
	}
	if with == 0 || without == 0 {
		t.Fatalf("testdata/main serves %d packages with an icon and %d without: want both kinds", with, without)
	}
	for pkg, w := range tests {
		t.Run(pkg, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, e.url+"/apis/packages.operators.coreos.com/v1/namespaces/team/packagemanifests/"+pkg+"/icon", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+e.reader)
			resp, err := insecureClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != w.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, w.status)
			}
			if w.status != http.StatusOK {
				return
			}
			if !bytes.Equal(body, w.body) {
				t.Errorf("icon %q, want %q", body, w.body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != w.mediaType {
				t.Errorf("Content-Type %q, want %q", ct, w.mediaType)
			}
			// The generated client reads it too.
			got, err := e.client(t, e.reader).Get().Namespace(testNamespace).Resource("packagemanifests").Name(pkg).SubResource("icon").DoRaw(context.Background())
			if err != nil || !bytes.Equal(got, w.body) {
				t.Errorf("through the REST client: %q, %v; want %q", got, err, w.body)
			}
		})
	}
}
