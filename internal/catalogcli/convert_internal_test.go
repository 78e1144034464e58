package catalogcli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/client"
)

// kubectl catalog catalogs -c NAME -o wide shows how the catalog's index
// was built, in a column of its own.
func TestCatalogDetailShowsBuild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build client.IndexBuild
		want  string
	}{
		{name: "not indexed", want: "<none>"},
		{name: "incremental", build: client.IndexBuild{Mode: client.IndexBuildModeIncremental, PackagesRebuilt: 1}, want: "incremental, 1 package"},
		{name: "full with a reason", build: client.IndexBuild{Mode: client.IndexBuildModeFull, PackagesRebuilt: 300, Reason: "62 of 300 packages changed"},
			want: "full, 300 packages (62 of 300 packages changed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			o := outputFlags{format: "wide"}
			if _, err := o.print(&out, []answer{{catalog: "c", obj: &client.CatalogDetail{Name: "c", Build: tc.build}}}, false); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 || !strings.HasSuffix(lines[0], "BUILD") || !strings.HasSuffix(strings.TrimSpace(lines[1]), tc.want) {
				t.Errorf("output:\n%s\nwant a BUILD column holding %q", out.String(), tc.want)
			}
		})
	}
}
