package catalogcli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// kubeconfigFlags are kubectl's own flags (genericclioptions), worded as
// kubectl words them.
var kubeconfigFlags = map[string]bool{"cluster": true, "context": true, "kubeconfig": true, "user": true}

// TestHelp: every command's --help fits in 80 columns, names the kind of
// every value of its own flags (a placeholder such as URL or DIR, not
// "string"), and shows every default: pflag prints those that are not the
// type's zero value, and the usage of the others says what happens without
// the flag (or that it is required).
func TestHelp(t *testing.T) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		t.Run(cmd.CommandPath(), func(t *testing.T) {
			args := []string{"--help"}
			for c := cmd; c.HasParent(); c = c.Parent() {
				args = append([]string{c.Name()}, args...)
			}
			var out, errOut bytes.Buffer
			if code := Run(context.Background(), args, &out, &errOut); code != 0 {
				t.Fatalf("--help: exit code %d: %s", code, errOut.String())
			}
			for line := range strings.Lines(out.String()) {
				if n := utf8.RuneCountInString(strings.TrimSuffix(line, "\n")); n > 80 {
					t.Errorf("a line of %d columns: %q", n, line)
				}
			}
			check := func(f *pflag.Flag) {
				if f.Value.Type() == "bool" || kubeconfigFlags[f.Name] {
					return
				}
				if kind, _ := pflag.UnquoteUsage(f); strings.HasPrefix(kind, "string") {
					t.Errorf("--%s: its value is a %q, which names no kind", f.Name, kind)
				}
				if zero := f.DefValue == "" || f.DefValue == "0" || f.DefValue == "0s" || f.DefValue == "[]"; zero &&
					!strings.Contains(f.Usage, "default") && !strings.Contains(f.Usage, "required") {
					t.Errorf("--%s: %q shows no default", f.Name, f.Usage)
				}
			}
			cmd.LocalFlags().VisitAll(check)
			cmd.InheritedFlags().VisitAll(check)
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	var stdout, stderr bytes.Buffer
	walk(newRunner(&stdout, &stderr).root())
}
