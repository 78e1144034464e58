package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/catalogd/catalogd/test/helptest"
)

func TestRunExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
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
		{"serve help", []string{"serve", "-h"}, 0, "--catalog NAME=SOURCE", ""},
		{"serve usage error", []string{"serve", "--catalog", "Bad=x"}, 2, "", "Run 'catalogd serve --help'"},
		{"serve bad verbosity", []string{"serve", "--catalog", "a=" + t.TempDir(), "--data-dir", t.TempDir(), "-v", "-1"}, 2, "", "want a level from 0 to 10"},
		{"serve bad log format", []string{"serve", "--catalog", "a=" + t.TempDir(), "--data-dir", t.TempDir(), "--log-format", "xml"}, 2, "", "want console or json"},
		{"manager help", []string{"manager", "-h"}, 0, "--tls-cert", ""},
		{"manager usage error", []string{"manager"}, 2, "", "--data-dir is required"},
		{"version", []string{"version"}, 0, "catalogd devel", ""},
		{"--version", []string{"--version"}, 0, "catalogd devel\n", ""},
		{"validate an empty directory", []string{"validate", t.TempDir()}, 1, "holds no package; is its source the file-based catalog's directory?", "1 problem(s) found"},
		// A catalog that cannot be read is 1, as validate --help says; 2
		// is for mistakes in the form of the command line.
		{"validate a directory that is not there", []string{"validate", missing}, 1, "", "no directory " + missing},
		{"serve a directory that is not there", []string{"serve", "--catalog", "a=" + missing, "--data-dir", t.TempDir()}, 1, "", "no directory " + missing},
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

// TestHelp: every command's --help keeps helptest's rules (80 columns,
// every value's kind and every default named), and manager's says which
// binary can serve --package-api.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	root := newRoot(&stdout, &stderr)
	for _, cmd := range append([]*cobra.Command{root}, root.Commands()...) {
		t.Run(cmd.Name(), func(t *testing.T) {
			var out bytes.Buffer
			if code := run(append(strings.Fields(cmd.CommandPath())[1:], "--help"), &out, &stderr); code != 0 {
				t.Fatalf("%s --help: exit code %d: %s", cmd.CommandPath(), code, stderr.String())
			}
			helptest.Check(t, cmd, out.String(), nil)
		})
	}
	manager, _, err := root.Find([]string{"manager"})
	if err != nil {
		t.Fatal(err)
	}
	if usage := manager.Flag("package-api").Usage; !strings.Contains(usage, "catalogd-package-api") {
		t.Errorf("manager --package-api: %q does not say that only catalogd-package-api serves it", usage)
	}
}

// TestREADMENamesServeFlags: the README's list of serve's flags, where a
// new user looks first, leaves none out.
func TestREADMENamesServeFlags(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	serve, _, err := newRoot(&stdout, &stderr).Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(f *pflag.Flag) {
		if f.Name == "help" || f.Hidden {
			return
		}
		if !bytes.Contains(readme, []byte("--"+f.Name)) && (f.Shorthand == "" || !bytes.Contains(readme, []byte("-"+f.Shorthand+" "))) {
			t.Errorf("the README does not name serve's --%s", f.Name)
		}
	}
	serve.LocalFlags().VisitAll(check)
	serve.InheritedFlags().VisitAll(check)
}
