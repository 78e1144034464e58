package catalogcli_test

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/version"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// TestCommandLine checks what a user sees of the command line itself, as
// kubectl shows it: a mistyped command with its suggestion on lines of
// their own, -v N as kubectl's verbosity wherever it is given (6 logs each
// request), `version` and --version, and errors that name the flag at fault.
func TestCommandLine(t *testing.T) {
	c := targets(t)["server"]
	versionLine := "kubectl catalog version " + version.String() + "\n"
	for _, tc := range []struct {
		name       string
		args       []string
		wantOK     bool
		wantStdout string
		// wantStderr must be in stderr; an empty one means stderr is empty.
		wantStderr []string
	}{
		{"unknown command suggests one", []string{"packges"}, false, "",
			[]string{"error: unknown command \"packges\" for \"kubectl catalog\"\n\nDid you mean this?\n\tpackages\n"}},
		{"version", []string{"version"}, true, versionLine, nil},
		{"--version", []string{"--version"}, true, versionLine, nil},
		{"-v 6 after the command logs each request", []string{"catalogs", "-o", "name", "-v", "6"}, true, "demo\n",
			[]string{`verb="GET"`, `/catalogs"`, `status="200 OK"`}},
		{"-v 6 before the command logs each request", []string{"-v", "6", "catalogs", "-o", "name"}, true, "demo\n",
			[]string{`verb="GET"`, `/catalogs"`, `status="200 OK"`}},
		{"-v 0 logs nothing", []string{"catalogs", "-o", "name", "-v", "0"}, true, "demo\n", nil},
		{"-v wants a number", []string{"-v", "catalogs"}, false, "", []string{`"catalogs"`, "-v"}},
		{"a bad range names --range", []string{"versions", "aurora-cache", "--range", ">=1.2.0 <"}, false, "",
			[]string{`error: --range ">=1.2.0 <"`, "not a semver constraint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, ok := c.run(t, tc.args...)
			if ok != tc.wantOK || out != tc.wantStdout {
				t.Errorf("succeeded %v with stdout %q, want %v with %q (stderr %q)", ok, out, tc.wantOK, tc.wantStdout, errOut)
			}
			if tc.wantStderr == nil && errOut != "" {
				t.Errorf("stderr %q, want none", errOut)
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
		})
	}
}

// TestNoResourcesFound: an answer with nothing in it prints what kubectl
// get prints, on stderr, and succeeds; tools asking for JSON get the empty
// list itself.
func TestNoResourcesFound(t *testing.T) {
	c := targets(t)["server"]
	digest := decode[client.CatalogList](t, c, "catalogs").Items[0].ResolvedDigest
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"providers of an API nobody provides", []string{"providers", "Nothing.example.com/v1"}, "No resources found\n"},
		{"providers in one catalog", []string{"providers", "Nothing.example.com/v1", "-c", "demo"}, "No resources found in catalog demo.\n"},
		{"changes since the version served", []string{"changes", "--since", digest}, "No resources found in catalog demo.\n"},
		{"a search that matches nothing", []string{"packages", "--search", "zzzzzz"}, "No resources found in catalog demo.\n"},
		{"names of nothing", []string{"providers", "Nothing.example.com/v1", "-o", "name"}, "No resources found\n"},
		{"an empty table without headers", []string{"providers", "Nothing.example.com/v1", "--no-headers"}, "No resources found\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, ok := c.run(t, tc.args...)
			if !ok || out != "" || errOut != tc.wantStderr {
				t.Errorf("succeeded %v, stdout %q, stderr %q; want success, no stdout, stderr %q", ok, out, errOut, tc.wantStderr)
			}
		})
	}
	out, errOut, ok := c.run(t, "providers", "Nothing.example.com/v1", "-o", "json")
	if !ok || !strings.Contains(out, `"items": []`) || errOut != "" {
		t.Errorf("-o json: succeeded %v, stdout %q, stderr %q; want the empty list and no message", ok, out, errOut)
	}
}

// TestFailedBuildInDefaultTable: while a broken edit of a watched
// directory keeps the last good index serving, the default table of
// `catalogs` says that the last build failed, as kubectl's pod table shows
// restarts; -o wide says why.
func TestFailedBuildInDefaultTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	_, base := catalogdproc.Serve(t, catalogd, "--data-dir", t.TempDir(), "--catalog", "mine="+dir, "--watch")
	c := newCLI(t, "--server", base)
	if table := c.ok(t, "catalogs"); !strings.Contains(header(table), "LAST BUILD") || !strings.Contains(table, "Succeeded") {
		t.Errorf("before the broken edit:\n%s\nwant a LAST BUILD column saying Succeeded", table)
	}
	if err := os.WriteFile(filepath.Join(dir, "aurora-cache", "broken.json"), []byte("{\"schema\": "), 0o644); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the broken edit's build to fail", time.Minute, func() error {
		if cat := decode[client.CatalogList](t, c, "catalogs").Items[0]; cat.LastError == "" {
			return errors.New("no lastError yet")
		}
		return nil
	})
	table := c.ok(t, "catalogs")
	rows := strings.Split(strings.TrimSpace(table), "\n")
	if len(rows) != 2 || !strings.Contains(rows[1], "Serving") || !strings.Contains(rows[1], "Failed") {
		t.Errorf("after the broken edit:\n%s\nwant the catalog Serving with its last build Failed", table)
	}
	if wide := c.ok(t, "catalogs", "-o", "wide"); !strings.Contains(wide, "broken.json") {
		t.Errorf("-o wide:\n%s\ndoes not say which file broke the build", wide)
	}
}

