package httpsource

import (
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
)

// form is what a URL serves: an archive of a catalog directory, or one FBC
// file, named name in the catalog.
type form struct {
	archive bool
	name    string
}

// acceptedForms is said in every refusal of what a URL serves.
const acceptedForms = "want a .tar, .tar.gz or .tgz archive of a catalog directory, or one .json, .yaml or .yml FBC file (told by the URL path's suffix or, failing that, the Content-Type)"

// errUnknownForm says what a URL serves is none of the accepted forms.
var errUnknownForm = errors.New("cannot tell what the URL serves")

// formOf tells the form from the suffix of the first of urlPaths that has
// a known one (the URL's path, then the path it redirected to), or else
// from the response's Content-Type.
func formOf(contentType string, urlPaths ...string) (form, error) {
	for _, p := range urlPaths {
		base := path.Base(p)
		lower := strings.ToLower(base)
		switch {
		case strings.HasSuffix(lower, ".tar"), strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
			return form{archive: true}, nil
		case strings.HasSuffix(lower, ".json"), strings.HasSuffix(lower, ".yaml"), strings.HasSuffix(lower, ".yml"):
			if validFileName(base) {
				return form{name: base}, nil
			}
		}
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return form{}, fmt.Errorf("%w (Content-Type %q): %s", errUnknownForm, contentType, acceptedForms)
	}
	switch mediaType {
	case "application/x-tar", "application/gzip", "application/x-gzip", "application/x-gtar", "application/x-compressed-tar", "application/x-tgz":
		return form{archive: true}, nil
	case "application/json":
		return form{name: "catalog.json"}, nil
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return form{name: "catalog.yaml"}, nil
	}
	return form{}, fmt.Errorf("%w (Content-Type %q): %s", errUnknownForm, mediaType, acceptedForms)
}

// validFileName reports whether name, the last element of a URL path, can
// name the one file of a catalog: the extractor would refuse the others,
// with a message about an archive the user never made.
func validFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") && !strings.HasPrefix(name, ".wh.")
}
