package main

import (
	"bytes"
	"strings"
	"testing"
)

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
		{"serve help", []string{"serve", "-h"}, 0, "--catalog NAME=SOURCE", ""},
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
