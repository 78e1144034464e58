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
// how messages meant for clients (lastError, conditions) are bounded.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " …(truncated)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
