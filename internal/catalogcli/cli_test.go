package catalogcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/registrytest"
)

// demoDir is the demo catalog, from this package's directory.
var demoDir = filepath.Join("..", "..", "test", "testdata", "demo")

// catalogd, catalogdManager (catalogd with the ClusterCatalog
// controllers, -tags manager) and kubectlCatalog are the binaries TestMain
// builds once.
var catalogd, catalogdManager, kubectlCatalog string

func TestMain(m *testing.M) {
	os.Exit(catalogdproc.MainWith(m, map[string]*string{"catalogd": &catalogd, "catalogd-manager": &catalogdManager,
		"kubectl-catalog": &kubectlCatalog}))
}

// cli runs kubectl-catalog with a cache and kubeconfig of the test's own.
type cli struct {
	// flags say where the catalog is: --server URL, --dir or --image.
	flags []string
	env   []string
}

func newCLI(t *testing.T, flags ...string) cli {
	t.Helper()
	return cli{flags: flags, env: isolatedEnv(t)}
}

// isolatedEnv keeps the binary away from the user's cache, kubeconfig and
// $CATALOGD_SERVER.
func isolatedEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CATALOGD_SERVER=") && !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CACHE_HOME="+t.TempDir(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
}

// run returns stdout, stderr and whether the command succeeded.
func (c cli) run(t *testing.T, args ...string) (string, string, bool) {
	t.Helper()
	out, errOut, ok, err := c.exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out, errOut, ok
}

// exec is run for goroutines other than the test's, which must not call
// t.Fatal: it returns the error of a command that could not be run.
func (c cli) exec(args ...string) (stdout, stderr string, ok bool, err error) {
	cmd := exec.Command(kubectlCatalog, append(slices.Clone(c.flags), args...)...)
	cmd.Env = c.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		return "", "", false, err
	}
	return out.String(), errOut.String(), err == nil, nil
}

// ok runs a command that must succeed.
func (c cli) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, ok := c.run(t, args...)
	if !ok {
		t.Fatalf("kubectl-catalog %s: %s", strings.Join(args, " "), errOut)
	}
	return out
}

