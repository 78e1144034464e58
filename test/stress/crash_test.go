package stress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/registrytest"
)

// etagBook checks that ETags and contents correspond one to one: an ETag
// seen with one version's body must never come with another's, and a
// version must always carry the same ETag. It learns the pairs as they come,
// so it needs no knowledge of how catalogd makes ETags.
type etagBook struct {
	byTag     map[string]string
	byVersion map[string]string
}

func newETagBook() *etagBook {
	return &etagBook{byTag: map[string]string{}, byVersion: map[string]string{}}
}

// see records that etag came with version v's body in one representation
// (identity or gzip, whose ETags differ) and returns an error if that
// contradicts an earlier answer.
func (b *etagBook) see(etag string, v *version, gzip bool) error {
	if etag == "" {
		return errors.New("answer without an ETag")
	}
	key := v.name + " (identity)"
	if gzip {
		key = v.name + " (gzip)"
	}
	if got, ok := b.byTag[etag]; ok && got != key {
		return errors.New("ETag " + etag + " came with version " + key + ", and earlier with version " + got)
	}
	if got, ok := b.byVersion[key]; ok && got != etag {
		return errors.New("version " + key + " came with ETag " + etag + ", and earlier with " + got)
	}
	b.byTag[etag], b.byVersion[key] = key, etag
	return nil
}

// pointAt makes link a symbolic link to target, atomically: the catalog
// path the server is given stays the same while its content changes.
func pointAt(t *testing.T, link, target string) {
	t.Helper()
	tmp := link + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// catalogCounts reads GET /catalogs/{name}: its counts and last error.
func catalogCounts(t testing.TB, base, name string) (packages, channels, bundles int, lastError string) {
	t.Helper()
	d := catalogDetail(t, base, name)
	return d.Counts.Packages, d.Counts.Channels, d.Counts.Bundles, d.LastError
}

// detail is what the crash tests read of GET /catalogs/{name}.
type detail struct {
	Counts    struct{ Packages, Channels, Bundles int }
	LastError string
	Build     struct{ Mode string }
}

// catalogDetail reads GET /catalogs/{name}.
func catalogDetail(t testing.TB, base, name string) detail {
	t.Helper()
	resp, err := http.Get(base + "/catalogs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d detail
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /catalogs/%s: %s", name, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatalf("GET /catalogs/%s: %v", name, err)
	}
	return d
}

// expectVersion fetches /api/v1/all and fails unless it is one of want,
// with an ETag consistent with every earlier answer, and its gzip copy,
// decompressed, is the same version. It returns the version.
func expectVersion(t *testing.T, base string, book *etagBook, want ...*version) *version {
	t.Helper()
	status, etag, sum, err := getAll(context.Background(), http.DefaultClient, base, "c", false)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /api/v1/all: %d %v", status, err)
	}
	status, _, gzSum, err := getAll(context.Background(), http.DefaultClient, base, "c", true)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /api/v1/all in gzip: %d %v", status, err)
	}
	if versionOf(gzSum, want...) == nil {
		t.Fatalf("GET /api/v1/all in gzip decompresses to content (sha256 %s) that is none of the versions", gzSum)
	}
	v := versionOf(sum, want...)
	if v == nil {
		var names []string
		for _, w := range want {
			names = append(names, w.name)
		}
		t.Fatalf("GET /api/v1/all answered content (sha256 %s) that is none of versions %v", sum, names)
	}
	if err := book.see(etag, v, false); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCrashDuringBuild SIGKILLs `catalogd serve` during index builds and
