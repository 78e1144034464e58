package catalogcli_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/datadir"
)

// offlineCache is a kubectl-catalog cache of a test's own and catalog
// directories to fill it with, copies of the demo catalog named as asked.
type offlineCache struct {
	env  []string
	root string // $XDG_CACHE_HOME/catalogd
	dirs map[string]string
}

func newOfflineCache(t *testing.T, names ...string) *offlineCache {
	t.Helper()
	c := &offlineCache{env: isolatedEnv(t), dirs: map[string]string{}}
	c.root = filepath.Join(strings.TrimPrefix(c.env[len(c.env)-2], "XDG_CACHE_HOME="), "catalogd")
	src := t.TempDir()
	for _, n := range names {
		c.dirs[n] = filepath.Join(src, n)
		if err := os.CopyFS(c.dirs[n], os.DirFS(demoDir)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// use runs `kubectl catalog catalogs` on the catalog named name with the
// extra flags.
func (c *offlineCache) use(t *testing.T, name string, flags ...string) (stderr string) {
	t.Helper()
	_, errOut, ok := cli{flags: append([]string{"--dir", c.dirs[name]}, flags...), env: c.env}.run(t, "catalogs")
	if !ok {
		t.Fatalf("kubectl catalog --dir %s %v: %s", name, flags, errOut)
	}
	return errOut
}

// entries maps each catalog the cache holds an index of to its entry
// directory, as found on disk.
func (c *offlineCache) entries(t *testing.T) map[string]string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(c.root, "*", "index", "*", "current"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range found {
		catalogDir := filepath.Dir(f)
		out[filepath.Base(catalogDir)] = filepath.Dir(filepath.Dir(catalogDir))
	}
	return out
}

// held names the catalogs the cache holds, sorted.
func (c *offlineCache) held(t *testing.T) []string {
	var names []string
	for n := range c.entries(t) {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// bytesUnder adds up the sizes of the files under dir.
func bytesUnder(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		n += fi.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOfflineCacheBound fills the cache past its bound, given by the flag
// or the variable: the least recently used catalog goes, whole, and the
// cache ends within the bound.
func TestOfflineCacheBound(t *testing.T) {
	// The size of one entry, measured on a cache of its own.
	probe := newOfflineCache(t, "probe")
	probe.use(t, "probe")
	one := bytesUnder(t, probe.entries(t)["probe"])
	// Room for two entries of about that size, not three.
	bound := strconv.FormatInt(one*5/2, 10)

	tests := []struct {
		name string
		// bind gives the cache its bound, returning the flags to pass.
		bind func(c *offlineCache) []string
	}{
		{"flag", func(*offlineCache) []string { return []string{"--cache-max-size", bound} }},
		{"variable", func(c *offlineCache) []string {
			c.env = append(c.env, "CATALOGD_CACHE_MAX_SIZE="+bound)
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newOfflineCache(t, "a", "b", "c")
			flags := tc.bind(c)
			c.use(t, "a", flags...)
			c.use(t, "b", flags...)
			if got := c.held(t); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("within the bound the cache holds %v, want a and b", got)
			}
			c.use(t, "a", flags...) // b is now the least recently used
			c.use(t, "c", flags...)
			if got := c.held(t); !slices.Equal(got, []string{"a", "c"}) {
				t.Errorf("past the bound the cache holds %v, want a and c (b least recently used)", got)
			}
			if got := bytesUnder(t, c.root); got > one*5/2 {
				t.Errorf("the cache holds %d bytes, bound %s", got, bound)
			}
			// Evicted whole: nothing of b's entry is left.
			entries, err := os.ReadDir(c.root)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if len(names) != 3 || !slices.Contains(names, datadir.LayoutFile) {
				t.Errorf("cache directory holds %v, want the mark and two entries", names)
			}
		})
	}
}

// TestOfflineCacheKeepsEntryInUse holds an entry's lock as a running
// kubectl catalog does: a bound of 0 evicts every other entry, never that
// one, nor the one of the run itself.
func TestOfflineCacheKeepsEntryInUse(t *testing.T) {
	c := newOfflineCache(t, "a", "b", "c")
	c.use(t, "a")
	c.use(t, "b")
	lock, err := os.Open(filepath.Join(c.entries(t)["a"], datadir.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	c.use(t, "c", "--cache-max-size", "0")
	if got := c.held(t); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("with a in use and a bound of 0 the cache holds %v, want a (in use) and c (this run's)", got)
	}
	lock.Close()
	c.use(t, "c", "--cache-max-size", "0")
	if got := c.held(t); !slices.Equal(got, []string{"c"}) {
		t.Errorf("once a is released, a bound of 0 leaves %v, want c alone", got)
	}
}

// TestOfflineCacheLeftovers leaves what interrupted runs of this and an
// earlier kubectl-catalog leave, in a cache an earlier kubectl-catalog laid
// out (no mark): the next run adopts the cache, answers from its index and
// removes the leftovers it is sure no one uses, by their names only.
func TestOfflineCacheLeftovers(t *testing.T) {
	c := newOfflineCache(t, "mine")
	c.use(t, "mine")
	entry := c.entries(t)["mine"]
	if err := os.Remove(filepath.Join(c.root, datadir.LayoutFile)); err != nil {
		t.Fatalf("the cache is not marked: %v", err)
	}
	old := time.Now().Add(-2 * time.Hour)
	leftover := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "fbc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "fbc", "catalog.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// An earlier kubectl-catalog pulled into one unpack/ for all entries,
	// with no lock: one long stopped, one that may still be pulling.
	stopped, recent := filepath.Join(c.root, "unpack", "unpack-2"), filepath.Join(c.root, "unpack", "unpack-3")
	leftover(stopped)
	if err := os.MkdirAll(recent, 0o755); err != nil {
		t.Fatal(err)
	}

	if errOut := c.use(t, "mine"); errOut != "" {
		t.Errorf("the adopted cache's index was not reused: %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(c.root, datadir.LayoutFile)); err != nil {
		t.Errorf("the adopted cache is not marked: %v", err)
	}
	if _, err := os.Stat(stopped); !os.IsNotExist(err) {
		t.Errorf("leftover %s is still there (%v)", stopped, err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("a recent unpack of an earlier kubectl-catalog was removed: %v", err)
	}

	// This layout pulls into the entry, under its lock: what a stopped run
	// left there goes at the next use of the entry, whatever its age.
	interrupted := filepath.Join(entry, "unpack", "unpack-1")
	leftover(interrupted)
	if err := os.Chtimes(interrupted, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	c.use(t, "mine")
	if _, err := os.Stat(interrupted); !os.IsNotExist(err) {
		t.Errorf("leftover %s is still there (%v)", interrupted, err)
	}

	// In a cache that is catalogd's, a file a person put there stays, and
	// `cache clear` removes the entries alone.
	notes := filepath.Join(c.root, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := cli{env: c.env}.ok(t, "cache", "clear")
	if !strings.Contains(out, "Removed 1 catalog(s) from "+c.root) {
		t.Errorf("cache clear said %q", out)
	}
	if got := c.held(t); len(got) != 0 {
		t.Errorf("after cache clear the cache holds %v", got)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
		t.Errorf("cache clear touched a file it did not make: %q %v", b, err)
	}
}

// TestOfflineCacheRefusesForeign points the cache at a directory that is
// not catalogd's: the command fails, says where and what to do, and every
// file stays.
func TestOfflineCacheRefusesForeign(t *testing.T) {
	c := newOfflineCache(t, "mine")
	files := map[string]string{"notes.txt": "mine", "unpack/photo.jpg": "jpeg", "0123456789abcdef01234567/data": "x"}
	for p, content := range files {
		full := filepath.Join(c.root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, ok := cli{flags: []string{"--dir", c.dirs["mine"]}, env: c.env}.run(t, "catalogs")
	if ok {
		t.Fatal("kubectl catalog used a cache directory that is not catalogd's")
	}
	for _, part := range []string{"cache directory " + c.root, "is not empty", "XDG_CACHE_HOME"} {
		if !strings.Contains(errOut, part) {
			t.Errorf("error %q does not say %q", errOut, part)
		}
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("error is more than one line: %q", errOut)
	}
	var got []string
	if err := filepath.WalkDir(c.root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(c.root, path)
			got = append(got, rel)
			b, rerr := os.ReadFile(path)
			if rerr != nil || string(b) != files[rel] {
				t.Errorf("%s: %q %v, want %q", rel, b, rerr, files[rel])
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Errorf("the refused cache holds %v, want only %d files of its own", got, len(files))
	}
}

// TestCacheHelp checks that --help says where the cache is and how to
// clear it.
func TestCacheHelp(t *testing.T) {
	c := newOfflineCache(t)
	for _, args := range [][]string{{"--help"}, {"cache", "--help"}} {
		out := cli{env: c.env}.ok(t, args...)
		for _, part := range []string{"--cache-max-size", "CATALOGD_CACHE_MAX_SIZE", "kubectl catalog cache clear"} {
			if !strings.Contains(out, part) {
				t.Errorf("kubectl catalog %v does not say %q", args, part)
			}
		}
	}
	if out := (cli{env: c.env}).ok(t, "--help"); !strings.Contains(out, c.root) {
		t.Errorf("--help does not name the cache directory %s", c.root)
	}
	if out := (cli{env: c.env}).ok(t, "cache"); !strings.Contains(out, "Directory: "+c.root) {
		t.Errorf("kubectl catalog cache says %q, want the directory %s", out, c.root)
	}
}

// TestOfflineCacheConcurrentRuns runs kubectl catalog on two catalogs at
// once, again and again, on a new cache with a bound of 0: each run evicts
// the other's entry whenever the other is not using it, and every run still
// answers, from an index no one removed under it.
func TestOfflineCacheConcurrentRuns(t *testing.T) {
	c := newOfflineCache(t, "a", "b")
	const rounds = 4
	errs := make(chan string, 2*rounds)
	for _, n := range []string{"a", "b"} {
		go func() {
			for range rounds {
				out, errOut, ok, err := cli{flags: []string{"--dir", c.dirs[n], "--cache-max-size", "0"}, env: c.env}.exec("packages", "-o", "name")
				if err != nil {
					errs <- fmt.Sprintf("%s: %v", n, err)
					continue
				}
				if !ok || !strings.Contains(out, "aurora-cache") {
					errs <- fmt.Sprintf("%s: ok=%v stdout %q stderr %q", n, ok, out, errOut)
					continue
				}
				errs <- ""
			}
		}()
	}
	for range 2 * rounds {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	if got := c.held(t); len(got) > 2 {
		t.Errorf("the cache holds %v", got)
	}
}
