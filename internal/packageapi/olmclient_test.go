package packageapi

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
)

// olmClient runs hack/olmclient, OLM v0's generated PackageManifest
// clientset built unchanged from the module proxy, against the server,
// and decodes what it printed into out.
func (e *env) olmClient(t *testing.T, out any, args ...string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "bin", "olm-packagemanifests"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is absent: `make %s` builds it (make test does)", path, "bin/olm-packagemanifests")
	}
	cmd := exec.Command(path, append([]string{"--server", e.url, "--token", e.reader, "--namespace", testNamespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("olm-packagemanifests %v: %v: %s", args, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("olm-packagemanifests %v printed %s: %v", args, stdout.String(), err)
	}
}

// TestOLMClient lists and gets through OLM v0's own clientset: what it
// decodes into packageserver's Go types is what the API serves.
func TestOLMClient(t *testing.T) {
	e := startEnv(t, map[string]testCatalog{
		"main":  {dir: "testdata/main"},
		"other": {dir: "testdata/other", priority: 5},
	})
	var list pkgv1.PackageManifestList
	e.olmClient(t, &list, "list")
	want := e.list(t, e.reader, testNamespace, nil)
	if len(list.Items) != len(want.Items) || len(want.Items) == 0 {
		t.Fatalf("OLM client listed %d items, want %d", len(list.Items), len(want.Items))
	}
	for i := range list.Items {
		if g, w := jsonOf(t, list.Items[i]), jsonOf(t, want.Items[i]); g != w {
			t.Errorf("item %d:\n got: %s\nwant: %s", i, g, w)
		}
	}
	var selected pkgv1.PackageManifestList
	e.olmClient(t, &selected, "list", "catalog=other")
	if len(selected.Items) != 1 || selected.Items[0].Status.CatalogSource != "other" {
		t.Errorf("list -l catalog=other: %s", jsonOf(t, selected))
	}
	var one pkgv1.PackageManifest
	e.olmClient(t, &one, "get", "delta-op")
	// A typed client drops the kind and apiVersion of what it decodes.
	wantOne := want.Items[3]
	wantOne.TypeMeta = one.TypeMeta
	if g, w := jsonOf(t, one), jsonOf(t, wantOne); g != w || one.Name != "delta-op" {
		t.Errorf("get delta-op:\n got: %s\nwant: %s", g, w)
	}
}
