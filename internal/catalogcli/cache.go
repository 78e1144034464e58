package catalogcli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/catalogd/catalogd/internal/datadir"
)

// CacheMaxSizeEnv names the environment variable that stands in for
// --cache-max-size.
const CacheMaxSizeEnv = "CATALOGD_CACHE_MAX_SIZE"

// defaultCacheMaxSize bounds the offline cache when neither the flag nor
// the variable does: a few large catalogs' indexes.
const defaultCacheMaxSize = "1Gi"

// legacyUnpackAge is how old an unpack directory in the cache's shared
// unpack/ (where an earlier kubectl-catalog pulled, with no lock) must be
// before it is taken for a leftover: no pull takes that long, so no
// process of that earlier binary can still be writing it.
const legacyUnpackAge = time.Hour

// parseCacheMaxSize reads a size as Kubernetes quantities are written
// (1Gi, 500Mi, 0).
func parseCacheMaxSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("cache size %q: want a size such as 1Gi, 500Mi or 0", s)
	}
	return q.Value(), nil
}

// offlineCache is the offline cache of `kubectl catalog`: a directory
// datadir.Cache owns, with one entry per catalog source (a directory named
// by a digest of the source, holding its lock, its index store and the
// image being unpacked). An entry is used under its lock, whose
// modification time is when it was last used; eviction removes whole
// entries, least recently used first, and never one whose lock is held.
type offlineCache struct {
	dir      string
	maxBytes int64
}

// openCache opens the cache in dir, creating, adopting or refusing it as
// package datadir says, and removes what interrupted runs left there.
func openCache(dir string, maxBytes int64) (*offlineCache, error) {
	if _, err := datadir.Open(dir, datadir.Cache); err != nil {
		return nil, err
	}
	// An evicted entry was renamed away under its lock: no process opens
	// it again, so what is left of it goes whatever its age.
	_, err := datadir.RemoveLeftovers(dir, datadir.EvictedPrefix, 0)
	legacy := filepath.Join(dir, datadir.UnpackDir)
	_, lerr := datadir.RemoveLeftovers(legacy, datadir.UnpackPrefix, legacyUnpackAge)
	_ = os.Remove(legacy) // once empty
	if err := errors.Join(err, lerr); err != nil {
		return nil, fmt.Errorf("clean cache %s: %w", dir, err)
	}
	return &offlineCache{dir: dir, maxBytes: maxBytes}, nil
}

// cacheEntry is one entry, locked.
type cacheEntry struct {
	dir  string
	lock *os.File
}

// unlock lets other processes use or evict the entry.
func (e *cacheEntry) unlock() { _ = e.lock.Close() }

// entry locks the entry named name, waiting while another process uses
// it, marks it used now and removes the unpack directories an interrupted
// run left in it (no other process can be using them while the lock is
// held).
func (c *offlineCache) entry(name string) (*cacheEntry, error) {
	dir := filepath.Join(c.dir, name)
	for {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create cache entry: %w", err)
		}
		f, err := lockFile(filepath.Join(dir, datadir.LockFile), syscall.LOCK_EX)
		if errors.Is(err, fs.ErrNotExist) {
			continue // evicted between the MkdirAll and the open
		}
		if err != nil {
			return nil, fmt.Errorf("lock cache entry: %w", err)
		}
		// The lock is only this entry's if its file is still the entry's
		// lock: an eviction that held it may have renamed the entry away
		// while this process waited.
		if !sameFile(f, filepath.Join(dir, datadir.LockFile)) {
			_ = f.Close()
			continue
		}
		now := time.Now()
		if err := os.Chtimes(f.Name(), now, now); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("mark cache entry used: %w", err)
		}
		if _, err := datadir.RemoveLeftovers(filepath.Join(dir, datadir.UnpackDir), datadir.UnpackPrefix, 0); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("clean cache entry: %w", err)
		}
		return &cacheEntry{dir: dir, lock: f}, nil
	}
}

// lockFile opens path, creating it in an existing directory, and locks it
// with how (syscall.LOCK_EX, with LOCK_NB not to wait).
func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// cacheEntryInfo is an entry's size and last use.
type cacheEntryInfo struct {
	name     string
	bytes    int64
	lastUsed time.Time
}

// entries lists the cache's entries.
func (c *offlineCache) entries() ([]cacheEntryInfo, error) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("read cache %s: %w", c.dir, err)
	}
	var out []cacheEntryInfo
	for _, de := range des {
		if !de.IsDir() || !datadir.IsCacheEntry(de.Name()) {
			continue
		}
		dir := filepath.Join(c.dir, de.Name())
		info := cacheEntryInfo{name: de.Name(), bytes: diskBytes(dir)}
		if fi, err := os.Stat(filepath.Join(dir, datadir.LockFile)); err == nil {
			info.lastUsed = fi.ModTime()
		}
		out = append(out, info)
	}
	return out, nil
}

