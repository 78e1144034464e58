package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		{"no equals", []string{"--data-dir", data, "--catalog", dir}, "want NAME=DIR or NAME=IMAGE"},
		{"empty value", []string{"--data-dir", data, "--catalog", "a="}, "want NAME=DIR or NAME=IMAGE"},
		{"upper-case name", []string{"--data-dir", data, "--catalog", "Demo=" + dir}, "not a DNS-1123 subdomain"},
		{"underscore name", []string{"--data-dir", data, "--catalog", "my_cat=" + dir}, "not a DNS-1123 subdomain"},
		{"empty name", []string{"--data-dir", data, "--catalog", "=" + dir}, "not a DNS-1123 subdomain"},
		{"duplicate name", []string{"--data-dir", data, "--catalog", "a=" + dir, "--catalog", "a=" + dir}, `catalog "a" is given twice`},
		{"missing dir", []string{"--data-dir", data, "--catalog", "a=" + filepath.Join(dir, "nope")}, "no directory"},
		{"missing relative dir", []string{"--data-dir", data, "--catalog", "a=test/testdata/dmeo"}, "no directory test/testdata/dmeo"},
		{"file, not dir", []string{"--data-dir", data, "--catalog", "a=" + file}, "is a file"},
		{"bad image", []string{"--data-dir", data, "--catalog", "a=quay.io/UPPER/Case:tag"}, "not an image reference"},
		{"priority without catalog", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "b=1"}, `no --catalog is named "b"`},
		{"priority not a number", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a=high"}, "not a 32-bit integer"},
		{"priority too big", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a=3000000000"}, "not a 32-bit integer"},
		{"priority twice", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a=1", "--priority", "a=2"}, "a priority twice"},
		{"priority no equals", []string{"--data-dir", data, "--catalog", "a=" + dir, "--priority", "a"}, "want NAME=N"},
		{"stray argument", []string{"--data-dir", data, "--catalog", "a=" + dir, "extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"--data-dir", data, "--catalog", "a=" + dir, "--wacth"}, "unknown flag: --wacth"},
		{"negative poll interval", []string{"--data-dir", data, "--catalog", "a=" + dir, "--poll-interval", "-1s"}, "--poll-interval -1s"},
		{"TLS key without certificate", []string{"--data-dir", data, "--catalog", "a=" + dir, "--tls-key", "k.pem"}, "--tls-cert and --tls-key go together"},
		{"missing CA file", []string{"--data-dir", data, "--catalog", "a=" + dir, "--ca-file", filepath.Join(dir, "nope.pem")}, "--ca-file"},
		{"bad insecure registry", []string{"--data-dir", data, "--catalog", "a=" + dir, "--insecure-registry", "http://x"}, "want host or host:port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseServe(tc.args)
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("parseServe = %v; want a usage error", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
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
		"--priority", "other.example=-5", "--priority", "remote=10",
		"--data-dir", "data", "--watch", "--poll-interval", "90s", "--listen", "127.0.0.1:0",
		"--insecure-registry", "registry.example.com:5000",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.catalogs) != 3 {
		t.Fatalf("catalogs: %+v", cfg.catalogs)
	}
	demo, oth, remote := cfg.catalogs[0], cfg.catalogs[1], cfg.catalogs[2]
	if demo.name != "demo" || demo.dir != filepath.Join(dir, "rel") || demo.image != nil || demo.priority != 0 {
		t.Errorf("demo = %+v; want the absolute directory, priority 0", demo)
	}
	if oth.name != "other.example" || oth.dir != other || oth.priority != -5 {
		t.Errorf("other = %+v", oth)
	}
	if remote.dir != "" || remote.image == nil || remote.image.Context().RegistryStr() != "registry.example.com:5000" || remote.priority != 10 {
		t.Errorf("remote = %+v; want an image reference, priority 10", remote)
	}
	if cfg.dataDir != "data" || !cfg.watch || cfg.pollInterval != 90*time.Second || cfg.listen != "127.0.0.1:0" {
		t.Errorf("cfg = %+v", cfg)
	}
	if len(cfg.insecureRegistries) != 1 || !cfg.hasImages() {
		t.Errorf("insecure registries %v, hasImages %v", cfg.insecureRegistries, cfg.hasImages())
	}
}

func TestParseServeDefaults(t *testing.T) {
	cfg, err := parseServe([]string{"--catalog", "a=" + t.TempDir(), "--data-dir", "d"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.listen != "127.0.0.1:8080" || cfg.watch || cfg.pollInterval != 0 || cfg.hasImages() {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no command", nil, 0, "Available Commands", ""},
		{"unknown command", []string{"serv"}, 2, "", `unknown command "serv"`},
		{"help", []string{"help"}, 0, "serve", ""},
		{"serve help", []string{"serve", "-h"}, 0, "--catalog NAME=DIR", ""},
		{"serve usage error", []string{"serve", "--catalog", "Bad=x"}, 2, "", "Run 'catalogd serve --help'"},
		{"serve bad verbosity", []string{"serve", "--catalog", "a=" + t.TempDir(), "--data-dir", t.TempDir(), "-v", "-1"}, 2, "", "want a level from 0 to 10"},
		{"serve bad log format", []string{"serve", "--catalog", "a=" + t.TempDir(), "--data-dir", t.TempDir(), "--log-format", "xml"}, 2, "", "want console or json"},
		{"manager help", []string{"manager", "-h"}, 0, "--tls-cert", ""},
		{"manager usage error", []string{"manager"}, 2, "", "--data-dir is required"},
		{"version", []string{"version"}, 0, "catalogd devel", ""},
		{"serve cannot listen", []string{"serve", "--catalog", "a=" + t.TempDir(), "--data-dir", t.TempDir(), "--listen", "256.0.0.1:1"}, 1, "", "listen on 256.0.0.1:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code %d, want %d (stderr: %s)", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}
