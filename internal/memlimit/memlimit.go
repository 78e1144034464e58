// Package memlimit gives the Go runtime a soft memory limit below the
// container's hard one. Without it the runtime sizes its heap by GOGC alone
// and knows nothing of the cgroup limit, so a burst of garbage (a large
// catalog being indexed, many bulk answers at once) can take the process
// over the limit and have it OOM-killed, although a collection would have
// freed enough. With the limit, the collector works harder as the heap
// nears it, and the kernel's kill is the last resort it should be.
//
// The limit comes from, in order: GOMEMLIMIT in the environment (which the
// runtime applies itself, and which a Deployment can set from the downward
// API), then the process's memory cgroup (v2 memory.max, or v1
// memory.limit_in_bytes), of which it takes Percent. Nothing is set when
// neither gives a limit.
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

// Percent of the cgroup's limit given to the Go runtime. The rest is for
// what the runtime does not count: SQLite's page cache (allocated by the
// pure-Go driver, so it is counted, but in bursts), goroutine stacks being
// grown, the binary's mapped code, and the kernel's page tables.
const Percent = 90

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

// Apply sets the runtime's soft memory limit from the cgroup the process
// runs in, read through root (the host's "/", os.DirFS("/") in production),
// unless GOMEMLIMIT was given. It returns the limit in force and where it
// came from; an unreadable cgroup is an error, not a reason to fail.
func Apply(root fs.FS, getenv func(string) string) (int64, Source, error) {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), FromEnvironment, nil
	}
	limit, ok, err := CgroupLimit(root)
	if err != nil || !ok {
		return 0, None, err
	}
	soft := limit / 100 * Percent
	debug.SetMemoryLimit(soft)
	return soft, FromCgroup, nil
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