// swaps, again and again, the content alternating between two versions so
// that every start has something to build. A kill comes at a random delay
// (it mostly lands in the build), or the moment the build creates its
// first segment file (written, or linked from the live index), or the
// moment the first built file is renamed to its final name, in the swap,
// before the current link names it, in turn. Where each kill landed is read from what it left on
// disk. After each kill the server is started again on the same data
// directory: from its first request it must answer one of the two versions
// whole (the new one if the kill left the current link pointing at it),
// finish the build the kill interrupted (and only then), and leave no
// temporary file behind. The catalog comes from a directory (the kill lands
// in the build or the swap) and from an image in a loopback registry (also
// in the pull or the unpack).
//
// The incremental runs alternate between two versions one package apart,
// so that every build after the first is incremental (the live index
// given to it, one package rebuilt and the rest carried over): kills land
// in incremental builds and their swaps, and the restart must still answer
// the old or the new version whole, as a full build has it (the versions'
// /api/v1/all are computed from their files), and build incrementally.
//
// `go test` runs a short version (a small catalog, 6 kills of the directory
// and 4 of the image, as many of each incremental); CATALOGD_SLOW=1 runs 50
// of each on a catalog ten times bigger. CATALOGD_STRESS_KILLS sets the number of kills of each.
// Either way, kills go on past that number (up to 10 more) until at least
// one landed in the build and one in the swap, and the test fails if none
// did: a run that never hit them would prove nothing about them.
func TestCrashDuringBuild(t *testing.T) {
	dirKills, imageKills := 6, 4
	opts := fbcgen.Options{Packages: 8, Bundles: 150, BundleObjectBytes: 3000, Icons: true}
	if long() {
		dirKills, imageKills = 50, 50
		opts = fbcgen.Options{Packages: 40, Bundles: 1500, BundleObjectBytes: 3000, Icons: true}
	}
	dirKills = envInt(t, "CATALOGD_STRESS_KILLS", dirKills)
	imageKills = envInt(t, "CATALOGD_STRESS_KILLS", imageKills)
	seed := uint64(envInt(t, "CATALOGD_STRESS_SEED", 1))
	root := t.TempDir()
	var versions [2]*version
	for i, name := range []string{"a", "b"} {
		dir := filepath.Join(root, name)
		opts.Seed = int64(i + 1)
		generate(t, dir, opts)
		versions[i] = newVersion(t, name, dir)
	}

	// a and a version of it with one bundle of one package changed.
	edited := filepath.Join(root, "a-edited")
	editOneBundle(t, versions[0].dir, edited)
	near := [2]*version{versions[0], newVersion(t, "a-edited", edited)}

	// A catalog of three package files of about 9 MB each, a segment
	// each, and a version with the last of them edited: its incremental
	// builds link two segments from the live index and write one.
	big := filepath.Join(root, "big")
	generate(t, big, fbcgen.Options{Packages: 3, Bundles: 6, BundleObjectBytes: 2000, CRDObjectBytes: 4_500_000, Seed: 3})
	bigEdited := filepath.Join(root, "big-edited")
	editLastFile(t, big, bigEdited)
	segmented := [2]*version{newVersion(t, "big", big), newVersion(t, "big-edited", bigEdited)}

	for _, tc := range []struct {
		name        string
		versions    [2]*version
		incremental bool
		segments    bool
	}{
		{name: "full", versions: versions},
		{name: "incremental", versions: near, incremental: true},
		{name: "incremental-segments", versions: segmented, incremental: true, segments: true},
	} {
		t.Run(tc.name+"/directory", func(t *testing.T) {
			link := filepath.Join(t.TempDir(), "catalog")
			dataDir := filepath.Join(t.TempDir(), "data")
			kills := dirKills
			if tc.segments {
				kills = min(kills, 3)
			}
			crashLoop(t, kills, seed, dataDir, tc.versions, tc.incremental, tc.segments, func(v *version) []string {
				pointAt(t, link, v.dir)
				return []string{"--data-dir", dataDir, "--catalog", "c=" + link}
			})
		})
		// No image run of the segmented catalog: it would add only a pull
		// and an unpack, which the other image runs kill, before the same
		// segmented builds its directory run kills (it always skipped).
		if tc.segments {
			continue
		}
		t.Run(tc.name+"/image", func(t *testing.T) {
			reg := registrytest.New(t)
			for _, v := range tc.versions {
				reg.PushCatalog(t, "catalogs/c:"+v.name, v.dir, registrytest.PushOptions{})
			}
			dataDir := filepath.Join(t.TempDir(), "data")
			// Two tags of one repository: one catalog whose tag moves.
			crashLoop(t, imageKills, seed, dataDir, tc.versions, tc.incremental, false, func(v *version) []string {
				return []string{"--data-dir", dataDir, "--catalog", "c=" + reg.Host + "/catalogs/c:" + v.name, "--insecure-registry", reg.Host}
			})
		})
	}
}

