package index

import (
	"net/url"
	"path/filepath"
)

// FileURI returns the SQLite URI ("file:" form) that opens the file at path
// with the given query parameters (SQLite's own, such as mode=ro, and the
// driver's _pragma). The path is percent-escaped: SQLite reads a URI's path
// up to the first '?' or '#' and decodes %HH, so a path holding '?', '#' or
// '%' written into a URI as it is names another file.
func FileURI(path string, params url.Values) string {
	// Clean turns a leading "//" into "/", which SQLite would otherwise
	// read as the start of an authority.
	escaped := (&url.URL{Path: filepath.ToSlash(filepath.Clean(path))}).EscapedPath()
	uri := "file:" + escaped
	if len(params) > 0 {
		uri += "?" + params.Encode()
	}
	return uri
}
