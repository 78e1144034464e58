package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/unpack"
)

func TestParseServeErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "catalog.json")
	writeFile(t, file, "{}")
	data := t.TempDir()

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no catalog", []string{"--data-dir", data}, "at least one --catalog"},
		{"no data dir", []string{"--catalog", "a=" + dir}, "--data-dir is required"},
		{"no equals", []string{"--data-dir", data, "--catalog", dir}, "want NAME=SOURCE"},
		{"empty value", []string{"--data-dir", data, "--catalog", "a="}, "want NAME=SOURCE"},
		{"upper-case name", []string{"--data-dir", data, "--catalog", "Demo=" + dir}, "not a DNS-1123 subdomain"},
		{"underscore name", []string{"--data-dir", data, "--catalog", "my_cat=" + dir}, "not a DNS-1123 subdomain"},
		{"empty name", []string{"--data-dir", data, "--catalog", "=" + dir}, "not a DNS-1123 subdomain"},
		{"duplicate name", []string{"--data-dir", data, "--catalog", "a=" + dir, "--catalog", "a=" + dir}, `catalog "a" is given twice`},
		{"missing dir", []string{"--data-dir", data, "--catalog", "a=" + filepath.Join(dir, "nope")}, "no directory"},
		{"missing relative dir", []string{"--data-dir", data, "--catalog", "a=test/testdata/dmeo"}, "no directory test/testdata/dmeo"},
		{"file, not dir", []string{"--data-dir", data, "--catalog", "a=" + file}, "is a file"},
		{"bad image", []string{"--data-dir", data, "--catalog", "a=quay.io/UPPER/Case:tag"}, "not an image reference"},
		{"git repository as a URL", []string{"--data-dir", data, "--catalog", "a=https://host/org/repo.git"}, "for a git repository write git::https://host/org/repo.git"},
		{"git ref twice", []string{"--data-dir", data, "--catalog", "a=git::https://host/org/repo.git?ref=a&ref=b"}, "ref given 2 times"},
		{"layout without directory", []string{"--data-dir", data, "--catalog", "a=oci:"}, "write oci:DIR"},
		{"priority without catalog", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "b=1"}, `no --catalog is named "b"`},
		{"priority not a number", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a=high"}, "not a 32-bit integer"},
		{"priority too big", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a=3000000000"}, "not a 32-bit integer"},
		{"priority twice", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a=1", "--priority", "a=2"}, "a priority twice"},
		{"priority no equals", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a"}, "want NAME=N"},
		{"label without catalog", []string{"--data-dir", data, "--catalog", "a=" + dir, "--label", "b=k=v"}, `no --catalog is named "b"`},
		{"label without value", []string{"--data-dir", data, "--catalog", "a=" + dir, "--label", "a=k"}, "want NAME=KEY=VALUE"},
		{"bad label key", []string{"--data-dir", data, "--catalog", "a=" + dir, "--label", "a=-k=v"}, "not a label key"},
		{"bad label value", []string{"--data-dir", data, "--catalog", "a=" + dir, "--label", "a=k=v w"}, "not a label value"},
		{"label twice", []string{"--data-dir", data, "--catalog", "a=" + dir, "--label", "a=k=v", "--label", "a=k=w"}, `label "k" twice`},
		{"stray argument", []string{"--data-dir", data, "--catalog", "a=" + dir, "extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"--data-dir", data, "--catalog", "a=" + dir, "--wacth"}, "unknown flag: --wacth"},
		{"negative poll interval", []string{"--data-dir", data, "--catalog", "a=" + dir, "--poll-interval", "-1s"}, "--poll-interval -1s"},
		{"TLS key without certificate", []string{"--data-dir", data, "--catalog", "a=" + dir, "--tls-key", "k.pem"}, "--tls-cert and --tls-key go together"},
		{"missing CA file", []string{"--data-dir", data, "--catalog", "a=" + dir, "--ca-file", filepath.Join(dir, "nope.pem")}, "--ca-file"},
		{"bare port to listen on", []string{"--data-dir", data, "--catalog", "a=" + dir, "--listen", "8080"}, "did you mean :8080"},
		{"listen without port", []string{"--data-dir", data, "--catalog", "a=" + dir, "--listen", "localhost"}, "--listen localhost: want host:port"},
		{"bare gRPC port", []string{"--data-dir", data, "--catalog", "a=" + dir, "--grpc-listen", "50051"}, "--grpc-listen 50051: want host:port; did you mean :50051"},
		{"bad insecure registry", []string{"--data-dir", data, "--catalog", "a=" + dir, "--insecure-registry", "http://x"}, "want host or host:port"},
		{"zero pull timeout", []string{"--data-dir", data, "--catalog", "a=" + dir, "--pull-timeout", "0s"}, "--pull-timeout 0s: want a positive duration"},
		{"negative pull timeout", []string{"--data-dir", data, "--catalog", "a=" + dir, "--pull-timeout", "-1m"}, "--pull-timeout -1m0s: want a positive duration"},
		{"catalog bytes not a quantity", []string{"--data-dir", data, "--catalog", "a=" + dir, "--max-catalog-bytes", "lots"}, `--max-catalog-bytes "lots": want a quantity of bytes above zero and at most 8Gi`},
		{"zero catalog bytes", []string{"--data-dir", data, "--catalog", "a=" + dir, "--max-catalog-bytes", "0"}, `--max-catalog-bytes "0": want a quantity`},
		{"catalog bytes above what is decompressed", []string{"--data-dir", data, "--catalog", "a=" + dir, "--max-catalog-bytes", "9Gi"}, `--max-catalog-bytes "9Gi": want a quantity`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseServe(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseServe(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("rel", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServe([]string{
		"--catalog", "demo=rel",
		"--catalog=other.example=" + other,
		"--catalog", "remote=registry.example.com:5000/catalogs/demo:v1",
		"--catalog", "git=git::https://git.example.com/org/catalogs.git//demo?ref=main",
		"--catalog", "archive=https://files.example.com/demo.tar.gz",
		"--catalog", "layout=oci:layout:v1",
		"--priority", "other.example=-5", "--priority", "remote=10",
		"--label", "remote=tier=prod", "--label", "remote=example.com/owner=team-a",
		"--data-dir", "data", "--watch", "--poll-interval", "90s", "--listen", "127.0.0.1:0",
		"--insecure-registry", "registry.example.com:5000",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Catalogs) != 6 {
		t.Fatalf("catalogs: %+v", cfg.Catalogs)
	}
	demo, oth, remote := cfg.Catalogs[0], cfg.Catalogs[1], cfg.Catalogs[2]
	for i, want := range []source.Spec{
		{Git: &source.Git{URL: "https://git.example.com/org/catalogs.git", Ref: "main", Directory: "demo"}},
		{HTTP: &source.HTTP{URL: "https://files.example.com/demo.tar.gz"}},
		{Layout: &source.Layout{Dir: filepath.Join(dir, "layout"), Ref: "v1"}},
	} {
		if got := cfg.Catalogs[3+i]; !reflect.DeepEqual(got.Source, want) {
			t.Errorf("%s = %s; want %s", got.Name, got.Source, want)
		}
	}
	if demo.Name != "demo" || !reflect.DeepEqual(demo.Source, source.Spec{Dir: filepath.Join(dir, "rel")}) || demo.Priority != 0 {
		t.Errorf("demo = %+v; want the absolute directory, priority 0", demo)
	}
	if oth.Name != "other.example" || !reflect.DeepEqual(oth.Source, source.Spec{Dir: other}) || oth.Priority != -5 {
		t.Errorf("other = %+v", oth)
	}
	if !reflect.DeepEqual(remote.Source, source.Spec{Image: "registry.example.com:5000/catalogs/demo:v1"}) || remote.Priority != 10 {
		t.Errorf("remote = %+v; want an image reference, priority 10", remote)
	}
	if want := map[string]string{"tier": "prod", "example.com/owner": "team-a"}; !maps.Equal(remote.Labels, want) || demo.Labels != nil {
		t.Errorf("labels: remote %v, demo %v; want remote %v, demo none", remote.Labels, demo.Labels, want)
	}
	if cfg.DataDir != "data" || !cfg.Watch || cfg.PollInterval != 90*time.Second || cfg.Listen != "127.0.0.1:0" {
		t.Errorf("cfg = %+v", cfg)
	}
	if len(cfg.InsecureRegistries) != 1 {
		t.Errorf("insecure registries %v", cfg.InsecureRegistries)
	}
}

func TestParseServeDefaults(t *testing.T) {
	cfg, err := parseServe([]string{"--catalog", "a=" + t.TempDir(), "--data-dir", "d"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:8080" || cfg.Watch || cfg.PollInterval != 0 || cfg.Catalogs[0].Source.Dir == "" {
		t.Errorf("defaults: %+v", cfg)
	}
}

// parseServe parses args as `catalogd serve` does.
func parseServe(args []string) (ServeConfig, error) {
	var opts ServeOptions
	rest, err := parseArgs(args, opts.BindFlags)
	if err != nil {
		return ServeConfig{}, err
	}
	return opts.Validate(rest)
}

// parseArgs parses args with the flags bind declares, as cobra does, and
// returns the positional arguments.
func parseArgs(args []string, bind func(*pflag.FlagSet)) ([]string, error) {
	fs := pflag.NewFlagSet("catalogd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bind(fs)
	err := fs.Parse(args)
	return fs.Args(), err
}

// TestRegistryFlags: every command that pulls images takes --pull-timeout
// and --max-catalog-bytes into the unpacker's configuration, with
// unpack's defaults when not given.
func TestRegistryFlags(t *testing.T) {
	dir := t.TempDir()
	commands := map[string]func(args []string) (RegistryConfig, error){
		"serve": func(args []string) (RegistryConfig, error) {
			cfg, err := parseServe(append(args, "--data-dir", "d", "--catalog", "a="+dir))
			return cfg.RegistryConfig, err
		},
		"manager": func(args []string) (RegistryConfig, error) {
			cfg, err := parseFlags(append(args, "--data-dir", "d"))
			return cfg.RegistryConfig, err
		},
		"validate": func(args []string) (RegistryConfig, error) {
			var opts ValidateOptions
			rest, err := parseArgs(append(args, dir), opts.BindFlags)
			if err != nil {
				return RegistryConfig{}, err
			}
			cfg, err := opts.Validate(rest)
			return cfg.RegistryConfig, err
		},
	}
	for command, parse := range commands {
		for _, tc := range []struct {
			args        []string
			wantTimeout time.Duration
			wantMax     int64
		}{
			{args: nil, wantTimeout: unpack.DefaultPullTimeout, wantMax: unpack.DefaultMaxTotalBytes},
			{args: []string{"--pull-timeout", "90s"}, wantTimeout: 90 * time.Second, wantMax: unpack.DefaultMaxTotalBytes},
			{args: []string{"--max-catalog-bytes", "2500Mi"}, wantTimeout: unpack.DefaultPullTimeout, wantMax: 2500 << 20},
			{args: []string{"--max-catalog-bytes", "3G"}, wantTimeout: unpack.DefaultPullTimeout, wantMax: 3_000_000_000},
		} {
			cfg, err := parse(tc.args)
			if err != nil {
				t.Fatalf("%s %q: %v", command, tc.args, err)
			}
			if cfg.PullTimeout != tc.wantTimeout || cfg.MaxCatalogBytes != tc.wantMax {
				t.Errorf("%s %q: PullTimeout %s, MaxCatalogBytes %d; want %s, %d", command, tc.args,
					cfg.PullTimeout, cfg.MaxCatalogBytes, tc.wantTimeout, tc.wantMax)
			}
		}
	}
}

// TestIncrementalIndexFlag: --incremental-index (on by default) of serve
// and manager reaches the store: with it on, a rebuild is given the live
// index to reuse, which the index records (an incremental build, or a
// reason why it was full after all); off, it is not (a full build, no
// reason).
func TestIncrementalIndexFlag(t *testing.T) {
	dir := copyDemo(t)
	commands := bothCommands(t, dir)
	for command, parse := range commands {
		for _, tc := range []struct {
			args []string
			want bool
		}{
			{args: nil, want: true},
			{args: []string{"--incremental-index=false"}, want: false},
			{args: []string{"--incremental-index=true"}, want: true},
		} {
			t.Run(fmt.Sprintf("%s %q", command, tc.args), func(t *testing.T) {
				cfg, err := parse(tc.args)
				if err != nil {
					t.Fatal(err)
				}
				core, err := cfg.Complete(logr.Discard())
				if err != nil {
					t.Fatal(err)
				}
				defer core.Close()
				core.Sync.Set(catalogsync.Spec{Name: "demo", Fetcher: catalogsync.DirFetcher{Path: dir}})
				for i, content := range []string{extraPackage, strings.ReplaceAll(extraPackage, "1.0.0", "1.0.1")} {
					writeFile(t, filepath.Join(dir, "zz-extra", "catalog.json"), content)
					if _, err := core.Sync.Sync(context.Background(), "demo", nil); err != nil {
						t.Fatal(err)
					}
					info, ok := core.Store.Info("demo")
					if !ok {
						t.Fatal("demo has no index")
					}
					reused := info.Build.Mode == "incremental" || info.Build.Reason != ""
					if want := tc.want && i > 0; reused != want {
						t.Errorf("build %d: %+v; want the live index given to the build: %v", i+1, info.Build, want)
					}
				}
			})
		}
	}
}

// TestUpgradeEdgesFlagRemoved: --upgrade-edges of serve and manager was
// removed with the semver upgrade edges it chose; passing it, with any
// value, fails saying so and why, rather than being ignored.
func TestUpgradeEdgesFlagRemoved(t *testing.T) {
	for command, parse := range bothCommands(t, copyDemo(t)) {
		for _, args := range [][]string{{"--upgrade-edges", "semver"}, {"--upgrade-edges=legacy"}} {
			t.Run(fmt.Sprintf("%s %q", command, args), func(t *testing.T) {
				_, err := parse(args)
				if err == nil || !strings.Contains(err.Error(), "--upgrade-edges") || !strings.Contains(err.Error(), "removed") ||
					!strings.Contains(err.Error(), "ForceSemverUpgradeConstraints") {
					t.Fatalf("error %v, want one naming --upgrade-edges and why it was removed", err)
				}
			})
		}
	}
}

// TestBundleReleaseSupportFlag: --bundle-release-support of serve and
// manager is how a /resolve that does not say reads releases, which the
// answer says; off unless set, as operator-controller's gate.
func TestBundleReleaseSupportFlag(t *testing.T) {
	for command, parse := range bothCommands(t, copyDemo(t)) {
		for _, tc := range []struct {
			args []string
			want bool
		}{
			{args: nil, want: false},
			{args: []string{"--bundle-release-support"}, want: true},
			{args: []string{"--bundle-release-support=false"}, want: false},
		} {
			t.Run(fmt.Sprintf("%s %q", command, tc.args), func(t *testing.T) {
				cfg, err := parse(tc.args)
				if err != nil {
					t.Fatal(err)
				}
				core, err := cfg.Complete(logr.Discard())
				if err != nil {
					t.Fatal(err)
				}
				defer core.Close()
				// No catalog is indexed: the answer is a failed resolution,
				// which still says how releases were read.
				rec := httptest.NewRecorder()
				core.API.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/resolve?package=aurora-cache", nil))
				var doc struct {
					BundleReleaseSupport *bool `json:"bundleReleaseSupport"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.BundleReleaseSupport == nil || *doc.BundleReleaseSupport != tc.want {
					t.Errorf("status %d (%v), want bundleReleaseSupport %v: %s", rec.Code, err, tc.want, rec.Body)
				}
			})
		}
	}
}

// bothCommands parses the arguments it is given as serve (serving the
// catalog in dir as demo) or manager would, each with a data directory of
// its own and a loopback address chosen by the kernel.
func bothCommands(t *testing.T, dir string) map[string]func(args []string) (Config, error) {
	return map[string]func(args []string) (Config, error){
		"serve": func(args []string) (Config, error) {
			cfg, err := parseServe(append(args, "--data-dir", t.TempDir(), "--catalog", "demo="+dir, "--listen", "127.0.0.1:0"))
			return cfg.Config, err
		},
		"manager": func(args []string) (Config, error) {
			cfg, err := parseFlags(append(args, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0"))
			return cfg.Config, err
		},
	}
}