// decode runs a command with -o json and decodes its one document.
func decode[T any](t *testing.T, c cli, args ...string) T {
	t.Helper()
	var v T
	out := c.ok(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl-catalog %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

func lines(s string) []string { return strings.Fields(s) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// targets are the ways to reach the demo catalog: a catalogd serve, the
// directory offline, and an image in a registry offline, named by --image
// and by --source.
func targets(t *testing.T) map[string]cli {
	t.Helper()
	_, base := catalogdproc.Serve(t, catalogd, "--data-dir", t.TempDir(), "--catalog", "demo="+demoDir)
	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	return map[string]cli{
		"server": newCLI(t, "--server", base),
		"dir":    newCLI(t, "--dir", demoDir),
		"image":  newCLI(t, "--image", reg.Host+"/catalogs/demo:v1", "--insecure-registry", reg.Host),
		"source": newCLI(t, "--source", reg.Host+"/catalogs/demo:v1", "--insecure-registry", reg.Host),
	}
}

// TestAnswersMatchTheCatalog runs every command against each way of
// reaching the demo catalog and checks the answers against what the FBC
// says, read independently by fbcfacts.
func TestAnswersMatchTheCatalog(t *testing.T) {
	facts := fbcfacts.Load(t, demoDir)
	for name, c := range targets(t) {
		t.Run(name, func(t *testing.T) {
			if got := lines(c.ok(t, "catalogs", "-o", "name")); !slices.Equal(got, []string{"demo"}) {
				t.Errorf("catalogs: %v, want [demo]", got)
			}
			cats := decode[client.CatalogList](t, c, "catalogs")
			if n := cats.Items[0].Counts.Bundles; n != facts.CountBundles() {
				t.Errorf("catalogs: %d bundles, the catalog has %d", n, facts.CountBundles())
			}
			if got, want := lines(c.ok(t, "packages", "-o", "name")), sortedKeys(facts.Packages); !slices.Equal(got, want) {
				t.Errorf("packages: %v, want %v", got, want)
			}
			for _, pkg := range sortedKeys(facts.Packages) {
				checkPackage(t, c, facts, pkg)
			}
			checkProviders(t, c, facts)
		})
	}
}

func checkPackage(t *testing.T, c cli, facts *fbcfacts.Catalog, pkg string) {
	t.Helper()
	show := decode[client.Package](t, c, "show", pkg)
	if show.Name != pkg || show.DefaultChannel != facts.Packages[pkg].DefaultChannel {
		t.Errorf("show %s: name %q default channel %q, want %q", pkg, show.Name, show.DefaultChannel, facts.Packages[pkg].DefaultChannel)
	}
	channels := decode[client.ChannelList](t, c, "channels", pkg)
	var names []string
	for _, ch := range channels.Items {
		names = append(names, ch.Name)
		if heads := facts.Channels[pkg][ch.Name].Heads(); len(heads) == 1 && ch.Head.Name != heads[0] {
			t.Errorf("channels %s: %s has head %q, want %q", pkg, ch.Name, ch.Head.Name, heads[0])
		}
	}
	if want := sortedKeys(facts.Channels[pkg]); !slices.Equal(names, want) {
		t.Errorf("channels %s: %v, want %v", pkg, names, want)
	}

	// versions: every bundle, newest first.
	got := lines(c.ok(t, "versions", pkg, "-o", "name"))
	want := newestFirst(facts, pkg, func(fbcfacts.Bundle) bool { return true })
	if !slices.Equal(got, want) {
		t.Errorf("versions %s: %v, want %v", pkg, got, want)
	}
	for _, ch := range sortedKeys(facts.Channels[pkg]) {
		inChannel := map[string]bool{}
		for _, e := range facts.Channels[pkg][ch].Entries {
			inChannel[e.Name] = true
		}
		got := lines(c.ok(t, "versions", pkg, "--channel", ch, "-o", "name"))
		if want := newestFirst(facts, pkg, func(b fbcfacts.Bundle) bool { return inChannel[b.Name] }); !slices.Equal(got, want) {
			t.Errorf("versions %s --channel %s: %v, want %v", pkg, ch, got, want)
		}
	}
	const versionRange = ">=1.1.0 <3.0.0"
	cons, err := semver.NewConstraint(versionRange)
	if err != nil {
		t.Fatal(err)
	}
	got = lines(c.ok(t, "versions", pkg, "--range", versionRange, "-o", "name"))
	if want := newestFirst(facts, pkg, func(b fbcfacts.Bundle) bool { return cons.Check(semver.MustParse(b.Version())) }); !slices.Equal(got, want) {
		t.Errorf("versions %s --range %q: %v, want %v", pkg, versionRange, got, want)
	}

	// bundle by version and by name, and upgrades from each bundle.
	for _, name := range sortedKeys(facts.Bundles[pkg]) {
		b := facts.Bundles[pkg][name]
		bundle := decode[client.Bundle](t, c, "bundle", pkg, name)
		if bundle.Name != name || bundle.Version != b.Version() || bundle.Image != b.Image {
			t.Errorf("bundle %s %s: %s %s %s, want %s %s %s", pkg, name, bundle.Name, bundle.Version, bundle.Image, name, b.Version(), b.Image)
		}
		if byVersion := lines(c.ok(t, "bundle", pkg, b.Version(), "-o", "name")); !slices.Equal(byVersion, []string{name}) {
			t.Errorf("bundle %s %s: %v, want [%s]", pkg, b.Version(), byVersion, name)
		}
		upgrades := decode[client.UpgradeList](t, c, "upgrades", pkg, "--from", b.Version())
		var gotEdges []string
		for _, e := range upgrades.Items {
			gotEdges = append(gotEdges, e.Channel+"/"+e.Name)
		}
		sort.Strings(gotEdges)
		if want := upgradeEdges(t, facts, pkg, b); !slices.Equal(gotEdges, want) {
			t.Errorf("upgrades %s --from %s: %v, want %v", pkg, b.Version(), gotEdges, want)
		}
	}
}

// newestFirst lists the package's bundles that keep says, by version
// descending.
func newestFirst(facts *fbcfacts.Catalog, pkg string, keep func(fbcfacts.Bundle) bool) []string {
	var bundles []fbcfacts.Bundle
	for _, b := range facts.Bundles[pkg] {
		if keep(b) {
			bundles = append(bundles, b)
		}
	}
	sort.Slice(bundles, func(i, j int) bool {
		return semver.MustParse(bundles[i].Version()).GreaterThan(semver.MustParse(bundles[j].Version()))
	})
	names := []string{}
	for _, b := range bundles {
		names = append(names, b.Name)
	}
	return names
}

// upgradeEdges is OLM's rule read off the channels: an entry is an upgrade
// from b when it replaces b, skips b, or has a skipRange b's version is in.
func upgradeEdges(t *testing.T, facts *fbcfacts.Catalog, pkg string, b fbcfacts.Bundle) []string {
	t.Helper()
	v := semver.MustParse(b.Version())
	edges := []string{}
	for ch, channel := range facts.Channels[pkg] {
		for _, e := range channel.Entries {
			in := e.Replaces == b.Name || slices.Contains(e.Skips, b.Name)
			if !in && e.SkipRange != "" {
				r, err := semver.NewConstraint(e.SkipRange)
				if err != nil {
					t.Fatal(err)
				}
				in = r.Check(v)
			}
			if in {
				edges = append(edges, ch+"/"+e.Name)
			}
		}
	}
	sort.Strings(edges)
	return edges
}

// checkProviders asks for every GVK some bundle provides.
func checkProviders(t *testing.T, c cli, facts *fbcfacts.Catalog) {
	t.Helper()
	want := map[fbcfacts.GVK][]string{}
	for _, pkg := range facts.Bundles {
		for _, b := range pkg {
			for _, g := range b.GVKs("olm.gvk") {
				if !slices.Contains(want[g], b.Name) {
					want[g] = append(want[g], b.Name)
				}
			}
		}
	}
	for g, bundles := range want {
		sort.Strings(bundles)
		arg := g.Kind + "." + g.Group + "/" + g.Version
		if g.Group == "" {
			arg = g.Kind + "/" + g.Version
		}
		for _, args := range [][]string{{arg}, {"--kind", g.Kind, "--group", g.Group, "--version", g.Version}} {
			got := lines(c.ok(t, append([]string{"providers", "-o", "name"}, args...)...))
			sort.Strings(got)
			if !slices.Equal(got, bundles) {
				t.Errorf("providers %v: %v, want %v", args, got, bundles)
			}
		}
	}
}

// commands are one invocation of each command on the demo catalog.
var commands = [][]string{
	{"catalogs"},
	{"packages"},
	{"packages", "--search", "cache"},
	{"show", "aurora-cache"},
	{"channels", "aurora-cache"},
	{"versions", "aurora-cache", "--channel", "stable", "--range", ">=1.1.0"},
	{"upgrades", "aurora-cache", "--from", "1.1.1"},
	{"providers", "ServiceProbe.observability.example.com/v1"},
	{"bundle", "aurora-cache", "1.2.0"},
}

// TestOutputFormats checks each format against the JSON answer: YAML is
// the same object, -o name lists its names, a table has a row per item.
// The JSON answer is the API's own: byte for byte what the server sends
// through the generated client, the same from every way of reaching the
// catalog (but for the catalogs' sources and index times).
func TestOutputFormats(t *testing.T) {
	all := targets(t)
	server := all["server"]
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			jsonOut := server.ok(t, append(args, "-o", "json")...)
			yamlOut := server.ok(t, append(args, "-o", "yaml")...)
			fromYAML, err := yaml.YAMLToJSON([]byte(yamlOut))
			if err != nil {
				t.Fatal(err)
			}
			if !fbcfacts.JSONEqual([]byte(jsonOut), fromYAML) {
				t.Errorf("-o yaml is not -o json:\n%s\n%s", yamlOut, jsonOut)
			}
			names := lines(server.ok(t, append(args, "-o", "name")...))
			if len(names) == 0 {
				t.Errorf("-o name printed nothing")
			}
			table := strings.Split(strings.TrimSpace(server.ok(t, args...)), "\n")
			wide := strings.Split(strings.TrimSpace(server.ok(t, append(args, "-o", "wide")...)), "\n")
			bare := strings.Split(strings.TrimSpace(server.ok(t, append(args, "--no-headers")...)), "\n")
			switch args[0] {
			case "show", "bundle":
				// A description: one block naming the catalog and the object.
				if !strings.HasPrefix(table[0], "Catalog:") || !strings.Contains(strings.Join(table, "\n"), names[0]) {
					t.Errorf("description of %s:\n%s", names[0], strings.Join(table, "\n"))
				}
			default:
				if len(table) != len(names)+1 || len(bare) != len(names) || len(wide) != len(names)+1 {
					t.Errorf("%d names, but %d table lines, %d wide, %d without headers:\n%s", len(names), len(table), len(wide), len(bare), strings.Join(table, "\n"))
				}
				if strings.ToUpper(table[0]) != table[0] || !slices.Equal(strings.Fields(bare[0]), strings.Fields(table[1])) {
					t.Errorf("table header %q, first row %q, first row without headers %q", table[0], table[1], bare[0])
				}
				if len(strings.Fields(wide[0])) <= len(strings.Fields(table[0])) {
					t.Errorf("-o wide shows no more columns: %q vs %q", wide[0], table[0])
				}
				for i, row := range table[1:] {
					if !strings.Contains(row, names[i]) {
						t.Errorf("table row %d %q does not name %s", i, row, names[i])
					}
				}
			}
			if args[0] == "catalogs" {
				return
			}
			for _, other := range []string{"dir", "image"} {
				if got := all[other].ok(t, append(args, "-o", "json")...); got != jsonOut {
					t.Errorf("%s answers differently from the server:\n%s\nwant\n%s", other, got, jsonOut)
				}
			}
		})
	}
}

