// Package memlimit shares the container's memory limit between the two
// allocators of the process, which know nothing of each other or of the
// cgroup: the Go runtime's heap, and SQLite's. The pure-Go SQLite driver
// does not allocate on the Go heap: its C allocator maps memory of its own
// (modernc.org/memory, mmap), which neither GOMEMLIMIT nor the collector
// sees. A 200 MB page cache raised the resident set by 333 MB while the Go
// heap stayed flat, so a Go limit alone bounds only part of the process.
//
// The limit comes from, in order: the process's memory cgroup (v2
// memory.max, or v1 memory.limit_in_bytes), then GOMEMLIMIT in the
// environment (which a Deployment can set from the downward API; taken as
// GoPercent of the whole). Plan shares it out:
//
//   - GoPercent to the Go runtime as its soft limit (unless GOMEMLIMIT is
//     set, which the runtime applies itself), so that the collector works
//     harder as the heap nears it instead of the kernel killing the pod;
//   - SQLitePercent to SQLite as its soft heap limit, past which SQLite
//     frees page cache before it allocates more; and, as a backstop past
//     the budget, twice that as its hard heap limit, past which an
//     allocation fails, so that a runaway query or build fails with "out
//     of memory" instead of the whole process being killed. The allocator rounds small blocks up to a power of two,
//     so a cached 8 KiB page occupies up to 16 KiB: the resident share of
//     SQLite is up to twice what its heap limit counts;
//   - the rest to what neither counts: goroutine stacks being grown, the
//     binary's mapped code, the kernel's page tables.
//
// Each live index is read through a bounded number of connections (Conns),
// each with a small page cache (CacheKiB): index files never change and
// are read through the kernel's page cache anyway, so a large cache per
// connection only copies it. With no limit known there is no Go limit, and
// SQLite gets fixed defaults of the same small size.
//
// SQLite enforces its heap limits only when it counts its memory, which
// the driver's build turns off by default; ApplySQLite turns counting on,
// which SQLite allows only before the first connection opens.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// The shares of the limit, in percent.
const (
	GoPercent     = 70
	SQLitePercent = 10
)

// Fixed figures for SQLite, used when no limit is known or as bounds on
// what the limit gives.
const (
	// DefaultSQLiteHeap is SQLite's soft heap limit with no memory limit
	// known: room for every connection of a few catalogs.
	DefaultSQLiteHeap = 64 << 20
	// Conns is the number of connections per live index: as many readers
	// as that query one catalog at once, the others wait for one.
	Conns = 8
	// DefaultCacheKiB is each connection's page cache with no limit known;
	// MinCacheKiB and MaxCacheKiB bound it otherwise: at least the upper
	// levels of the B-trees a query walks, at most half SQLite's own
	// default, since more answers no faster on these files (BenchmarkHTTP
	// in internal/httpapi).
	DefaultCacheKiB = 512
	MinCacheKiB     = 256
	MaxCacheKiB     = 1024
	// cachesPerHeap is how many connections' caches the soft heap limit
	// is sized for: Conns for each of a few catalogs, with room left for
	// statements and sorting.
	cachesPerHeap = 4 * Conns
)

// Budget is the process's memory limit shared out.
type Budget struct {
	// Limit is the whole process's, in bytes; 0 when none is known.
	Limit  int64
	Source Source
	// Go is the Go runtime's soft limit in bytes; 0 when none is set.
	Go     int64
	SQLite SQLite
}

// SQLite bounds SQLite's memory.
type SQLite struct {
	// SoftHeapLimit is the memory SQLite may allocate, in bytes, before it
	// frees page cache to stay under it.
	SoftHeapLimit int64
	// HardHeapLimit is the memory past which SQLite's allocations fail; 0
	// for none.
	HardHeapLimit int64
	// Conns is the number of connections per live index, and CacheKiB
	// each connection's page cache (PRAGMA cache_size).
	Conns    int
	CacheKiB int
}

// Plan shares out limit bytes (0: no limit known); see the package doc.
func Plan(limit int64) Budget {
	if limit <= 0 {
		return Budget{SQLite: SQLite{SoftHeapLimit: DefaultSQLiteHeap, Conns: Conns, CacheKiB: DefaultCacheKiB}}
	}
	soft := limit / 100 * SQLitePercent
	cache := min(max(int(soft/1024/cachesPerHeap), MinCacheKiB), MaxCacheKiB)
	return Budget{Limit: limit, Go: limit / 100 * GoPercent, SQLite: SQLite{
		SoftHeapLimit: soft, HardHeapLimit: 2 * soft, Conns: Conns, CacheKiB: cache,
	}}
}

