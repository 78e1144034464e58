package pageout

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReadOnlyMappings(t *testing.T) {
	const maps = `00400000-00c00000 r-xp 00000000 08:01 42 /usr/bin/catalogd
00c00000-01400000 r--p 00800000 08:01 42 /usr/bin/catalogd
01400000-01480000 rw-p 01000000 08:01 42 /usr/bin/catalogd
01480000-014a0000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 08:01 43 /usr/lib/libc.so.6
7f0000002000-7f0000003000 r--p 00000000 08:01 44 /usr/bin/catalogd-package-api
7f0000004000-7f0000005000 r-xp 00000000 08:01 45 /tmp/a dir/catalogd
`
	tests := []struct {
		path string
		want []region
	}{
		{"/usr/bin/catalogd", []region{{0x400000, 0xc00000}, {0xc00000, 0x1400000}}},
		{"/tmp/a dir/catalogd", []region{{0x7f0000004000, 0x7f0000005000}}},
		{"/usr/bin/none", nil},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, err := readOnlyMappings(strings.NewReader(maps), tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("mappings %x, want %x", got, tc.want)
			}
		})
	}
	if _, err := readOnlyMappings(strings.NewReader("zz-00 r--p 0 08:01 42 /x\n"), "/x"); err == nil {
		t.Error("a bad address range: no error")
	}
}

// TestExecutableReleasesPages checks that the test binary's own read-only
// pages leave its resident set, as /proc/self/smaps counts them.
func TestExecutableReleasesPages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skipf("no /proc/self/exe: %v", err)
	}
	// The go command wrote the binary a moment ago: pages not yet written
	// back are dirty, and the kernel pages out only clean ones (an
	// installed binary's are).
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := residentKiB(t, exe)
	// Pages faulted in a moment ago may still wait in another CPU's
	// batch before joining the kernel's lists, where the kernel cannot
	// take them yet: the daemon pages out seconds after start-up, the
	// test tries a few times.
	var (
		st    Stats
		after int
	)
	for try := 0; try < 5; try++ {
		if try > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		st, err = Executable()
		if errors.Is(err, ErrUnsupported) {
			t.Skipf("the kernel cannot page out: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if after = residentKiB(t, exe); after*4 <= before*3 {
			break
		}
	}
	t.Logf("%d KiB of %s resident before, %d after; %+v", before, exe, after, st)
	if st.Mappings < 2 {
		t.Errorf("%d mappings advised, want the code's and the read-only data's", st.Mappings)
	}
	// What the test touches again between the two readings comes back,
	// and the kernel keeps the large folios it cannot split (how many
	// depends on how the file was written: 40 to 90% of this binary went,
	// measured on Linux 6.18 and ext4).
	if after*4 > before*3 {
		t.Errorf("%d KiB of the executable resident after paging out, %d before: want at most three quarters", after, before)
	}
	// A page touched later is read alone: the kernel marks each advised
	// mapping "rr" (random reads) in its VmFlags.
	for _, m := range readOnlyFlags(t, exe) {
		if !slices.Contains(m.flags, "rr") {
			t.Errorf("read-only mapping %s of %s has VmFlags %v: not advised to read pages alone (rr)", m.addr, exe, m.flags)
		}
	}
}

type mappingFlags struct {
	addr  string
	flags []string
}

// readOnlyFlags returns the VmFlags of each read-only mapping of exe in
// /proc/self/smaps.
func readOnlyFlags(t *testing.T, exe string) []mappingFlags {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out []mappingFlags
		cur string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			cur = ""
			if len(fields) >= 6 && strings.Join(fields[5:], " ") == exe && !strings.Contains(fields[1], "w") {
				cur = fields[0]
			}
			continue
		}
		if cur != "" && len(fields) > 0 && fields[0] == "VmFlags:" {
			out = append(out, mappingFlags{addr: cur, flags: fields[1:]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no read-only mapping of %s with VmFlags", exe)
	}
	return out
}

// residentKiB sums the Rss of the read-only mappings of exe in
// /proc/self/smaps.
func residentKiB(t *testing.T, exe string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && strings.Join(fields[5:], " ") == exe && !strings.Contains(fields[1], "w")
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kb
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if total == 0 {
		t.Fatalf("no resident read-only mapping of %s", exe)
	}
	return total
}

// FuzzReadOnlyMappings feeds readOnlyMappings what /proc/PID/maps could
// hold: it must not panic, and every mapping it returns is a non-empty
// range.
func FuzzReadOnlyMappings(f *testing.F) {
	f.Add("00400000-00c00000 r-xp 00000000 08:01 42 /x\n01400000-01480000 rw-p 01000000 08:01 42 /x\n", "/x")
	f.Add("7f0000004000-7f0000005000 r-xp 00000000 08:01 45 /tmp/a dir/x (deleted)\n", "/tmp/a dir/x (deleted)")
	f.Add("ffffffffffffffff-0 r--p 0 0:0 0 /x\n", "/x")
	f.Fuzz(func(t *testing.T, maps, path string) {
		regions, err := readOnlyMappings(strings.NewReader(maps), path)
		if err != nil {
			return
		}
		for _, r := range regions {
			if r.end <= r.start {
				t.Errorf("mapping [%#x, %#x): empty or reversed", r.start, r.end)
			}
		}
	})
}
