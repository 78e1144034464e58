package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// TestIncrementalAnswersEqualFull applies random sequences of edits to a
// catalog directory and, after each, updates two stores from it: one
// building incrementally from its live index, one building every index in
// full. Every route of the API must then answer byte for byte alike from
// both (/api/v1/all and /metas in gzip too, decompressed), but for when
// and how each index was built; and a build must fail in one exactly when
// it fails in the other.
func TestIncrementalAnswersEqualFull(t *testing.T) {
	type source struct {
		name  string
		dir   func(t *testing.T) string
		steps int
		seeds []uint64
	}
	sources := []source{
		{name: "demo", dir: func(*testing.T) string { return demoDir }, steps: 12, seeds: []uint64{1, 2}},
		{name: "generated", dir: func(t *testing.T) string {
			dir := t.TempDir()
			if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 10, Bundles: 50, Seed: 7}); err != nil {
				t.Fatal(err)
			}
			return dir
		}, steps: 10, seeds: []uint64{3}},
		{name: "community", dir: func(t *testing.T) string { return fbcfacts.SharedCommunity(t) }, steps: 4, seeds: []uint64{4}},
	}
	// CATALOGD_SLOW (make test-slow) makes every sequence three times as
	// long.
	if os.Getenv("CATALOGD_SLOW") != "" {
		for i := range sources {
			sources[i].steps *= 3
		}
	}
	if testing.Short() {
		sources = sources[:1]
	}
	for _, src := range sources {
		for _, seed := range src.seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", src.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, seed))
				m := fbcchange.ReadModel(t, src.dir(t))
				// Three packages to a file, but one on a small catalog,
				// where a file of three would be most of it: a change to
				// one would then make the build full.
				perFile := 3
				if len(m.Packages()) <= 10 {
					perFile = 1
				}
				m.Group(perFile)
				dir := filepath.Join(t.TempDir(), "catalog")
				m.Write(t, dir)
				tw := newTwin(t)
				var digests []string
				var before *fbcfacts.Catalog
				modes := map[string]int{}
				for step := 0; step <= src.steps; step++ {
					what := "the first index"
					if step > 0 {
						for what = ""; what == ""; {
							what = m.Edit(t, rng, "", step)
						}
						m.Write(t, dir)
					}
					digest, build, failed := tw.update(t, dir)
					t.Logf("step %d: %s (build failed: %v; %+v)", step, what, failed, build)
					modes[build.Mode]++
					if !failed {
						digests = append(digests, digest)
					}
					now := m.Facts(t)
					tw.compare(t, what, routes(now, before, digests, rng))
					if !failed {
						before = now
					}
				}
				// Otherwise the sequence compared full builds with full
				// builds.
				if modes[index.ModeIncremental] == 0 {
					t.Errorf("no build was incremental: %v", modes)
				}
			})
		}
	}
}

// side is one store behind an API server of its own.
type side struct {
	name  string
	store *store.Store
	cache *catalogdir.Cache
	srv   *httptest.Server
}

// twin is the store building incrementally and the one building in full.
type twin struct{ sides [2]*side }

func newTwin(t *testing.T) *twin {
	tw := &twin{}
	for i, incremental := range []bool{true, false} {
		s, err := store.New(t.TempDir(), testr.NewWithOptions(t, testr.Options{Verbosity: 0}), store.WithIncremental(incremental))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		table := catalogs.NewTable()
		table.MarkLoaded()
		table.Put(catalogs.Catalog{Name: "c", Source: "dir"})
		srv := httptest.NewServer(New(table, s, Options{Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0})}))
		t.Cleanup(srv.Close)
		sd := &side{name: "full", store: s, srv: srv}
		if incremental {
			// The incremental side reads the directory as --watch does:
			// through a hash cache, hashing only files that changed.
			sd.name, sd.cache = "incremental", catalogdir.NewCache()
		}
		tw.sides[i] = sd
	}
	return tw
}

