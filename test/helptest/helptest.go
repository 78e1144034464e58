// Package helptest holds the rules every command's --help keeps, for the
// tests of catalogd's and kubectl catalog's command trees: it fits in 80
// columns, names the kind of every flag's value, and shows every default.
package helptest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Check fails t for each line of help, cmd's --help, wider than 80
// columns, and for each flag of cmd (its own and inherited, but those
// skip names) whose value's placeholder is the type's name "string"
// rather than a kind (FILE, URL, legacy|semver), or whose default is the
// type's zero value, which pflag does not print, without a usage that says
// what happens without the flag (or that it is required).
func Check(t *testing.T, cmd *cobra.Command, help string, skip map[string]bool) {
	t.Helper()
	for line := range strings.Lines(help) {
		if n := utf8.RuneCountInString(strings.TrimSuffix(line, "\n")); n > 80 {
			t.Errorf("%s --help: a line of %d columns: %q", cmd.CommandPath(), n, line)
		}
	}
	check := func(f *pflag.Flag) {
		// A hidden flag is not in help (a removed flag kept only to fail
		// saying why), so it has no help to keep to these rules.
		if f.Value.Type() == "bool" || f.Hidden || skip[f.Name] {
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
}
