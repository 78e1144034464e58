package datadir

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/catalogd/catalogd/internal/store"
)

// The names catalogd gives inside its directories.
const (
	// IndexDir holds the index store (internal/store).
	IndexDir = "index"
	// UnpackDir holds the directories images are unpacked into.
	UnpackDir = "unpack"
	// legacyTmpDir is where `catalogd manager` unpacked images before both
	// modes shared one layout.
	legacyTmpDir = "tmp"
	// LockFile is the lock of one cache entry; its modification time is
	// when the entry was last used.
	LockFile = "lock"
	// EvictedPrefix begins the name a cache entry is renamed to before it
	// is removed, so that no one opens an entry half removed.
	EvictedPrefix = "evicted-"
)

// Data is the data directory of `catalogd serve` and `catalogd manager`:
// IndexDir and UnpackDir. An earlier catalogd left an index store, perhaps
// with unpack directories beside it (under UnpackDir, or under tmp/ for an
// earlier `catalogd manager`).
var Data = Kind{
	Name:    "data",
	What:    "data directory",
	Hint:    "give --data-dir a new or empty directory, or the data directory of an earlier catalogd",
	earlier: earlierData,
}

// Cache is the offline cache of `kubectl catalog`: one entry per catalog
// source, each with its lock and index store. An earlier kubectl-catalog
// left those entries and, beside them, an UnpackDir shared by all.
var Cache = Kind{
	Name:    "cache",
	What:    "cache directory",
	Hint:    "move that directory away, or set $XDG_CACHE_HOME to another directory",
	earlier: earlierCache,
}

func earlierData(dir string, entries []fs.DirEntry) bool {
	sawIndex := false
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case !e.IsDir():
			return false
		case e.Name() == IndexDir:
			if !isStore(p) {
				return false
			}
			sawIndex = true
		case e.Name() == UnpackDir || e.Name() == legacyTmpDir:
			if !onlyUnpacks(p) {
				return false
			}
		default:
			return false
		}
	}
	return sawIndex
}

// cacheEntryName is how kubectl-catalog names a cache entry: 12 bytes of
// a digest of the source, in hex.
var cacheEntryName = regexp.MustCompile(`^[0-9a-f]{24}$`)

// IsCacheEntry reports whether name is the name of a cache entry.
func IsCacheEntry(name string) bool { return cacheEntryName.MatchString(name) }

func earlierCache(dir string, entries []fs.DirEntry) bool {
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case !e.IsDir():
			return false
		case e.Name() == UnpackDir:
			if !onlyUnpacks(p) {
				return false
			}
		case IsCacheEntry(e.Name()):
			if !isCacheEntry(p) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// isCacheEntry reports whether dir holds only an entry's lock file and
// index store.
func isCacheEntry(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		switch {
		case e.Name() == LockFile && e.Type().IsRegular():
		case e.Name() == IndexDir && e.IsDir() && isStore(filepath.Join(dir, IndexDir)):
		default:
			return false
		}
	}
	return true
}

// isStore reports whether dir looks like an index store: one directory per
// catalog, each holding only files and directories the store names
// (store.IsOwnFile, store.IsOwnDir).
func isStore(dir string) bool {
	catalogs, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, c := range catalogs {
		if !c.IsDir() {
			return false
		}
		files, err := os.ReadDir(filepath.Join(dir, c.Name()))
		if err != nil {
			return false
		}
		for _, f := range files {
			n := f.Name()
			if f.IsDir() && !store.IsOwnDir(n) || !f.IsDir() && !store.IsOwnFile(n) {
				return false
			}
		}
	}
	return true
}

// onlyUnpacks reports whether dir holds nothing but unpack directories.
func onlyUnpacks(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), UnpackPrefix) {
			return false
		}
	}
	return true
}

// RemoveDataLeftovers removes what a stopped catalogd left in the data
// directory dir, which Open(dir, Data) accepted: unpack directories under
// UnpackDir and under an earlier manager's tmp/, which goes too once
// empty. No other catalogd may be using dir.
func RemoveDataLeftovers(dir string) (int, error) {
	n, err := RemoveLeftovers(filepath.Join(dir, UnpackDir), UnpackPrefix, 0)
	if err != nil {
		return n, err
	}
	tmp := filepath.Join(dir, legacyTmpDir)
	m, err := RemoveLeftovers(tmp, UnpackPrefix, 0)
	if err != nil {
		return n + m, err
	}
	// Only an empty tmp/ goes: a file a person put there stays.
	_ = os.Remove(tmp)
	return n + m, nil
}