// imageField is a bundle's image in a JSON or a YAML catalog file.
var imageField = regexp.MustCompile(`("image": *"[^"]+|image: [^\s]+)`)

// copyCatalog copies the catalog in src to dst and lists the copy's files
// in name order.
func copyCatalog(t *testing.T, src, dst string) []string {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	var files []string
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// editOneBundle copies the catalog in src to dst with the image of one
// bundle changed: the first in the first file, in name order, that has one.
func editOneBundle(t *testing.T, src, dst string) {
	t.Helper()
	for _, p := range copyCatalog(t, src, dst) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if loc := imageField.FindIndex(data); loc != nil {
			edited := slices.Concat(data[:loc[1]], []byte("-edited"), data[loc[1]:])
			if err := os.WriteFile(p, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no bundle image to edit in %s", src)
}

// editLastFile copies the catalog in src to dst with one blob added to its
// last file in name order, of that file's package.
func editLastFile(t *testing.T, src, dst string) {
	t.Helper()
	files := copyCatalog(t, src, dst)
	if len(files) == 0 {
		t.Fatalf("no file in %s", dst)
	}
	last := files[len(files)-1]
	data, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	pkg := regexp.MustCompile(`"package": *"([^"]+)"`).FindSubmatch(data)
	if pkg == nil {
		t.Fatalf("no package in %s", last)
	}
	data = fmt.Appendf(data, "\n"+`{"schema":"test.edit","package":%q,"name":"edit"}`+"\n", pkg[1])
	if err := os.WriteFile(last, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Where a kill landed, as told by what it left in the data directory.
const (
	beforeBuild = "before the build" // nothing new on disk (start-up, digest, pull)
	inBuild     = "in the build"     // a temporary .build- file
	inSwap      = "in the swap"      // new files under their final names, the current link not yet on them
	afterSwap   = "after the swap"   // the current link names a new index
)

// killPhase tells where a kill landed from what it left in the catalog's
// index directory cdir, given the current link's target before the start.
func killPhase(t *testing.T, cdir, liveTarget string) string {
	t.Helper()
	if target, err := os.Readlink(filepath.Join(cdir, "current")); err != nil {
		t.Fatalf("read the current link after a kill: %v", err)
	} else if target != liveTarget {
		return afterSwap
	}
	entries, err := os.ReadDir(cdir)
	if err != nil {
		t.Fatal(err)
	}
	phase := beforeBuild
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == "current" || name == store.HistoryFile || slices.Contains(index.Files(liveTarget), name):
		case strings.HasPrefix(name, ".build-"):
			phase = inBuild
		case strings.HasPrefix(name, ".current-") || isIndexFile(name):
			return inSwap // the new index's files renamed into place, or its link
		default:
			t.Fatalf("a kill left %s in the index directory: neither a build's file, nor a new index's database or link", name)
		}
	}
	return phase
}

// isIndexFile reports whether name is one of an index's files (index.Files:
// its database or its content directory) under its final name.
func isIndexFile(name string) bool {
	db := strings.TrimSuffix(name, index.ContentDirSuffix)
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(db, ".db") && slices.Contains(index.Files(db), name)
}

// watchSwaps watches the catalog's index directory cdir, from before the
// server starts, so that killAtSwap cannot miss the swap.
func watchSwaps(t *testing.T, cdir string) *fsnotify.Watcher {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Add(cdir); err != nil {
		t.Fatal(err)
	}
	return w
}

// killAtSwap SIGKILLs s the moment w sees a database file appear under a
// name that is not a temporary build file's: the store renaming the new
// index into place, the first step of its swap (index.Files lists the
// database first).
func killAtSwap(t *testing.T, s *server, w *fsnotify.Watcher) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev := <-w.Events:
			if name := filepath.Base(ev.Name); ev.Has(fsnotify.Create) && isIndexFile(name) {
				s.Kill(t)
				return
			}
		case err := <-w.Errors:
			t.Fatalf("watch the index directory: %v", err)
		case <-s.Exited:
			t.Fatalf("catalogd exited (%v) before swapping:\n%s", s.ExitErr, s.Stdout)
		case <-timeout:
			t.Fatalf("catalogd swapped in no index in 2 minutes:\n%s", s.Stdout)
		}
	}
}