// TestFailedCatalogInDefaultTable: a catalog whose content cannot index
// shows as Failed in the default table, beside one that serves; commands
// over every catalog answer from the one that serves, and one that names
// the Failed catalog says why it cannot answer.
func TestFailedCatalogInDefaultTable(t *testing.T) {
	const hint = "no olm.package, olm.channel or olm.bundle blob was found"
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "README.md"), []byte("# Notes\n\nNot a catalog: prose.\n- a list: item\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := catalogdproc.Serve(t, catalogd, "--data-dir", t.TempDir(), "--catalog", "demo="+demoDir, "--catalog", "docs="+docs)
	c := newCLI(t, "--server", base)

	states := map[string][2]string{} // name → STATE, LAST BUILD
	for _, row := range strings.Split(strings.TrimSpace(c.ok(t, "catalogs", "--no-headers")), "\n") {
		f := strings.Fields(row)
		if len(f) < 3 {
			t.Fatalf("row %q has too few columns", row)
		}
		states[f[0]] = [2]string{f[1], f[2]}
	}
	if want := map[string][2]string{"demo": {"Serving", "Succeeded"}, "docs": {"Failed", "Failed"}}; !maps.Equal(states, want) {
		t.Errorf("catalogs: STATE and LAST BUILD %v, want %v", states, want)
	}
	if got, want := lines(c.ok(t, "packages", "-o", "name")), sortedKeys(fbcfacts.Load(t, demoDir).Packages); !slices.Equal(got, want) {
		t.Errorf("packages of every catalog: %v, want demo's %v", got, want)
	}
	out, errOut, ok := c.run(t, "packages", "-c", "docs")
	if ok || out != "" || !strings.Contains(errOut, "failed to index") || !strings.Contains(errOut, hint) {
		t.Errorf("packages -c docs: succeeded %v, stdout %q, stderr %q; want a failure saying why", ok, out, errOut)
	}
}

func header(table string) string {
	first, _, _ := strings.Cut(table, "\n")
	return first
}

// TestCompletionThroughKubectl: the real kubectl completes `kubectl
// catalog ...` by running kubectl_complete-catalog with the words typed so
// far. Linked to kubectl-catalog, as the README says, it must answer as
// __complete does: a command, package names from the server, a flag's
// values. The kubectl is the one `make envtest-bins` builds.
func TestCompletionThroughKubectl(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); os.Getenv("KUBEBUILDER_ASSETS") == "" || err != nil {
		t.Skipf("no kubectl in KUBEBUILDER_ASSETS (%q): run `make unit`, or `make envtest-bins` and then KUBEBUILDER_ASSETS=$PWD/bin/k8s", os.Getenv("KUBEBUILDER_ASSETS"))
	}
	facts := fbcfacts.Load(t, demoDir)
	_, base := catalogdproc.Serve(t, catalogd, "--data-dir", t.TempDir(), "--catalog", "demo="+demoDir)
	plugins := t.TempDir()
	if err := os.Symlink(kubectlCatalog, filepath.Join(plugins, "kubectl-catalog")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("kubectl-catalog", filepath.Join(plugins, "kubectl_complete-catalog")); err != nil {
		t.Fatal(err)
	}
	env := append(isolatedEnv(t), "PATH="+plugins+string(os.PathListSeparator)+os.Getenv("PATH"), "CATALOGD_SERVER="+base)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a command", []string{"pack"}, []string{"packages"}},
		{"a package name", []string{"show", ""}, sortedKeys(facts.Packages)},
		{"a package name begun", []string{"show", "a"}, []string{"aurora-cache"}},
		{"a flag's value", []string{"versions", "aurora-cache", "--channel", ""}, sortedKeys(facts.Channels["aurora-cache"])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(kubectl, append([]string{"__complete", "catalog"}, tc.args...)...)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubectl __complete catalog %q: %v\n%s", tc.args, err, stderr.String())
			}
			var got []string
			for _, l := range strings.Split(stdout.String(), "\n") {
				if l != "" && !strings.HasPrefix(l, ":") {
					name, _, _ := strings.Cut(l, "\t") // a command's completion carries its description
					got = append(got, name)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("kubectl completes %q with %q, want %q\nstdout:\n%s\nstderr:\n%s", tc.args, got, tc.want, stdout.String(), stderr.String())
			}
		})
	}
}
