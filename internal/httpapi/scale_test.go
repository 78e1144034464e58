package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/client"
)

// writeCatalog writes blobs, one JSON document a line, as a catalog
// directory and returns it.
func writeCatalog(t *testing.T, blobs []string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(strings.Join(blobs, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testBundle(pkg, version string) string {
	return fmt.Sprintf(`{"schema":"olm.bundle","name":"%s.v%s","package":"%s","image":"img/%s:%s","properties":[`+
		`{"type":"olm.package","value":{"packageName":"%s","version":"%s"}}]}`, pkg, version, pkg, pkg, version, pkg, version)
}

// TestRepeatedEntryUpgrades: an entry a channel lists twice gives its
// skipRange edge once.
func TestRepeatedEntryUpgrades(t *testing.T) {
	h := newHarness(t)
	h.add("cat", writeCatalog(t, []string{
		`{"schema":"olm.package","name":"p","defaultChannel":"c"}`,
		testBundle("p", "1.0.0"), testBundle("p", "2.0.0"),
		`{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":"p.v1.0.0"},` +
			`{"name":"p.v2.0.0","skipRange":"<2.0.0"},{"name":"p.v2.0.0","skipRange":"<2.0.0"}]}`,
	}), 0)
	resp, err := h.client.ListUpgradesWithResponse(context.Background(), "cat", "p", &client.ListUpgradesParams{From: "p.v1.0.0"})
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("upgrades: %v %s", err, resp.Body)
	}
	if got := fmt.Sprint(resp.JSON200.Items); len(resp.JSON200.Items) != 1 || fmt.Sprint(resp.JSON200.Items[0].Rules) != "[skipRange]" {
		t.Errorf("upgrades %s, want p.v2.0.0 in c by skipRange once", got)
	}
}

// TestRangeLimits checks that /all refuses Range lists that multiply a
// request's cost: more than maxRanges ranges, or overlapping ones.
func TestRangeLimits(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("%d-%d", 2*i, 2*i)
	}
	sixteen := make([]string, maxRanges)
	for i := range sixteen {
		sixteen[i] = fmt.Sprintf("%d-%d", 10*i, 10*i+4)
	}
	tests := []struct {
		name, header string
		status       int
		// maxBody bounds the answer's length.
		maxBody int
	}{
		{"1000 small ranges", "bytes=" + strings.Join(many, ","), http.StatusRequestedRangeNotSatisfiable, 1024},
		{"overlapping", "bytes=0-99,50-149", http.StatusRequestedRangeNotSatisfiable, 1024},
		{"the same range twice", "bytes=0-,0-", http.StatusRequestedRangeNotSatisfiable, 1024},
		{"suffix overlapping a range", "bytes=0-10,-1000000", http.StatusRequestedRangeNotSatisfiable, 1024},
		{"16 disjoint ranges", "bytes=" + strings.Join(sixteen, ","), http.StatusPartialContent, 16 * 1024},
		{"one range", "bytes=100-199", http.StatusPartialContent, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.get("/catalogs/demo/api/v1/all", "Range", tc.header, "Accept-Encoding", "identity")
			body := readAll(t, resp)
			if resp.StatusCode != tc.status || len(body) > tc.maxBody {
				t.Errorf("status %d, %d bytes; want %d and at most %d bytes", resp.StatusCode, len(body), tc.status, tc.maxBody)
			}
		})
	}
}