// killAtSegment SIGKILLs s the moment w sees a file appear in a build's
// content directory (index.ContentDir of a temporary database): the
// build writing or linking its first segment, or with linked, linking its
// first segment from the live index (a file of more than one name). A
// build that links nothing, or whose segments the watch did not see, is
// killed at its swap instead.
func killAtSegment(t *testing.T, s *server, w *fsnotify.Watcher, linked bool) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev := <-w.Events:
			name := filepath.Base(ev.Name)
			if !ev.Has(fsnotify.Create) {
				continue
			}
			if strings.HasPrefix(filepath.Base(filepath.Dir(ev.Name)), ".build-") && (!linked || isLinked(ev.Name)) {
				s.Kill(t)
				t.Logf("killed as the build made segment file %s (linked: %v)", name, isLinked(ev.Name))
				return
			}
			if isIndexFile(name) {
				// A build that linked nothing, or one so quick that its
				// content directory was renamed away before the watch
				// could see into it (the events queue while the test
				// waits for the first answer): the swap is the next
				// moment to kill.
				s.Kill(t)
				t.Logf("no segment seen (linked: %v); killed at the swap", linked)
				return
			}
			if strings.HasPrefix(name, ".build-") && strings.HasSuffix(name, index.ContentDirSuffix) {
				// Gone already, the build has moved on to its swap.
				if err := w.Add(ev.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("watch the build's content directory: %v", err)
				}
				// A segment made before the watch began is not seen.
				entries, _ := os.ReadDir(ev.Name)
				for _, e := range entries {
					if p := filepath.Join(ev.Name, e.Name()); !linked || isLinked(p) {
						s.Kill(t)
						t.Logf("killed as the build had made segment file %s (linked: %v)", e.Name(), isLinked(p))
						return
					}
				}
			}
		case err := <-w.Errors:
			t.Fatalf("watch the index directory: %v", err)
		case <-s.Exited:
			t.Fatalf("catalogd exited (%v) before building:\n%s", s.ExitErr, s.Stdout)
		case <-timeout:
			t.Fatalf("catalogd wrote no segment in 2 minutes:\n%s", s.Stdout)
		}
	}
}

// isLinked reports whether the file at path has more than one name.
func isLinked(path string) bool {
	info, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}

