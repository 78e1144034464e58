package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// swap makes dir the catalog's live index, recorded under digest.
func (h *harness) swap(catalog, dir, digest string) {
	h.t.Helper()
	if _, _, rebuilt, err := h.store.Update(context.Background(), catalog, index.Content{FS: os.DirFS(dir), Ref: dir, Digest: digest}); err != nil || !rebuilt {
		h.t.Fatalf("swap in %s as %s: rebuilt=%v, %v", dir, digest, rebuilt, err)
	}
}

// changesSince asks /changes and fails the test unless it answers 200.
func (h *harness) changesSince(catalog, since string) client.Changes {
	h.t.Helper()
	rsp, err := h.client.GetChangesWithResponse(context.Background(), catalog, &client.GetChangesParams{Since: since})
	if err != nil {
		h.t.Fatal(err)
	}
	if rsp.JSON200 == nil {
		h.t.Fatalf("changes since %s: status %d: %s", since, rsp.StatusCode(), rsp.Body)
	}
	return *rsp.JSON200
}

// wireChanges is what /changes should answer for want, with every list
// as the wire has it (never null).
func wireChanges(from, to string, want fbcchange.Changes) client.Changes {
	out := client.Changes{From: from, To: to, Added: nonNil(want.Added), Removed: nonNil(want.Removed), Changed: []client.PackageChange{}}
	names := make([]string, 0, len(want.Changed))
	for pkg := range want.Changed {
		names = append(names, pkg)
	}
	slices.Sort(names)
	dep := func(d fbcchange.Deprecation) client.DeprecationEntry {
		return client.DeprecationEntry{Schema: d.Schema, Name: d.Name, Message: d.Message}
	}
	for _, pkg := range names {
		c := want.Changed[pkg]
		out.Changed = append(out.Changed, client.PackageChange{Package: pkg, Detailed: true,
			ChannelsAdded: nonNil(c.ChannelsAdded), ChannelsRemoved: nonNil(c.ChannelsRemoved),
			Heads: convertAll(c.Heads, func(h fbcchange.Head) client.HeadChange {
				return client.HeadChange{Channel: h.Channel, Before: h.Before, After: h.After}
			}),
			BundlesAdded: nonNil(c.BundlesAdded), BundlesRemoved: nonNil(c.BundlesRemoved),
			DeprecationsAdded: convertAll(c.DeprecationsAdded, dep), DeprecationsRemoved: convertAll(c.DeprecationsRemoved, dep)})
	}
	return out
}

// checkChanges compares an answer with what the test computed, package by
// package; digests are checked against the package lists of both versions.
func checkChanges(t *testing.T, got, want client.Changes, before, after map[string]string) {
	t.Helper()
	if got.From != want.From || got.To != want.To {
		t.Errorf("from %s to %s, want from %s to %s", got.From, got.To, want.From, want.To)
	}
	if !slices.Equal(got.Added, want.Added) || !slices.Equal(got.Removed, want.Removed) {
		t.Errorf("added %v removed %v, want added %v removed %v", got.Added, got.Removed, want.Added, want.Removed)
	}
	var gotNames, wantNames []string
	for _, c := range got.Changed {
		gotNames = append(gotNames, c.Package)
	}
	for _, c := range want.Changed {
		wantNames = append(wantNames, c.Package)
	}
	if !slices.Equal(gotNames, wantNames) {
		t.Fatalf("changed %v, want %v", gotNames, wantNames)
	}
	for i, c := range got.Changed {
		if c.DigestBefore != before[c.Package] || c.DigestAfter != after[c.Package] || c.DigestBefore == c.DigestAfter {
			t.Errorf("%s: digests %s -> %s, the package lists say %s -> %s", c.Package, c.DigestBefore, c.DigestAfter, before[c.Package], after[c.Package])
		}
		w := want.Changed[i]
		c.DigestBefore, c.DigestAfter = "", ""
		if !reflect.DeepEqual(c, w) {
			g, _ := json.Marshal(c)
			wj, _ := json.Marshal(w)
			t.Errorf("%s:\n got %s\nwant %s", c.Package, g, wj)
		}
	}
}

