package catalogcli_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/catalogdproc"
)

// resolveDir holds the resolution test catalogs a and b (see its README).
var resolveDir = filepath.Join("..", "query", "testdata", "resolve")

// TestResolve runs `kubectl catalog resolve` against a real catalogd
// serving catalogs a (priority 0, tier=prod) and b (priority 1, tier=dev),
// and offline against a alone.
func TestResolve(t *testing.T) {
	_, base := catalogdproc.Serve(t, catalogd, "--data-dir", t.TempDir(),
		"--catalog", "a="+filepath.Join(resolveDir, "a"), "--catalog", "b="+filepath.Join(resolveDir, "b"),
		"--priority", "b=1", "--label", "a=tier=prod", "--label", "b=tier=dev")
	server := newCLI(t, "--server", base)
	offline := newCLI(t, "--dir", filepath.Join(resolveDir, "a"))

	for _, tc := range []struct {
		name         string
		c            cli
		args         []string
		wantBundle   string
		wantCatalogs int
	}{
		{"priority", server, []string{"resolve", "ferry", "--channel", "stable"}, "ferry.v1.4.0", 2},
		{"selector", server, []string{"resolve", "ferry", "--channel", "stable", "-l", "tier=prod"}, "ferry.v1.2.0", 2},
		{"one catalog", server, []string{"resolve", "ferry", "--channel", "stable", "-c", "a"}, "ferry.v1.2.0", 1},
		{"installed", server, []string{"resolve", "ferry", "--installed", "1.2.0", "-c", "a"}, "ferry.v2.0.0", 1},
		{"self-certified", server, []string{"resolve", "ferry", "--installed", "1.2.0", "--upgrade-constraint-policy", "SelfCertified", "-c", "a"}, "ferry.v2.1.0-rc.1", 1},
		{"offline", offline, []string{"resolve", "ferry", "--installed", "1.0.0", "--version", "<2.0.0"}, "ferry.v1.2.0", 1},
		{"replaces", server, []string{"resolve", "canoe", "--installed", "0.0.1", "-c", "a"}, "canoe.v0.0.2", 1},
		{"installed by version", server, []string{"resolve", "oar", "--installed", "2.0.0", "-c", "a"}, "oar.both", 1},
		{"installed by name", server, []string{"resolve", "oar", "--installed", "2.0.0", "--installed-bundle", "oar.neither", "-c", "a"}, "oar.build", 1},
		{"installed by name offline", offline, []string{"resolve", "oar", "--installed", "2.0.0", "--installed-bundle", "oar.neither"}, "oar.build", 1},
		{"installed release recorded apart", offline, []string{"resolve", "oar", "--installed", "2.0.0+7", "--installed-release", "", "--bundle-release-support"}, "oar.build", 1},
		{"releases from build metadata by default", server, []string{"resolve", "oar", "-c", "a"}, "oar.both", 1},
		{"--bundle-release-support", server, []string{"resolve", "oar", "-c", "a", "--bundle-release-support"}, "oar.build", 1},
		{"--bundle-release-support offline", offline, []string{"resolve", "oar", "--bundle-release-support"}, "oar.build", 1},
		{"--bundle-release-support=false", offline, []string{"resolve", "oar", "--bundle-release-support=false"}, "oar.both", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := decode[client.Resolution](t, tc.c, tc.args...)
			if res.Bundle.Name != tc.wantBundle || len(res.Catalogs) != tc.wantCatalogs {
				t.Errorf("bundle %q over %d catalogs, want %q over %d", res.Bundle.Name, len(res.Catalogs), tc.wantBundle, tc.wantCatalogs)
			}
			if got := strings.TrimSpace(tc.c.ok(t, append(tc.args, "-o", "name")...)); got != tc.wantBundle {
				t.Errorf("-o name: %q", got)
			}
			table := tc.c.ok(t, tc.args...)
			var chosen []string
			for _, row := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
				if f := strings.Fields(row); len(f) == 4 && f[3] == "Chosen" {
					chosen = append(chosen, f[2])
				}
			}
			if len(chosen) != 1 || chosen[0] != tc.wantBundle || !strings.HasPrefix(table, "CATALOG") {
				t.Errorf("table marks %v chosen, want %s:\n%s", chosen, tc.wantBundle, table)
			}
		})
	}

	t.Run("no bundle: the table, then operator-controller's message", func(t *testing.T) {
		out, errOut, ok := server.run(t, "resolve", "ferry", "--version", ">=9.0.0")
		if ok {
			t.Fatalf("succeeded:\n%s", out)
		}
		if want := `error: no bundles found for package "ferry" matching version ">=9.0.0"`; strings.TrimSpace(errOut) != want {
			t.Errorf("stderr %q, want %q", errOut, want)
		}
		if !strings.Contains(out, "ferry.v1.4.0") || !strings.Contains(out, "OutsideVersionRange") {
			t.Errorf("the table does not say why each bundle was left out:\n%s", out)
		}
	})
	t.Run("--upgrade-edges was removed, and says why", func(t *testing.T) {
		for _, c := range []cli{server, offline} {
			out, errOut, ok := c.run(t, "resolve", "canoe", "--installed", "0.1.0", "--upgrade-edges", "legacy")
			if ok || out != "" || !strings.Contains(errOut, "--upgrade-edges was removed") || !strings.Contains(errOut, "ForceSemverUpgradeConstraints") {
				t.Errorf("ok %v, stdout %q, stderr %q; want the flag refused as removed, with why", ok, out, errOut)
			}
		}
	})
	t.Run("a dependency: the table, the refused bundle, then operator-controller's message", func(t *testing.T) {
		// Catalog b, of higher priority, offers a bundle without one: the
		// selector leaves it out.
		for _, c := range []struct {
			cli
			args []string
		}{{server, []string{"-l", "tier=prod"}}, {offline, nil}} {
			out, errOut, ok := c.run(t, append([]string{"resolve", "kayak", "--channel", "stable"}, c.args...)...)
			if ok {
				t.Fatalf("succeeded:\n%s", out)
			}
			want := `error: validating bundle "kayak.v1.2.0": bundle "kayak.v1.2.0" has a dependency declared via property "olm.constraint" which is currently not supported`
			if strings.TrimSpace(errOut) != want {
				t.Errorf("stderr %q, want %q", errOut, want)
			}
			var verdicts []string
			for _, row := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
				if f := strings.Fields(row); len(f) == 4 {
					verdicts = append(verdicts, f[2]+"="+f[3])
				}
			}
			if !slices.Contains(verdicts, "kayak.v1.2.0=Refused(olm.constraint)") || !slices.Contains(verdicts, "kayak.v1.0.0=LowerVersion") {
				t.Errorf("the table does not show the refused bundle and its property: %v\n%s", verdicts, out)
			}
		}
	})
	t.Run("a catalog offering only deprecated bundles", func(t *testing.T) {
		out, errOut, ok := server.run(t, "resolve", "skiff", "-l", "tier=dev", "-o", "json")
		if !ok || !strings.Contains(out, "skiff.v0.3.0") {
			t.Fatalf("deprecated-only catalog b: %v %s %s", ok, out, errOut)
		}
	})
	t.Run("bad parameters", func(t *testing.T) {
		for _, args := range [][]string{
			{"resolve", "ferry", "--version", ">>1"},
			{"resolve", "ferry", "--installed", "1.2"},
			{"resolve", "ferry", "--installed-bundle", "ferry.v1.2.0"},
			{"resolve", "ferry", "--upgrade-constraint-policy", "Sometimes"},
			{"resolve", "ferry", "--upgrade-edges", "caret"},
			{"resolve", "ferry", "-l", "tier in prod"},
		} {
			out, errOut, ok := server.run(t, args...)
			if ok || out != "" || !strings.HasPrefix(errOut, "error: ") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%v: ok %v, stdout %q, stderr %q; want one error line", args, ok, out, errOut)
			}
		}
	})
}
