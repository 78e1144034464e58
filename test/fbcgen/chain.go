package fbcgen

import (
	"fmt"
	"strings"
	"testing/fstest"
)

// ReplacesChain is a catalog of one package, pkg, whose single channel
// "stable" holds n bundles pkg.v1.0.1 … pkg.v1.0.n (versions 1.0.1 …
// 1.0.n), each replacing the one before: the longest upgrade graph n
// bundles can make, the shape whose validation once took memory quadratic
// in n. With skipRanges, every entry after the first also skips every
// older version by skipRange, so that the oldest bundle has n-1 upgrades.
func ReplacesChain(pkg string, n int, skipRanges bool) fstest.MapFS {
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
			if skipRanges {
				fmt.Fprintf(&entries, `,"skipRange":"<1.0.%d"`, i)
			}
		}
		entries.WriteString("}")
		fmt.Fprintf(&b, `{"schema":"olm.bundle","name":"%s.v1.0.%d","package":%q,"image":"example.com/%s:1.0.%d",`+
			`"properties":[{"type":"olm.package","value":{"packageName":%q,"version":"1.0.%d"}}]}`+"\n",
			pkg, i, pkg, pkg, i, pkg, i)
	}
	fmt.Fprintf(&b, `{"schema":"olm.channel","name":"stable","package":%q,"entries":[%s]}`+"\n", pkg, entries.String())
	return fstest.MapFS{pkg + "/catalog.json": {Data: []byte(b.String())}}
}
