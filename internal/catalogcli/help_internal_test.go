package catalogcli

import (
	"bytes"
	"context"
	"testing"

	"github.com/spf13/cobra"

	"github.com/catalogd/catalogd/test/helptest"
)

// kubeconfigFlags are kubectl's own flags (genericclioptions), worded as
// kubectl words them.
var kubeconfigFlags = map[string]bool{"cluster": true, "context": true, "kubeconfig": true, "user": true}

// TestHelp: every command's --help keeps helptest's rules (80 columns,
// every value's kind and every default named) for the flags of its own.
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
			helptest.Check(t, cmd, out.String(), kubeconfigFlags)
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	var stdout, stderr bytes.Buffer
	walk(newRunner(&stdout, &stderr).root())
}