// crashLoop runs the kills of TestCrashDuringBuild; serveArgs makes version
// v the catalog's content and returns the arguments of `catalogd serve`.
// With incremental, every build but the first must be incremental, and
// the kill delays are drawn from the time of an incremental build. With
// segments, the versions' content spans several segments and the kills
// at a segment wait for one linked from the live index.
func crashLoop(t *testing.T, kills int, seed uint64, dataDir string, versions [2]*version, incremental, segments bool, serveArgs func(v *version) []string) {
	a, b := versions[0], versions[1]
	other := func(v *version) *version {
		if v == a {
			return b
		}
		return a
	}
	book := newETagBook()
	cdir := filepath.Join(dataDir, "index", "c")

	// A first build, timed, sets the range of kill delays.
	first := start(t, serveArgs(a)...)
	began := time.Now()
	first.waitSynced(t)
	buildTime := time.Since(began)
	live := expectVersion(t, first.base, book, a)
	first.Kill(t)
	if incremental {
		// The second build is incremental: it sets the range instead.
		second := start(t, serveArgs(b)...)
		began := time.Now()
		second.waitSynced(t)
		buildTime = time.Since(began)
		live = expectVersion(t, second.base, book, b)
		if mode := catalogDetail(t, second.base, "c").Build.Mode; mode != "incremental" {
			t.Fatalf("the build of version %s after %s was %q; want incremental", b.name, a.name, mode)
		}
		second.Kill(t)
	}
	t.Logf("seed %d; a first sync took %s; killing at delays up to %s, at segments and at swaps", seed, buildTime.Round(time.Millisecond), (buildTime * 3 / 2).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(seed, 0))
	landed := map[string]int{}
	const extraKills = 10
	for i := 0; i < kills || landed[inBuild] == 0 || landed[inSwap] == 0; i++ {
		if i == kills+extraKills {
			t.Fatalf("%d kills, and %d landed in the build, %d in the swap; want at least one of each", i, landed[inBuild], landed[inSwap])
		}
		liveTarget, err := os.Readlink(filepath.Join(cdir, "current"))
		if err != nil {
			t.Fatal(err)
		}
		next := other(live)
		args := serveArgs(next)
		swaps := watchSwaps(t, cdir)
		s := start(t, args...)
		since := time.Now()
		// Listening means the index kept on disk answers, before any build.
		// An incremental build of the segmented catalog links its segments
		// and is done within tens of milliseconds: the kill must not wait
		// for the answer (the restart below checks it).
		if !segments {
			expectVersion(t, s.base, book, live, next)
		}
		// Kills come after a random delay, at the first segment file the
		// build writes or links, or at the swap, in turn; past the planned
		// kills, they aim at the phase no kill landed in yet.
		mode := i % 3
		if i >= kills {
			mode = 2
			if landed[inBuild] == 0 {
				mode = 0
			}
		}
		how := "at the swap"
		switch mode {
		case 0:
			delay := time.Duration(rng.Int64N(int64(buildTime * 3 / 2)))
			how = "after " + delay.String()
			time.Sleep(delay - time.Since(since))
			s.Kill(t)
		case 1:
			how = "at a segment"
			killAtSegment(t, s, swaps, segments)
		default:
			killAtSwap(t, s, swaps)
		}
		_ = swaps.Close()
		done := strings.Contains(s.Stdout.String(), "Try:")
		phase := killPhase(t, cdir, liveTarget)
		landed[phase]++
		t.Logf("kill %d (%s) landed %s", i, how, phase)

		// The restart answers at once from whatever is live on disk, then
		// completes (or skips) the interrupted build.
		r := start(t, args...)
		got := expectVersion(t, r.base, book, live, next)
		if (done || phase == afterSwap) && got != next {
			t.Fatalf("kill %d (%s, landed %s): the killed server had swapped in version %s, but after the restart version %s answers", i, how, phase, next.name, got.name)
		}
		r.waitSynced(t)
		out := r.Stdout.String()
		if strings.Contains(out, "NOT INDEXED") {
			t.Fatalf("kill %d: the build after the restart failed:\n%s", i, out)
		}
		if rebuilt := strings.Contains(out, "indexed in"); rebuilt != (phase != afterSwap) {
			t.Fatalf("kill %d (%s) landed %s, but the restart rebuilt: %v:\n%s", i, how, phase, rebuilt, out)
		}
		expectVersion(t, r.base, book, next)
		if mode := catalogDetail(t, r.base, "c").Build.Mode; incremental && mode != "incremental" {
			t.Fatalf("kill %d (%s, landed %s): after the restart version %s was built %q; want incremental", i, how, phase, next.name, mode)
		}
		p, c, bn, lastErr := catalogCounts(t, r.base, "c")
		if p != len(next.facts.Packages) || c != next.facts.CountChannels() || bn != next.facts.CountBundles() || lastErr != "" {
			t.Fatalf("kill %d: GET /catalogs/c: %d packages, %d channels, %d bundles, lastError %q; want %d, %d, %d and none",
				i, p, c, bn, lastErr, len(next.facts.Packages), next.facts.CountChannels(), next.facts.CountBundles())
		}
		if extra := leftovers(t, dataDir); len(extra) > 0 {
			t.Fatalf("kill %d (%s, landed %s): left in the data directory after the restart: %v", i, how, phase, extra)
		}
		r.Kill(t)
		live = next
	}
	total := landed[beforeBuild] + landed[inBuild] + landed[inSwap] + landed[afterSwap]
	t.Logf("%d kills: %d %s, %d %s, %d %s, %d %s; %d restarts, every one answering a whole version with a consistent ETag, rebuilding exactly when the kill came before the swap, and leaving no temporary file",
		total, landed[beforeBuild], beforeBuild, landed[inBuild], inBuild, landed[inSwap], inSwap, landed[afterSwap], afterSwap, 2*total)
}