// diskBytes adds up the sizes of the files under dir.
func diskBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// trim evicts whole entries, least recently used first, until the cache
// holds at most maxBytes, and returns the names it evicted. It never
// evicts keep (the entry this run uses) nor any entry another process
// holds; with those, the cache may stay above its bound.
func (c *offlineCache) trim(keep string) ([]string, error) {
	entries, err := c.entries()
	if err != nil {
		return nil, err
	}
	var total int64
	for _, e := range entries {
		total += e.bytes
	}
	slices.SortFunc(entries, func(a, b cacheEntryInfo) int { return a.lastUsed.Compare(b.lastUsed) })
	var evicted []string
	var errs []error
	for _, e := range entries {
		if total <= c.maxBytes {
			break
		}
		if e.name == keep {
			continue
		}
		ok, err := c.evict(e.name)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			total -= e.bytes
			evicted = append(evicted, e.name)
		}
	}
	return evicted, errors.Join(errs...)
}

// evict removes the entry name unless another process holds it: it is
// renamed away under its lock first, so that a process waiting for the
// lock finds the entry gone and starts a new one, and no one reads an
// entry half removed.
func (c *offlineCache) evict(name string) (bool, error) {
	dir := filepath.Join(c.dir, name)
	f, err := lockFile(filepath.Join(dir, datadir.LockFile), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, fs.ErrNotExist) {
		return false, nil // in use, or evicted by another process
	}
	if err != nil {
		return false, fmt.Errorf("evict cache entry %s: %w", name, err)
	}
	defer f.Close()
	if !sameFile(f, filepath.Join(dir, datadir.LockFile)) {
		return false, nil
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	gone := filepath.Join(c.dir, datadir.EvictedPrefix+hex.EncodeToString(suffix))
	if err := os.Rename(dir, gone); err != nil {
		return false, fmt.Errorf("evict cache entry %s: %w", name, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return true, fmt.Errorf("evict cache entry %s: %w", name, err)
	}
	return true, nil
}

// size is what the cache's entries hold, and how many there are.
func (c *offlineCache) size() (bytes int64, n int, err error) {
	entries, err := c.entries()
	for _, e := range entries {
		bytes += e.bytes
	}
	return bytes, len(entries), err
}

// humanBytes writes n as a binary quantity, as --cache-max-size takes it.
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprint(n)
	}
	units := []string{"Ki", "Mi", "Gi", "Ti"}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f%s", f, units[i])
}

// cacheCmd is `kubectl catalog cache`: where the offline cache is, what it
// holds, and `clear`.
func (r *runner) cacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show the offline cache of --dir and --image; clear empties it",
		Long: `--dir and --image index a catalog on this machine into the offline cache,
$XDG_CACHE_HOME/catalogd (or the platform's user cache directory), one entry
per directory or image, reused while the content is unchanged. The cache is
kept under --cache-max-size (default $` + CacheMaxSizeEnv + `, else ` + defaultCacheMaxSize + `): after
each offline command the least recently used entries are removed until it
fits, never one in use. 'kubectl catalog cache clear' removes every entry no
running kubectl catalog is using.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir()
			if err != nil {
				return err
			}
			limit, err := r.connect.cacheBound()
			if err != nil {
				return err
			}
			var bytes int64
			var n int
			if _, err := os.Stat(dir); err == nil {
				c, err := openCache(dir, limit)
				if err != nil {
					return err
				}
				if bytes, n, err = c.size(); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintf(r.stdout, "Directory: %s\nSize:      %s of at most %s, %d catalog(s)\nClear it:  kubectl catalog cache clear\n",
				dir, humanBytes(bytes), humanBytes(limit), n)
			return err
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "clear",
		Short: "Remove every offline index no running kubectl catalog is using",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir()
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				_, err := fmt.Fprintf(r.stdout, "The cache %s is empty.\n", dir)
				return err
			}
			c, err := openCache(dir, 0)
			if err != nil {
				return err
			}
			evicted, err := c.trim("")
			if err != nil {
				return err
			}
			_, left, err := c.size()
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("Removed %d catalog(s) from %s.", len(evicted), dir)
			if left > 0 {
				msg += fmt.Sprintf(" %d in use by a running kubectl catalog stay.", left)
			}
			_, err = fmt.Fprintln(r.stdout, msg)
			return err
		},
	})
	return cmd
}
