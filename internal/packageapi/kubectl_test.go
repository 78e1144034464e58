package packageapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
)

// kubectlPath is the kubectl `make envtest-bins` builds beside
// kube-apiserver, at the same version.
func kubectlPath(t *testing.T) string {
	t.Helper()
	path := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(path); err != nil || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skipf("no kubectl in KUBEBUILDER_ASSETS (%s): run `make envtest-bins`, which builds it beside kube-apiserver", path)
	}
	return path
}

// kubectl runs the real kubectl against the package API server with a
// user's token, in an empty home (no kubeconfig, no cache).
func (e *env) kubectl(t *testing.T, token string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectlPath(t), append([]string{"--server", e.url, "--token", token, "--insecure-skip-tls-verify",
		"--cache-dir", t.TempDir()}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

// TestKubectl runs kubectl get (the table packageserver prints, a label
// selector, YAML), describe and a denied user against the server.
func TestKubectl(t *testing.T) {
	kubectlPath(t)
	e := startEnv(t, map[string]testCatalog{
		"main":  {dir: "testdata/main"},
		"other": {dir: "testdata/other", priority: 5},
	})
	t.Run("get prints packageserver's columns", func(t *testing.T) {
		out, err := e.kubectl(t, e.reader, "get", "packagemanifests", "-n", testNamespace)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME CATALOG AGE" {
			t.Errorf("header %q, want NAME CATALOG AGE", lines[0])
		}
		var rows []string
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			rows = append(rows, f[0]+" "+f[1])
		}
		want := "alpha-op other,alpha-op main,beta-op main,delta-op main"
		if strings.Join(rows, ",") != want {
			t.Errorf("rows %q, want %q\n%s", strings.Join(rows, ","), want, out)
		}
	})
	t.Run("get -l catalog= -o yaml", func(t *testing.T) {
		out, err := e.kubectl(t, e.reader, "get", "packagemanifests", "-n", testNamespace, "-l", "catalog=main", "-o", "yaml")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var got pkgv1.PackageManifestList
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		want := e.list(t, e.reader, testNamespace, map[string]string{"labelSelector": "catalog=main"})
		if len(got.Items) != len(want.Items) {
			t.Fatalf("%d items, want %d", len(got.Items), len(want.Items))
		}
		for i := range got.Items {
			if g, w := jsonOf(t, got.Items[i]), jsonOf(t, want.Items[i]); g != w {
				t.Errorf("item %d:\n got: %s\nwant: %s", i, g, w)
			}
		}
	})
	t.Run("get one -o yaml", func(t *testing.T) {
		out, err := e.kubectl(t, e.reader, "get", "packagemanifest", "beta-op", "-n", testNamespace, "-o", "yaml")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var got pkgv1.PackageManifest
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status.PackageName != "beta-op" || got.Status.Deprecation == nil || len(got.Status.Channels) != 1 ||
			got.Status.Channels[0].CurrentCSVDesc.DisplayName != "Beta" {
			t.Errorf("got %s", jsonOf(t, got))
		}
	})
	t.Run("describe", func(t *testing.T) {
		out, err := e.kubectl(t, e.reader, "describe", "packagemanifest", "beta-op", "-n", testNamespace)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		words := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{"Name: beta-op", "Namespace: team", "Catalog Source: main", "Current CSV: beta-op.v2.0.0", "Message: beta-op is replaced by gamma"} {
			if !strings.Contains(words, want) {
				t.Errorf("describe lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("denied", func(t *testing.T) {
		out, err := e.kubectl(t, e.outsder, "get", "packagemanifests", "-n", testNamespace)
		if err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("kubectl as a user without RBAC: %v: %s, want Forbidden", err, out)
		}
	})
}
