package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// TestSkipRangesNotMaterialised checks that an index grows with a
// catalog's entries, not with entries times bundles: a package of n
// versions whose every entry has a skipRange over all older versions has
// n²/2 skipRange edges, which the build used to store one row each (5,000
// bundles took 2 GiB to build and 518 MB on disk). Ranges are now kept as
// written and evaluated when read (internal/httpapi's upgrades).
func TestSkipRangesNotMaterialised(t *testing.T) {
	const n = 800
	var b strings.Builder
	b.WriteString(`{"schema":"olm.package","name":"p","defaultChannel":"c"}` + "\n")
	var entries []string
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"schema":"olm.bundle","name":"p.v%d.0.0","package":"p","image":"i","properties":[`+
			`{"type":"olm.package","value":{"packageName":"p","version":"%d.0.0"}}]}`+"\n", i, i)
		e := fmt.Sprintf(`{"name":"p.v%d.0.0"`, i)
		if i > 1 {
			e += fmt.Sprintf(`,"replaces":"p.v%d.0.0","skipRange":"<%d.0.0"`, i-1, i)
		}
		entries = append(entries, e+"}")
	}
	b.WriteString(`{"schema":"olm.channel","name":"c","package":"p","entries":[` + strings.Join(entries, ",") + "]}\n")
	catalog := b.String()

	path := filepath.Join(t.TempDir(), "index.db")
	if _, err := Build(context.Background(), path, Content{FS: fstest.MapFS{"c.json": {Data: []byte(catalog)}}, Ref: "t", Digest: "sha256:t"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// The index holds the blobs themselves, their parts and secondary
	// indexes: a few times the catalog's bytes. With n²/2 edge rows it
	// was 65 times.
	if limit := int64(8 * len(catalog)); fi.Size() > limit {
		t.Errorf("index of a %d-byte catalog is %d bytes, want at most %d: it grows faster than the catalog", len(catalog), fi.Size(), limit)
	}
}
