package index

import (
	"fmt"
	"strings"
	"testing/fstest"
)

// chainCatalog is an FBC with one package whose single channel holds n
// bundles, each replacing the previous one: the shape whose validation
// once took memory quadratic in n.
func chainCatalog(pkg string, n int) fstest.MapFS {
	var b strings.Builder
	fmt.Fprintf(&b, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
	var entries strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			entries.WriteString(",")
		}
		fmt.Fprintf(&entries, `{"name":"%s.v1.0.%d"`, pkg, i)
		if i > 1 {
			fmt.Fprintf(&entries, `,"replaces":"%s.v1.0.%d"`, pkg, i-1)
		}
		entries.WriteString("}")
		fmt.Fprintf(&b, `{"schema":"olm.bundle","name":"%s.v1.0.%d","package":%q,"image":"example.com/%s:1.0.%d",`+
			`"properties":[{"type":"olm.package","value":{"packageName":%q,"version":"1.0.%d"}}]}`+"\n",
			pkg, i, pkg, pkg, i, pkg, i)
	}
	fmt.Fprintf(&b, `{"schema":"olm.channel","name":"stable","package":%q,"entries":[%s]}`+"\n", pkg, entries.String())
	return fstest.MapFS{pkg + "/catalog.json": {Data: []byte(b.String())}}
}
