package httpsource

import (
	"strings"
	"testing"
)

// FuzzFormOf: whatever the path and Content-Type, the answer is an archive,
// a file name the extractor takes as a plain name, or an error listing the
// accepted forms.
func FuzzFormOf(f *testing.F) {
	for _, seed := range [][2]string{
		{"/c.tar.gz", ""},
		{"/x/One.JSON", ""},
		{"/download", "application/gzip"},
		{"/api", "application/json; charset=utf-8"},
		{"/..json", "text/html"},
		{"/", ""},
		{"/.wh.x.yaml", "application/yaml"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, urlPath, contentType string) {
		got, err := formOf(contentType, urlPath)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), acceptedForms) {
				t.Fatalf("error without the accepted forms: %v", err)
			}
		case got.archive:
			if got.name != "" {
				t.Fatalf("an archive with a name: %+v", got)
			}
		case !validFileName(got.name) || strings.Contains(got.name, "/"):
			t.Fatalf("file name %q", got.name)
		}
	})
}
