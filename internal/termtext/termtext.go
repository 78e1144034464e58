// Package termtext makes text that a catalog wrote fit to print on a
// terminal. Every command that prints catalog text for a person
// (kubectl catalog's tables and descriptions, catalogd validate's problem
// lines) goes through Safe, so that a third-party catalog cannot drive the
// terminal of whoever reads about it.
package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// kubectlEscapes are the two characters kubectl's printers escape in what
// they print (k8s.io/cli-runtime's EscapeTerminal), spelled as kubectl
// spells them, so that a name reads the same in `kubectl get` and here.
// Written out rather than imported: that package would link a Kubernetes
// client into catalogd serve and validate (docs/architecture.md, "What the
// binary links").
var kubectlEscapes = strings.NewReplacer("\x1b", "^[", "\r", "\\r")

// Safe makes text that may come from a catalog fit to print on a
// terminal. A third-party image can put control sequences in any string: a
// description that retitles the window or clears the screen, a hyperlink
// whose text hides its target. kubectl's own escaping (kubectlEscapes)
// shows ESC as ^[ and CR as \r; every other
// control character is shown as a Go escape, since it leaves BEL (which
// ends an OSC sequence), the C1 controls some terminals obey as sequences,
// and newlines and tabs, which would forge rows and columns of a table.
// Bytes that are not UTF-8 are shown as \xNN for the same reason as C1.
func Safe(s string) string {
	s = kubectlEscapes.Replace(s)
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[0])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}