// noLimitV1 is the value above which cgroup v1 means "no limit": the kernel
// reports the largest page-aligned int64 there.
const noLimitV1 = math.MaxInt64 / 2

// Source says where the limit came from.
type Source string

const (
	FromEnvironment Source = "GOMEMLIMIT"
	FromCgroup      Source = "cgroup"
	None            Source = ""
)

// Apply plans the budget of the limit of the cgroup the process runs in,
// read through root (the host's "/", os.DirFS("/") in production), or else
// of GOMEMLIMIT, and gives the Go runtime its share unless GOMEMLIMIT was
// set, which the runtime applied itself. An unreadable cgroup is an error
// reported beside the budget of GOMEMLIMIT or of no limit, not a reason to
// fail. SQLite's share is for ApplySQLite and for whoever opens indexes.
func Apply(root fs.FS, getenv func(string) string) (Budget, error) {
	limit, ok, err := CgroupLimit(root)
	fromEnv := getenv("GOMEMLIMIT") != ""
	switch {
	case ok:
		b := Plan(limit)
		b.Source = FromCgroup
		if fromEnv {
			b.Go = debug.SetMemoryLimit(-1)
		} else {
			debug.SetMemoryLimit(b.Go)
		}
		return b, err
	case fromEnv && debug.SetMemoryLimit(-1) != math.MaxInt64: // GOMEMLIMIT=off sets none
		goLimit := debug.SetMemoryLimit(-1)
		b := Plan(goLimit / GoPercent * 100)
		b.Source, b.Go = FromEnvironment, goLimit
		return b, err
	}
	return Plan(0), err
}

// CgroupLimit returns the memory limit of the cgroup the process is in, read
// through root: cgroup v2's memory.max, or else v1's memory.limit_in_bytes.
// ok is false when there is no limit or no memory cgroup.
func CgroupLimit(root fs.FS) (limit int64, ok bool, err error) {
	v2Path, v1Path, err := ownCgroups(root)
	if err != nil {
		return 0, false, err
	}
	// In a container with its own cgroup namespace the paths are "/", and
	// cgroup v2 is mounted at /sys/fs/cgroup itself; on a host with both
	// versions, v2 may be at /sys/fs/cgroup/unified.
	var candidates []string
	if v2Path != "" {
		candidates = append(candidates,
			path.Join("sys/fs/cgroup", v2Path, "memory.max"),
			path.Join("sys/fs/cgroup/unified", v2Path, "memory.max"))
	}
	if v1Path != "" {
		candidates = append(candidates, path.Join("sys/fs/cgroup/memory", v1Path, "memory.limit_in_bytes"))
	}
	// Without a cgroup namespace /proc/self/cgroup names the host's path,
	// while the container sees its own cgroup mounted at the root.
	candidates = append(candidates, "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes")
	for _, name := range candidates {
		data, err := fs.ReadFile(root, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("read memory limit: %w", err)
		}
		value := strings.TrimSpace(string(data))
		if value == "max" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n <= 0 {
			return 0, false, fmt.Errorf("read memory limit: %s holds %q, not a number of bytes", name, value)
		}
		if n >= noLimitV1 {
			return 0, false, nil
		}
		return n, true, nil
	}
	return 0, false, nil
}

// ownCgroups reads /proc/self/cgroup: the process's cgroup v2 path (the
// "0::" line) and its v1 memory controller path, each without the leading
// slash, "" when absent. "/" becomes ".".
func ownCgroups(root fs.FS) (v2, v1Memory string, err error) {
	data, err := fs.ReadFile(root, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil // not Linux, or no /proc: no cgroup to read
	}
	if err != nil {
		return "", "", fmt.Errorf("read own cgroup: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		p = strings.TrimPrefix(p, "/")
		if p == "" {
			p = "."
		}
		switch {
		case id == "0" && controllers == "":
			v2 = p
		case containsController(controllers, "memory"):
			v1Memory = p
		}
	}
	return v2, v1Memory, nil
}

func containsController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
