package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"

	"github.com/catalogd/catalogd/internal/daemon"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/registrytest"
)

const demoDir = "../../test/testdata/demo"

// rejectedPackages are the packages of the catalog in dir that
// operator-registry rejects, each converted and validated on its own: the
// verdicts `catalogd validate` must agree with.
func rejectedPackages(t *testing.T, dir string) []string {
	t.Helper()
	cfg, err := declcfg.LoadFS(t.Context(), os.DirFS(dir))
	if err != nil {
		t.Fatalf("operator-registry cannot load %s: %v", dir, err)
	}
	byPackage := map[string]*declcfg.DeclarativeConfig{}
	of := func(name string) *declcfg.DeclarativeConfig {
		if byPackage[name] == nil {
			byPackage[name] = &declcfg.DeclarativeConfig{}
		}
		return byPackage[name]
	}
	for _, p := range cfg.Packages {
		of(p.Name).Packages = append(of(p.Name).Packages, p)
	}
	for _, c := range cfg.Channels {
		of(c.Package).Channels = append(of(c.Package).Channels, c)
	}
	for _, b := range cfg.Bundles {
		of(b.Package).Bundles = append(of(b.Package).Bundles, b)
	}
	for _, d := range cfg.Deprecations {
		of(d.Package).Deprecations = append(of(d.Package).Deprecations, d)
	}
	var rejected []string
	for name, pkg := range byPackage {
		m, err := declcfg.ConvertToModel(*pkg)
		if err == nil {
			err = model.Model(m).Validate()
		}
		if err != nil {
			rejected = append(rejected, name)
		}
	}
	slices.Sort(rejected)
	return rejected
}

// problemPackages are the packages named by the lines of `catalogd
// validate`, each of which must read file:line:column: package: message with
// a file of the catalog in dir.
func problemPackages(t *testing.T, dir, out string) []string {
	t.Helper()
	var pkgs []string
	for line := range strings.Lines(out) {
		parts := strings.SplitN(strings.TrimSuffix(line, "\n"), ": ", 3)
		if len(parts) != 3 {
			t.Errorf("line %q is not file:line:column: package: message", line)
			continue
		}
		file, _, _ := strings.Cut(parts[0], ":")
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			t.Errorf("line %q names a file the catalog does not have: %v", line, err)
		}
		pkgs = append(pkgs, parts[1])
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
}

func TestValidate(t *testing.T) {
	phantom := t.TempDir()
	if err := fbcgen.WritePhantomDemo(demoDir, phantom); err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	if err := os.CopyFS(broken, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "quarry-db", "extra.json"), []byte("{\"schema\":\"olm.package\",\n\"name\": }"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registrytest.New(t)
	image := reg.PushCatalog(t, "catalogs/phantom:v1", phantom, registrytest.PushOptions{})

	tests := []struct {
		name string
		args []string
		// dir is the catalog the verdicts are checked against.
		dir      string
		wantCode int
	}{
		{"clean directory", []string{"validate", demoDir}, demoDir, 0},
		{"phantom entries", []string{"validate", phantom}, phantom, 1},
		{"phantom entries in an image", []string{"validate", "--insecure-registry", reg.Host, image}, phantom, 1},
	}
	if community, ok := fbcfacts.FindSharedCommunity(); ok {
		code := 0
		if len(rejectedPackages(t, community)) > 0 {
			code = 1
		}
		tests = append(tests, struct {
			name     string
			args     []string
			dir      string
			wantCode int
		}{"community catalog", []string{"validate", community}, community, code})
	} else {
		t.Log("../shared/catalogs/community-v4.20 is absent (a clone on its own): the real catalog is not validated")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			want := rejectedPackages(t, tc.dir)
			if got := problemPackages(t, tc.dir, stdout.String()); !slices.Equal(got, want) {
				t.Errorf("packages with problems %q, operator-registry rejects %q", got, want)
			}

			// -o json reports the same problems.
			var jsonOut bytes.Buffer
			run(append([]string{tc.args[0], "-o", "json"}, tc.args[1:]...), &jsonOut, &stderr)
			var report daemon.Report
			if err := json.Unmarshal(jsonOut.Bytes(), &report); err != nil {
				t.Fatalf("-o json: %v\n%s", err, jsonOut.String())
			}
			if n := strings.Count(stdout.String(), "\n"); len(report.Problems) != n {
				t.Errorf("-o json has %d problems, text %d lines", len(report.Problems), n)
			}
		})
	}

	t.Run("file that does not parse", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"validate", broken}, &stdout, &stderr); code != 1 {
			t.Fatalf("exit code %d, want 1 (stderr: %s)", code, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), "quarry-db/extra.json:") {
			t.Errorf("the problem %q does not start with the file's position", stdout.String())
		}
	})
	t.Run("no catalog given", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"validate"}, &stdout, &stderr); code != 2 {
			t.Errorf("exit code %d, want 2 (stderr: %s)", code, stderr.String())
		}
	})
}

