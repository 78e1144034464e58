package catalogsync

import (
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxErrorBytes bounds a catalog's LastError: it is copied into every
// /catalogs answer and every status update, and a crafted image can make an
// error message as long as it likes (a 4 MiB label, say).
const maxErrorBytes = 2048

// clean makes err fit to show to any client: the server's data directory is
// removed from paths (files below it are named relative to it), and the
// message is cut to maxErrorBytes on a character boundary.
func (s *Service) clean(err error) string {
	msg := err.Error()
	if dir := s.opts.DataDir; dir != "" {
		dir = filepath.Clean(dir)
		msg = strings.ReplaceAll(msg, dir+string(os.PathSeparator), "")
		msg = strings.ReplaceAll(msg, dir, ".")
	}
	return Truncate(msg, maxErrorBytes)
}

// Truncate cuts s to at most n bytes, on a UTF-8 boundary, marking the cut:
// how messages meant for clients (lastError, conditions) are bounded. When n
// leaves no room for the mark, s is cut without it, since the bound is what
// callers rely on; n <= 0 gives "".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " …(truncated)"
	if n < len(mark) {
		return s[:runeStart(s, max(n, 0))]
	}
	return s[:runeStart(s, n-len(mark))] + mark
}

// runeStart moves i (at most len(s)) back to the start of the rune it falls
// in, so that s[:i] does not end in part of a character.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