// TestErrors checks that a mistake is one line that says what to do.
func TestErrors(t *testing.T) {
	c := targets(t)["server"]
	offline := newCLI(t, "--dir", demoDir)
	offline.ok(t, "catalogs") // index it now: indexing is announced on stderr
	nowhere := newCLI(t, "--server", "http://127.0.0.1:1")
	noCluster := newCLI(t)
	for _, tc := range []struct {
		name string
		c    cli
		args []string
		want []string
	}{
		{"unknown package", c, []string{"show", "nope"}, []string{`package "nope"`, "kubectl catalog packages"}},
		{"unknown package in one catalog", c, []string{"channels", "nope", "-c", "demo"}, []string{`"nope"`, "kubectl catalog packages"}},
		{"unknown catalog", c, []string{"packages", "-c", "nope"}, []string{`"nope"`, "kubectl catalog catalogs"}},
		{"unknown channel", c, []string{"versions", "aurora-cache", "--channel", "nope", "-c", "demo"}, []string{`"nope"`, "kubectl catalog channels"}},
		{"unknown bundle", offline, []string{"bundle", "aurora-cache", "9.9.9"}, []string{`"9.9.9"`, "kubectl catalog versions"}},
		{"bad range", c, []string{"versions", "aurora-cache", "--range", ">>1"}, []string{"version"}},
		{"GVK without version", c, []string{"providers", "ServiceProbe.observability.example.com"}, []string{"KIND.GROUP/VERSION"}},
		{"server not there", nowhere, []string{"packages"}, []string{"http://127.0.0.1:1", "refused", "--server"}},
		{"no kubeconfig", noCluster, []string{"packages"}, []string{"kubeconfig", "--server", "--dir"}},
		{"two sources", newCLI(t, "--server", "http://x", "--dir", demoDir), []string{"packages"}, []string{"only one"}},
		{"--dir and --source", newCLI(t, "--source", demoDir, "--dir", demoDir), []string{"packages"}, []string{"only one", "--source"}},
		{"a git repository as a URL", newCLI(t, "--source", "https://host/org/repo.git"), []string{"packages"},
			[]string{"--source", "for a git repository write git::https://host/org/repo.git"}},
		{"a mistyped directory", newCLI(t, "--source", "test/testdata/dmeo"), []string{"packages"}, []string{"no directory test/testdata/dmeo"}},
		{"bad output", c, []string{"packages", "-o", "xml"}, []string{"xml", "table"}},
		{"directory missing", newCLI(t, "--dir", filepath.Join(t.TempDir(), "none")), []string{"packages"}, []string{"catalog directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, ok := tc.c.run(t, tc.args...)
			if ok {
				t.Fatalf("succeeded:\n%s", out)
			}
			if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 || !strings.HasPrefix(errOut, "error: ") {
				t.Errorf("want one line starting with error:, got:\n%s", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error %q does not say %q", strings.TrimSpace(errOut), w)
				}
			}
		})
	}
}

