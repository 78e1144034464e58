package termtext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"k8s.io/cli-runtime/pkg/printers"
)

// TestSafe covers what the end-to-end test of hostile catalog text
// does not reach: the control characters kubectl's escaping leaves, bytes
// that are not UTF-8, and text that must pass unchanged.
func TestSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain text, é, 日本, 🙂", "plain text, é, 日本, 🙂"},
		{"U+FFFD itself: \uFFFD", "U+FFFD itself: \uFFFD"},
		{"\x1b[31mred", "^[[31mred"},
		{"a\rb", `a\rb`},
		{"\x1b]0;title\x07", `^[]0;title\a`},
		{"row\nforged\trow", `row\nforged\trow`},
		{"NUL\x00 DEL\x7f", `NUL\x00 DEL\x7f`},
		{"C1 CSI \u009b31m", `C1 CSI \u009b31m`},
		{"raw byte \x9b31m and \xff", `raw byte \x9b31m and \xff`},
	} {
		if got := Safe(tc.in); got != tc.want {
			t.Errorf("Safe(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzSafe: whatever the input, the output is valid UTF-8 without
// a control character.
func FuzzSafe(f *testing.F) {
	for _, s := range []string{"\x1b]8;;https://x/\x1b\\t\x1b]8;;\x1b\\", "\xc2\x9b", "\xe2\x80", "a\r\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Safe(s)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, unicode.IsControl) {
			t.Fatalf("Safe(%q) = %q", s, got)
		}
	})
}

// TestKubectlEscapesAsKubectl: where kubectl's printers escape a string
// and leave nothing else a terminal obeys (ESC and CR among printable
// text), Safe writes what kubectl writes, so that a name reads the same in
// `kubectl get` and in catalogd's output.
func TestKubectlEscapesAsKubectl(t *testing.T) {
	for _, s := range []string{"plain", "\x1b[31mred\x1b[0m", "over\rwrite", "\r\x1b\r\x1b", "^[ stays", `\r stays`, "é\x1bü\r"} {
		if got, want := Safe(s), printers.EscapeTerminal(s); got != want {
			t.Errorf("Safe(%q) = %q, kubectl's printers write %q", s, got, want)
		}
	}
}