// packageDigests lists the catalog's packages with their digests.
func (h *harness) packageDigests(catalog string) map[string]string {
	h.t.Helper()
	out := map[string]string{}
	var cont *string
	for {
		rsp, err := h.client.ListPackagesWithResponse(context.Background(), catalog, &client.ListPackagesParams{Limit: ptr(client.LimitParam(1000)), Continue: cont})
		if err != nil || rsp.JSON200 == nil {
			h.t.Fatalf("list packages: %v %s", err, rsp.Body)
		}
		for _, p := range rsp.JSON200.Items {
			if p.Digest == "" {
				h.t.Errorf("package %s has no digest", p.Name)
			}
			out[p.Name] = p.Digest
		}
		if rsp.JSON200.Continue == "" {
			return out
		}
		cont = &rsp.JSON200.Continue
	}
}

// packagePaths are the answers of one package whose ETags follow the
// package's digest.
func packagePaths(catalog, pkg string) []string {
	base := "/catalogs/" + catalog + "/packages/" + url.PathEscape(pkg)
	return []string{base, base + "/channels", base + "/bundles", "/catalogs/" + catalog + "/api/v1/metas?package=" + url.QueryEscape(pkg)}
}

// TestChanges swaps versions of a catalog with known differences under the
// server: v2 edits v1 (fbcchange.Edit), v3 is v2's content laid out in
// one YAML file in reverse order, v4 is v1's content again. /changes must
// say, item by item, what fbcchange.Diff computed from the directories;
// answers of unchanged packages stay 304 across the swap and those of
// changed ones do not; a version the history (3 long) no longer holds is
// 410 with the oldest it does.
func TestChanges(t *testing.T) {
	for _, fx := range []struct {
		name string
		dir  func(testing.TB) string
	}{
		{"generated", fbcfacts.Generated},
		{"community-v4.20", func(t testing.TB) string { return fbcfacts.SharedCommunity(t) }},
	} {
		t.Run(fx.name, func(t *testing.T) {
			v1Dir := fx.dir(t)
			v1 := fbcfacts.Load(t, v1Dir)
			blobs, edits := fbcchange.Edit(t, v1)
			v2Dir, v3Dir := filepath.Join(t.TempDir(), "v2"), filepath.Join(t.TempDir(), "v3")
			fbcchange.Write(t, v2Dir, blobs, fbcchange.PerPackage)
			fbcchange.Write(t, v3Dir, blobs, fbcchange.OneYAMLReversed)
			v2 := fbcfacts.Load(t, v2Dir)
			want := fbcchange.Diff(t, v1, v2)
			// The edits are what the independent diff sees: the test
			// would prove little if the two agreed on nothing.
			if !slices.Equal(want.Added, []string{edits.Added}) || !slices.Equal(want.Removed, []string{edits.Removed}) || len(want.Changed) != 4 {
				t.Fatalf("diff of the edited catalog = %+v, edits %+v", want, edits)
			}

			st, err := store.New(t.TempDir(), testr.New(t), store.WithHistory(3))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			h := newHarnessWith(t, st, st)
			h.reg.Put(catalogs.Catalog{Name: "cat", Source: v1Dir})
			h.swap("cat", v1Dir, "sha256:v1")
			d1 := h.packageDigests("cat")
			if got := h.changesSince("cat", "sha256:v1"); len(got.Added)+len(got.Removed)+len(got.Changed) != 0 {
				t.Errorf("changes since the live version: %+v", got)
			}
			etags := map[string]string{}
			for pkg := range v1.Packages {
				for _, p := range packagePaths("cat", pkg) {
					resp := h.get(p)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%s: status %d", p, resp.StatusCode)
					}
					etags[p] = resp.Header.Get("ETag")
				}
			}

			h.swap("cat", v2Dir, "sha256:v2")
			d2 := h.packageDigests("cat")
			checkChanges(t, h.changesSince("cat", "sha256:v1"), wireChanges("sha256:v1", "sha256:v2", want), d1, d2)
			for pkg := range v1.Packages {
				_, changed := want.Changed[pkg]
				wantStatus := http.StatusNotModified
				switch {
				case pkg == edits.Removed:
					wantStatus = http.StatusNotFound
				case changed:
					wantStatus = http.StatusOK
				}
				for _, p := range packagePaths("cat", pkg) {
					if pkg == edits.Removed && p == packagePaths("cat", pkg)[3] {
						continue // metas of no blob are an empty 200
					}
					if resp := h.get(p, "If-None-Match", etags[p]); resp.StatusCode != wantStatus {
						t.Errorf("%s after the swap with If-None-Match %s: status %d, want %d", p, etags[p], resp.StatusCode, wantStatus)
					}
				}
			}

			// The same content in another layout and order changes no
			// digest, and the history still answers from v1.
			h.swap("cat", v3Dir, "sha256:v3")
			if d3 := h.packageDigests("cat"); !reflect.DeepEqual(d3, d2) {
				t.Errorf("digests changed with the layout alone:\n%v\n%v", d2, d3)
			}
			if got := h.changesSince("cat", "sha256:v2"); len(got.Added)+len(got.Removed)+len(got.Changed) != 0 {
				t.Errorf("changes between two layouts of one content: %+v", got)
			}
			checkChanges(t, h.changesSince("cat", "sha256:v1"), wireChanges("sha256:v1", "sha256:v3", want), d1, d2)

			// Back to v1: v1 leaves the history of three, v2 answers the
			// way back.
			h.swap("cat", v1Dir, "sha256:v4")
			back := fbcchange.Diff(t, v2, v1)
			checkChanges(t, h.changesSince("cat", "sha256:v2"), wireChanges("sha256:v2", "sha256:v4", back), d2, d1)
			resp := h.get("/catalogs/cat/changes?since=sha256:v1")
			if resp.StatusCode != http.StatusGone {
				t.Fatalf("changes since an expired version: status %d, want 410", resp.StatusCode)
			}
			if p := decodeProblem(t, resp); p.Oldest != "sha256:v2" || p.Type != "/problems/version-gone" || p.Parameter != "since" {
				t.Errorf("410 problem = %+v, want oldest sha256:v2", p)
			}
		})
	}
}