// TestServerEnv: $CATALOGD_SERVER stands in for --server, unless the
// command line names a catalog to read offline.
func TestServerEnv(t *testing.T) {
	nowhere := "http://127.0.0.1:1"
	for _, tc := range []struct {
		name   string
		flags  []string
		wantOK bool
	}{
		{"the server of the environment", nil, false},
		{"--dir over the environment", []string{"--dir", demoDir}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t, tc.flags...)
			c.env = append(c.env, "CATALOGD_SERVER="+nowhere)
			out, errOut, ok := c.run(t, "catalogs", "-o", "name")
			if ok != tc.wantOK {
				t.Fatalf("succeeded: %v, want %v\nstdout: %s\nstderr: %s", ok, tc.wantOK, out, errOut)
			}
			if !ok && !strings.Contains(errOut, nowhere) {
				t.Errorf("error %q does not say it asked %s", errOut, nowhere)
			}
			if ok && strings.TrimSpace(out) == "" {
				t.Error("no catalog listed")
			}
		})
	}
}

// TestCompletion checks that names come from the server.
func TestCompletion(t *testing.T) {
	facts := fbcfacts.Load(t, demoDir)
	c := targets(t)["server"]
	var versions []string
	for _, b := range facts.Bundles["aurora-cache"] {
		versions = append(versions, b.Version())
	}
	sort.Strings(versions)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"show", ""}, sortedKeys(facts.Packages)},
		{[]string{"channels", "aur"}, []string{"aurora-cache"}},
		{[]string{"versions", "aurora-cache", "--channel", ""}, sortedKeys(facts.Channels["aurora-cache"])},
		{[]string{"bundle", "aurora-cache", ""}, versions},
		{[]string{"upgrades", "aurora-cache", "--from", ""}, versions},
		{[]string{"packages", "-c", ""}, []string{"demo"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := c.ok(t, append([]string{"__complete"}, tc.args...)...)
			var got []string
			for _, l := range strings.Split(out, "\n") {
				if l != "" && !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
					got = append(got, l)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("completions %v, want %v", got, tc.want)
			}
		})
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out := c.ok(t, "completion", shell); !strings.Contains(out, "kubectl-catalog") {
			t.Errorf("completion %s does not complete kubectl-catalog", shell)
		}
	}
}