// update indexes dir in both stores. The outcome must agree: both fail,
// or both serve the same digest.
// build is how the incremental side built (or tried to build) its index.
func (tw *twin) update(t *testing.T, dir string) (digest string, build index.BuildMode, failed bool) {
	t.Helper()
	var errs [2]error
	var digests [2]string
	for i, sd := range tw.sides {
		src, err := catalogdir.Read(context.Background(), dir, sd.cache)
		if err != nil {
			t.Fatalf("%s: read %s: %v", sd.name, dir, err)
		}
		info, stats, _, err := sd.store.Update(context.Background(), "c", src)
		errs[i], digests[i] = err, info.Digest
		if i == 0 {
			build = stats.Build
		}
	}
	if (errs[0] == nil) != (errs[1] == nil) {
		t.Fatalf("the builds disagree: incremental %v; full %v", errs[0], errs[1])
	}
	if errs[0] != nil {
		return "", build, true
	}
	if digests[0] != digests[1] {
		t.Fatalf("incremental serves %s, full %s", digests[0], digests[1])
	}
	return digests[0], build, false
}

// request is one GET; gzip asks for the gzip encoding.
type request struct {
	path string
	gzip bool
}

// answer is what compare compares of an answer.
type answer struct {
	status                int
	contentType, encoding string
	etag                  string
	body                  []byte
}

func (tw *twin) compare(t *testing.T, what string, reqs []request) {
	t.Helper()
	differ := 0
	for _, r := range reqs {
		var got [2]answer
		for i, sd := range tw.sides {
			got[i] = fetch(t, sd.srv.URL, r)
		}
		if !equalAnswers(got[0], got[1]) {
			differ++
			if differ <= 5 {
				t.Errorf("after %s: GET %s (gzip %v) answers differ:\n%s: %d %s %s %s\n%s\n%s: %d %s %s %s\n%s",
					what, r.path, r.gzip, tw.sides[0].name, got[0].status, got[0].contentType, got[0].encoding, got[0].etag, excerpt(got[0].body),
					tw.sides[1].name, got[1].status, got[1].contentType, got[1].encoding, got[1].etag, excerpt(got[1].body))
			}
		}
	}
	if differ > 5 {
		t.Errorf("after %s: %d of %d answers differ", what, differ, len(reqs))
	}
}

func equalAnswers(a, b answer) bool {
	return a.status == b.status && a.contentType == b.contentType && a.encoding == b.encoding && a.etag == b.etag && bytes.Equal(a.body, b.body)
}

func excerpt(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// noCompression leaves gzip answers compressed, as a client that asked
// for them gets them.
var noCompression = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// fetch GETs r; a gzip body is decompressed, and the description of a
// catalog is taken without when and how its index was built, the only
// things in which the two stores may differ.
func fetch(t *testing.T, base string, r request) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+r.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := noCompression.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), encoding: resp.Header.Get("Content-Encoding"),
		etag: resp.Header.Get("ETag"), body: body}
	if a.encoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("GET %s: %v", r.path, err)
		}
		if a.body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("GET %s: decompress: %v", r.path, err)
		}
	}
	if p := strings.TrimSuffix(r.path, "/"); (p == "/catalogs" || p == "/catalogs/c") && a.status == http.StatusOK {
		a.body, a.etag = withoutBuild(t, a.body), ""
	}
	return a
}