// TestValidateJSONSyntaxError: issue 34's stray token in a .json file of
// the demo catalog, as `catalogd validate` prints it and -o json reports
// it: JSON's error (not YAML's) at the byte JSON cannot take, which is the
// key after the stray string, and the package the file named before it.
func TestValidateJSONSyntaxError(t *testing.T) {
	const (
		file  = "lighthouse-metrics/catalog.json"
		pkg   = "lighthouse-metrics"
		stray = `"stray" `
	)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	// The stray string goes before the first channel's "package" key, in
	// the file's second value: a key with no ':' after it, which JSON
	// refuses at the next key and YAML as well.
	at := bytes.Index(data, []byte(`"package": "`+pkg+`"`))
	if at < 0 {
		t.Fatalf("%s has no channel naming its package", file)
	}
	broken := slices.Concat(data[:at], []byte(stray), data[at:])
	if err := os.WriteFile(filepath.Join(dir, file), broken, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := at + len(stray)
	line := 1 + bytes.Count(broken[:bad], []byte("\n"))
	column := bad - bytes.LastIndexByte(broken[:bad], '\n')
	wantPosition := fmt.Sprintf("%s:%d:%d", file, line, column)

	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit code %d, want 1 (stderr: %s)", code, stderr.String())
	}
	if want := wantPosition + ": " + pkg + ": JSON: "; !strings.HasPrefix(stdout.String(), want) ||
		strings.Count(stdout.String(), "\n") != 1 || strings.Contains(stdout.String(), "YAML") {
		t.Errorf("validate printed %q, want one line starting %q and no YAML", stdout.String(), want)
	}

	stdout.Reset()
	run([]string{"validate", "-o", "json", dir}, &stdout, &stderr)
	var report daemon.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("-o json: %v\n%s", err, stdout.String())
	}
	if len(report.Problems) != 1 || report.Problems[0].Position != wantPosition || report.Problems[0].Package != pkg {
		t.Errorf("-o json problems %+v, want one at %s in package %s", report.Problems, wantPosition, pkg)
	}
}

// TestValidateEscapesCatalogText validates a catalog whose file, package,
// channel and bundle names carry terminal control sequences (a colour, a
// window title ended by BEL, an OSC 8 hyperlink): every problem line
// quotes some of them, and none may reach the terminal raw. -o json keeps
// them exact, for tools.
func TestValidateEscapesCatalogText(t *testing.T) {
	const (
		pkg     = "evil\x1b[31mpkg"
		channel = "ch\x1b]0;owned\x07"
		bundle  = "evil\x1b]8;;https://x/\x1b\\pkg.v1.0.0"
	)
	dir := t.TempDir()
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	// The channel names a bundle that is not there and replaces another
	// that is not either: problems that quote the names.
	fbc := `{"schema":"olm.package","name":` + quote(pkg) + `,"defaultChannel":` + quote(channel) + `}
{"schema":"olm.channel","package":` + quote(pkg) + `,"name":` + quote(channel) + `,"entries":[{"name":` + quote(bundle) + `,"replaces":` + quote(bundle+"\x07") + `}]}
`
	if err := os.WriteFile(filepath.Join(dir, "cat\x1b[2Jalog.json"), []byte(fbc), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr: %s", code, stderr.String())
	}
	out := stdout.String()
	if out == "" {
		t.Fatal("no problem printed")
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r == 0x1b || r == 0x07 }); i >= 0 {
		t.Errorf("problem lines carry a raw control character at byte %d: %q", i, out)
	}
	if !strings.Contains(out, `evil^[[31mpkg`) {
		t.Errorf("problem lines do not name the package, escaped: %q", out)
	}

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"validate", "-o", "json", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("-o json: exit code %d, want 1; stderr: %s", code, stderr.String())
	}
	var report daemon.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Problems) == 0 || report.Problems[0].Package != pkg {
		t.Errorf("-o json does not keep the package name exact: %+v", report.Problems)
	}
}