// TestOfflineCache checks that a second call on the same content answers
// from the index the first built, and that changed content is indexed
// again.
func TestOfflineCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, "--dir", dir)
	cache := strings.TrimPrefix(c.env[len(c.env)-2], "XDG_CACHE_HOME=")
	indexFiles := func() []string {
		files, err := filepath.Glob(filepath.Join(cache, "catalogd", "*", "index", "mine", "*.db"))
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	if _, errOut, _ := c.run(t, "packages"); !strings.Contains(errOut, "Indexing "+dir) {
		t.Errorf("the first call did not say it indexes: %q", errOut)
	}
	first := indexFiles()
	if len(first) != 1 {
		t.Fatalf("index files after the first call: %v", first)
	}
	if _, errOut, _ := c.run(t, "packages"); errOut != "" {
		t.Errorf("the second call printed %q", errOut)
	}
	if again := indexFiles(); !slices.Equal(again, first) {
		t.Errorf("the second call on the same content built %v, want %v kept", again, first)
	}
	if err := os.RemoveAll(filepath.Join(dir, "paper-lantern")); err != nil {
		t.Fatal(err)
	}
	if got := lines(c.ok(t, "packages", "-o", "name")); slices.Contains(got, "paper-lantern") {
		t.Errorf("after removing paper-lantern: %v", got)
	}
	if again := indexFiles(); len(again) != 1 || again[0] == first[0] {
		t.Errorf("changed content: index files %v, want one new file", again)
	}
}

// TestListsSpanPages checks that lists longer than the API's page (100
// items) come whole, on a generated catalog with a long package.
func TestListsSpanPages(t *testing.T) {
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 130, Bundles: 400, LongPackageBundles: 150, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	facts := fbcfacts.Load(t, dir)
	c := newCLI(t, "--dir", dir)
	if got, want := lines(c.ok(t, "packages", "-o", "name")), sortedKeys(facts.Packages); !slices.Equal(got, want) {
		t.Errorf("packages: %d names, the catalog has %d", len(got), len(want))
	}
	for pkg, bundles := range facts.Bundles {
		if len(bundles) <= 100 {
			continue
		}
		got := lines(c.ok(t, "versions", pkg, "-o", "name"))
		if want := newestFirst(facts, pkg, func(fbcfacts.Bundle) bool { return true }); !slices.Equal(got, want) {
			t.Errorf("versions %s: %d bundles, the catalog has %d", pkg, len(got), len(want))
		}
		return
	}
	t.Fatal("the generated catalog has no package of more than 100 bundles")
}
