package catalogcli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/catalogdproc"
)

// BenchmarkCommands measures each command end to end, process start
// included, as a person at a terminal waits for it, on the catalog
// $CATALOGD_BENCH_CATALOG (make bench generates one of about 8,000
// bundles): against catalogd serve, offline with the index already in the
// cache, and offline from scratch (each run indexes the catalog into an
// empty cache). opm's `alpha list channels` and `alpha list bundles`, which
// parse the whole catalog on every call, run beside them on the same
// directory when an opm binary is found ($OPM, bin/opm or the PATH).
func BenchmarkCommands(b *testing.B) {
	dir := os.Getenv("CATALOGD_BENCH_CATALOG")
	if dir == "" {
		b.Skip("CATALOGD_BENCH_CATALOG is unset; run `make bench`")
	}
	_, base := catalogdproc.Serve(b, catalogd, "--data-dir", b.TempDir(), "--catalog", "bench="+dir)
	server := benchCLI(b, "--server", base)
	warm := benchCLI(b, "--dir", dir)
	pkg, version, gvk := benchSubjects(b, server)
	commands := [][]string{
		{"catalogs"},
		{"packages"},
		{"show", pkg},
		{"channels", pkg},
		{"versions", pkg},
		{"upgrades", pkg, "--from", version},
		{"providers", gvk},
		{"bundle", pkg, version},
	}
	for _, args := range commands {
		name := args[0]
		b.Run("server/"+name, func(b *testing.B) { runEach(b, server, nil, args) })
		b.Run("offline-warm/"+name, func(b *testing.B) {
			runEach(b, warm, nil, args) // the first run fills the cache; b.N runs after it
		})
		b.Run("offline-cold/"+name, func(b *testing.B) {
			runEach(b, benchCLI(b, "--dir", dir), func(c *benchRunner) { c.freshCache(b) }, args)
		})
	}
	opm := findOPM()
	if opm == "" {
		b.Log("no opm binary ($OPM, bin/opm or on the PATH): opm's rows are left out")
		return
	}
	for _, what := range []string{"channels", "bundles"} {
		b.Run("opm-alpha-list/"+what, func(b *testing.B) {
			for b.Loop() {
				if out, err := exec.Command(opm, "alpha", "list", what, dir).CombinedOutput(); err != nil {
					b.Fatalf("opm alpha list %s: %v\n%s", what, err, out)
				}
			}
		})
	}
}

// benchRunner runs kubectl-catalog for a benchmark.
type benchRunner struct {
	flags []string
	env   []string
	cache string
}

func benchCLI(b *testing.B, flags ...string) *benchRunner {
	b.Helper()
	c := &benchRunner{flags: flags}
	c.freshCache(b)
	return c
}

// freshCache points the runner at an empty cache directory.
func (c *benchRunner) freshCache(b *testing.B) {
	c.cache = b.TempDir()
	c.env = append(os.Environ(), "XDG_CACHE_HOME="+c.cache, "KUBECONFIG="+filepath.Join(c.cache, "none"))
}

func (c *benchRunner) run(b *testing.B, args ...string) []byte {
	b.Helper()
	cmd := exec.Command(kubectlCatalog, append(append([]string{}, c.flags...), args...)...)
	cmd.Env = c.env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("kubectl-catalog %v: %v", args, err)
	}
	return out
}

// runEach times b.N runs of the command, each after prepare (untimed).
func runEach(b *testing.B, c *benchRunner, prepare func(*benchRunner), args []string) {
	b.Helper()
	if prepare == nil {
		c.run(b, args...) // warm: the cache is filled before timing
	}
	b.ResetTimer()
	for range b.N {
		if prepare != nil {
			b.StopTimer()
			prepare(c)
			b.StartTimer()
		}
		c.run(b, args...)
	}
}

// benchSubjects picks the package with the most bundles, its oldest
// version (the one with the most upgrades), and the API provided by the
// most bundles, from the server's own answers.
func benchSubjects(b *testing.B, server *benchRunner) (pkg, version, gvk string) {
	b.Helper()
	var pkgs client.PackageList
	if err := json.Unmarshal(server.run(b, "packages", "-o", "json"), &pkgs); err != nil {
		b.Fatal(err)
	}
	most := 0
	var oldest client.BundleSummary
	for _, p := range pkgs.Items {
		var bundles client.BundleList
		if err := json.Unmarshal(server.run(b, "versions", p.Name, "-o", "json", "-c", "bench"), &bundles); err != nil {
			b.Fatal(err)
		}
		if len(bundles.Items) > most {
			most, pkg, oldest = len(bundles.Items), p.Name, bundles.Items[len(bundles.Items)-1]
		}
		if len(pkgs.Items) > 20 && most >= 100 {
			break // a long package is enough; do not ask for all 300
		}
	}
	var bundle client.Bundle
	if err := json.Unmarshal(server.run(b, "bundle", pkg, oldest.Name, "-o", "json"), &bundle); err != nil {
		b.Fatal(err)
	}
	if len(bundle.ProvidedGVKs) == 0 {
		b.Fatalf("bundle %s provides no API to ask about", oldest.Name)
	}
	g := bundle.ProvidedGVKs[0]
	return pkg, oldest.Version, strings.TrimSuffix(g.Kind+"."+g.Group, ".") + "/" + g.Version
}

func findOPM() string {
	for _, p := range []string{os.Getenv("OPM"), filepath.Join("..", "..", "bin", "opm")} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	p, _ := exec.LookPath("opm")
	return p
}