// withoutBuild drops indexedAt and build from a catalog, or from each of
// a list's items.
func withoutBuild(t *testing.T, body []byte) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	drop := func(m map[string]any) {
		delete(m, "indexedAt")
		delete(m, "build")
	}
	drop(doc)
	if items, ok := doc["items"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				drop(m)
			}
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// routes lists the requests to compare: every route of the API, for every
// package of the catalog now and before (removed ones answer 404 alike) on
// small catalogs, and on large ones for the packages that changed and a
// sample of the others; changes since each earlier version.
func routes(now, before *fbcfacts.Catalog, digests []string, rng *rand.Rand) []request {
	const c = "/catalogs/c"
	var reqs []request
	add := func(gzip bool, path string) {
		reqs = append(reqs, request{path: path, gzip: gzip})
	}
	q := url.QueryEscape
	for _, gz := range []bool{false, true} {
		add(gz, c+"/api/v1/all")
		add(gz, c+"/api/v1/metas")
		for _, schema := range []string{"olm.package", "olm.channel", "olm.bundle", "olm.deprecations"} {
			add(gz, fmt.Sprintf(c+"/api/v1/metas?schema=%s", schema))
		}
	}
	add(false, "/")
	add(false, "/catalogs")
	add(false, c)
	add(false, c+"/packages")
	add(false, c+"/packages?limit=2")
	for _, d := range digests[max(0, len(digests)-4):] {
		add(false, fmt.Sprintf(c+"/changes?since=%s", q(d)))
	}
	pkgs := map[string]bool{}
	for p := range now.Packages {
		pkgs[p] = true
	}
	if before != nil {
		for p := range before.Packages {
			pkgs[p] = true
		}
	}
	names := slices.Sorted(maps.Keys(pkgs))
	if len(names) > 40 {
		// Every package that changed, and a sample of the others.
		var keep []string
		for _, p := range names {
			if (before != nil && packageChanged(now, before, p)) || rng.IntN(len(names)) < 8 {
				keep = append(keep, p)
			}
		}
		names = keep
	}
	words := map[string]bool{}
	for _, p := range names {
		pp := c + "/packages/" + url.PathEscape(p)
		add(false, pp)
		add(false, pp+"/icon")
		add(false, pp+"/channels")
		add(false, pp+"/bundles")
		add(false, pp+"/bundles?version="+q(">=0.1.0"))
		add(false, fmt.Sprintf("/resolve?package=%s", q(p)))
		add(false, fmt.Sprintf(c+"/resolve?package=%s", q(p)))
		add(true, fmt.Sprintf(c+"/api/v1/metas?package=%s", q(p)))
		add(false, fmt.Sprintf(c+"/packages?name=%s", q(p)))
		if w, _, _ := strings.Cut(p, "-"); len(w) > 2 {
			words[w] = true
		}
		for _, f := range []*fbcfacts.Catalog{now, before} {
			if f == nil {
				continue
			}
			for ch := range f.Channels[p] {
				add(false, pp+"/channels/"+url.PathEscape(ch))
				add(false, pp+"/bundles?channel="+q(ch))
			}
			bundles := slices.Sorted(maps.Keys(f.Bundles[p]))
			if len(bundles) > 12 {
				bundles = bundles[len(bundles)-12:]
			}
			for _, b := range bundles {
				add(false, pp+"/bundles/"+url.PathEscape(b))
				bundle := f.Bundles[p][b]
				if v := bundle.Version(); v != "" {
					add(false, pp+"/upgrades?from="+q(v))
					add(false, fmt.Sprintf("/resolve?package=%s&installed=%s", q(p), q(v)))
				}
				for _, g := range bundle.GVKs("olm.gvk") {
					add(false, fmt.Sprintf(c+"/providers?group=%s&version=%s&kind=%s", q(g.Group), q(g.Version), q(g.Kind)))
					add(false, fmt.Sprintf("/providers?group=%s&version=%s&kind=%s&latest=true", q(g.Group), q(g.Version), q(g.Kind)))
				}
			}
		}
	}
	for _, w := range slices.Sorted(maps.Keys(words))[:min(len(words), 5)] {
		add(false, fmt.Sprintf(c+"/packages?q=%s", q(w)))
	}
	return reqs
}

// packageChanged says whether the blobs of package p differ between two
// versions of a catalog.
func packageChanged(a, b *fbcfacts.Catalog, p string) bool {
	of := func(c *fbcfacts.Catalog) []byte {
		var docs []map[string]any
		for _, bl := range c.Blobs {
			if fbcchange.Owner(bl) == p {
				docs = append(docs, bl.Doc)
			}
		}
		out, _ := json.Marshal(docs)
		return out
	}
	return !bytes.Equal(of(a), of(b))
}
