// Package pageout gives back the pages of the running executable that
// start-up touched: Go runs the initialisation of every linked package,
// and the code and read-only data it reads stay resident (the kernel maps
// the file's pages around each one touched) although serving never uses
// most of them again. They are clean and file-backed: asked to, the
// kernel drops them at once, and a page touched again is read back from
// the file, as any page of a program is the first time, but alone:
// without the read-around that would bring back its neighbours, which
// serving would not use either, and without the cached pages about it,
// which are dropped from the page cache too.
// docs/architecture.md ("What the binary links") has the figures.
package pageout

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Stats says what Executable did.
type Stats struct {
	// Mappings is how many read-only mappings of the executable were
	// advised, of Bytes in all.
	Mappings int
	Bytes    uint64
	// ResidentBefore and ResidentAfter are the process's resident file
	// pages (RssFile) before and after, in bytes.
	ResidentBefore, ResidentAfter uint64
}

// ErrUnsupported says the kernel cannot page out on request (MADV_PAGEOUT
// came with Linux 5.4) or the platform is not Linux.
var ErrUnsupported = errors.New("paging out on request is not supported here")

// Executable asks the kernel to reclaim the resident pages of the running
// executable's read-only mappings (code and read-only data; never the
// writable ones, whose pages may differ from the file), and to read back
// only the page a later fault needs (MADV_RANDOM): by default a fault on a
// mapped file reads the pages around it too and maps them, and the pages
// one request through a large library touches, scattered over the binary,
// brought back several times what they use. Pages other processes map too
// stay, as the kernel leaves shared pages alone.
//
// It then drops the executable's pages that no process maps from the page
// cache (POSIX_FADV_DONTNEED). MADV_RANDOM keeps a fault from reading
// around, but the kernel still maps, with the page a fault needs, the
// cached pages about it (fault-around, 64 KiB): a binary just written, as
// a container runtime extracts it or a build links it, is cached whole,
// so each page touched later came back with fifteen others. Dropped, a
// fault maps what it read; the cost is a read of the file for each page
// first touched. On the bench catalog, with the binary cached whole,
// serve's first build peaked at 38 MiB without the drop and 30 with it,
// for 5% more CPU time (issue 35).
func Executable() (Stats, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Stats{}, fmt.Errorf("find the executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return Stats{}, fmt.Errorf("read the process's mappings: %w", err)
	}
	regions, err := readOnlyMappings(f, exe)
	f.Close()
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	st.ResidentBefore = rssFile()
	for _, r := range regions {
		if err := pageOut(r.start, r.end-r.start); err != nil {
			return st, fmt.Errorf("page out %s [%#x, %#x): %w", exe, r.start, r.end, err)
		}
		if err := readAlone(r.start, r.end-r.start); err != nil {
			return st, fmt.Errorf("advise random reads of %s [%#x, %#x): %w", exe, r.start, r.end, err)
		}
		st.Mappings++
		st.Bytes += r.end - r.start
	}
	// /proc/self/exe opens the file mapped, even if a new one has taken
	// its name since.
	if err := dropCache("/proc/self/exe"); err != nil {
		return st, fmt.Errorf("drop the cached pages of %s: %w", exe, err)
	}
	st.ResidentAfter = rssFile()
	return st, nil
}

type region struct{ start, end uint64 }

// readOnlyMappings returns the mappings in maps (the format of
// /proc/PID/maps) of the file at path that the process cannot write.
func readOnlyMappings(maps io.Reader, path string) ([]region, error) {
	var out []region
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		// address perms offset dev inode pathname
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Join(fields[5:], " ") != path {
			continue
		}
		if strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			return nil, fmt.Errorf("mapping %q: no address range", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err := errors.Join(err1, err2); err != nil || end <= start {
			return nil, fmt.Errorf("mapping %q: bad address range", sc.Text())
		}
		out = append(out, region{start, end})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the process's mappings: %w", err)
	}
	return out, nil
}

// rssFile is the process's RssFile in bytes, 0 if unknown.
func rssFile() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