// TestChangesParameters: since is required, bounded and a digest; a
// value that is no digest at all is a mistake in the request (400, saying
// what a digest looks like), not a version the server forgot (410).
func TestChangesParameters(t *testing.T) {
	h := newHarness(t)
	h.add("demo", demoDir, 0)
	for _, tc := range []struct {
		query  string
		status int
		// detail is what the problem's detail must say, if anything.
		detail string
	}{
		{"", http.StatusBadRequest, "since is required"},
		{"?since=", http.StatusBadRequest, "since is required"},
		{"?since=" + url.QueryEscape(string(make([]byte, 300))), http.StatusBadRequest, "at most 256"},
		{"?since=foo", http.StatusBadRequest, "sha256:"},
		{"?since=sha256:", http.StatusBadRequest, "sha256:"},
		{"?since=SHA256:abc", http.StatusBadRequest, "sha256:"},
		{"?since=sha256:never", http.StatusGone, "unknown or expired"},
		{"?since=sha256:demodemo", http.StatusOK, ""},
		{"?since=x&other=1", http.StatusBadRequest, ""},
	} {
		resp := h.get("/catalogs/demo/changes" + tc.query)
		if resp.StatusCode != tc.status {
			t.Errorf("changes%s: status %d, want %d", tc.query, resp.StatusCode, tc.status)
			continue
		}
		if tc.detail == "" {
			continue
		}
		if p := decodeProblem(t, resp); p.Parameter != "since" || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("changes%s: problem %+v, want one about since saying %q", tc.query, p, tc.detail)
		}
	}
}