// TestFullDisk builds an index on a data directory too small for it: the
// build must fail with a reason in lastError, the old index keep answering,
// the temporary file go, and a build succeed once there is room again.
func TestFullDisk(t *testing.T) {
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dataDir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a 2 MB tmpfs to fill up (needs root and mount rights): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dataDir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dataDir, err)
		}
	})
	small := filepath.Join(root, "small")
	generate(t, small, fbcgen.Options{Packages: 4, BundlesPerPackage: 3, Seed: 1})
	big := filepath.Join(root, "big")
	generate(t, big, fbcgen.Options{Packages: 20, Bundles: 400, BundleObjectBytes: 6000, Seed: 2})
	vs, vb := newVersion(t, "small", small), newVersion(t, "big", big)
	link := filepath.Join(root, "catalog")
	args := []string{"--data-dir", dataDir, "--catalog", "c=" + link}
	book := newETagBook()

	pointAt(t, link, small)
	s := start(t, args...)
	s.waitSynced(t)
	expectVersion(t, s.base, book, vs)
	s.Kill(t)

	pointAt(t, link, big)
	s = start(t, args...)
	s.waitSynced(t)
	if !strings.Contains(s.Stdout.String(), "NOT INDEXED (Serving its previous index)") {
		t.Fatalf("the big catalog fit in 2 MB, or failed otherwise; the test needs a build that fills the disk:\n%s", s.Stdout)
	}
	expectVersion(t, s.base, book, vs)
	if _, _, _, lastErr := catalogCounts(t, s.base, "c"); !strings.Contains(lastErr, "disk is full") && !strings.Contains(lastErr, "no space left") {
		t.Errorf("lastError %q; want it to say the disk is full", lastErr)
	}
	if strings.Contains(s.Stdout.String(), dataDir) && strings.Contains(s.Stdout.String(), ".build-") {
		t.Errorf("the summary names a temporary file:\n%s", s.Stdout)
	}
	// SIGTERM cancels the retries' builds; a cancelled build must clean up
	// as a failed one does.
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-s.Exited
	if s.ExitErr != nil {
		t.Errorf("catalogd exited with %v after SIGTERM", s.ExitErr)
	}
	if extra := leftovers(t, dataDir); len(extra) > 0 {
		t.Errorf("left in the full data directory: %v", extra)
	}

	if err := syscall.Mount("tmpfs", dataDir, "tmpfs", syscall.MS_REMOUNT, "size=256m"); err != nil {
		t.Fatalf("make room: %v", err)
	}
	s = start(t, args...)
	s.waitSynced(t)
	expectVersion(t, s.base, book, vb)
	if extra := leftovers(t, dataDir); len(extra) > 0 {
		t.Errorf("left in the data directory after a good build: %v", extra)
	}
}
