package gitsource

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/gittest"
)

// deltaRepo commits, in one commit, a catalog whose files are much alike
// (so that git stores most as deltas, in chains: each file shares most of
// its lines with the one before it only), with a nested directory, a
// link, an executable file, an empty file and one content at two paths.
func deltaRepo(t testing.TB) (work, commit string) {
	t.Helper()
	r := gittest.NewRepo(t, t.TempDir(), "cat")
	files := map[string]string{"README.md": "not the catalog\n"}
	rnd := rand.New(rand.NewPCG(1, 2))
	chunk := func() string {
		var b strings.Builder
		for range 40 {
			fmt.Fprintf(&b, `{"schema":"olm.bundle","name":"pkg.v%d","image":"quay.io/pkg@sha256:%016x%016x"}`+"\n", rnd.Uint32(), rnd.Uint64(), rnd.Uint64())
		}
		return b.String()
	}
	chunks := []string{chunk(), chunk(), chunk()}
	for i := range 30 {
		chunks = append(chunks, chunk())
		files[fmt.Sprintf("catalog/pkg%d/catalog.json", i)] = strings.Join(chunks[i:i+4], "")
	}
	files["catalog/deep/er/same.json"] = files["catalog/pkg0/catalog.json"]
	files["catalog/empty.json"] = "\n"
	r.Commit(files)
	if err := os.WriteFile(filepath.Join(r.Work, "catalog", "empty.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pkg1/catalog.json", filepath.Join(r.Work, "catalog", "link.json")); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, r.Work, "add", "-A")
	gittest.Git(t, r.Work, "update-index", "--chmod=+x", "catalog/pkg2/catalog.json")
	gittest.Git(t, r.Work, "commit", "-q", "-m", "links")
	// One commit only, as a depth-1 fetch sends.
	gittest.Git(t, r.Work, "checkout", "-q", "--orphan", "one")
	gittest.Git(t, r.Work, "commit", "-q", "-m", "one")
	return r.Work, gittest.Git(t, r.Work, "rev-parse", "HEAD")
}

// packObjects is git's own pack of commit's objects, with offset deltas or
// not (then ref-deltas, named by id).
func packObjects(t testing.TB, work, commit string, ofs bool) []byte {
	t.Helper()
	args := []string{"pack-objects", "--stdout", "--revs", "-q"}
	if ofs {
		args = append(args, "--delta-base-offset")
	}
	cmd := exec.Command(gittest.Binary, args...)
	cmd.Dir, cmd.Env = work, gittest.Env(work)
	cmd.Stdin = strings.NewReader(commit + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git pack-objects: %v", err)
	}
	return out
}

// TestReadPack reads git's packs of a commit, with both kinds of delta,
// and checks every file of the directory against what git says it holds.
func TestReadPack(t *testing.T) {
	work, commit := deltaRepo(t)
	type file struct {
		mode    uint32
		content string
	}
	want := map[string]file{}
	for _, line := range strings.Split(gittest.Git(t, work, "ls-tree", "-r", commit+":catalog"), "\n") {
		meta, name, _ := strings.Cut(line, "\t")
		var mode uint32
		var typ, id string
		if _, err := fmt.Sscanf(meta, "%o %s %s", &mode, &typ, &id); err != nil {
			t.Fatal(err)
		}
		want[name] = file{mode: mode, content: gittest.Git(t, work, "cat-file", "blob", id)}
	}
	for _, tc := range []struct {
		name     string
		ofs      bool
		spillMax int64
	}{
		{"offset deltas", true, maxSpillBytes},
		{"ref deltas", false, maxSpillBytes},
		// Data beyond the spill file's bound is inflated again.
		{"offset deltas, no spill", true, 0},
		{"ref deltas, part spilled", false, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := packObjects(t, work, commit, tc.ofs)
			dir := t.TempDir()
			p, err := readPack(context.Background(), bytes.NewReader(raw), dir, tc.spillMax)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			// The test needs deltas on deltas: for ref-deltas, those wait
			// for their base's id until the base is built.
			deltas, chained := 0, 0
			for _, e := range p.entries {
				if e.delta {
					deltas++
					if e.base < 0 || p.entries[e.base].delta {
						chained++
					}
				}
			}
			if deltas == 0 || chained == 0 || tc.ofs == (len(p.waiting) > 0) {
				t.Fatalf("the pack has %d deltas, %d of them on deltas, %d waiting: the test needs deltas on deltas", deltas, chained, len(p.waiting))
			}
			spilled, inflated := 0, 0
			for _, e := range p.entries {
				switch {
				case e.size == 0:
				case e.spilled >= 0:
					spilled++
				case e.delta || e.typ == plumbing.BlobObject:
					inflated++
				}
			}
			if wantBoth := tc.spillMax > 0 && tc.spillMax < maxSpillBytes; (spilled > 0) != (tc.spillMax > 0) || (inflated > 0) != (tc.spillMax < maxSpillBytes) || wantBoth && (spilled == 0 || inflated == 0) {
				t.Fatalf("%d objects spilled, %d to inflate again, with a bound of %d bytes", spilled, inflated, tc.spillMax)
			}
			tree, err := directoryTree(p, commit, "catalog")
			if err != nil {
				t.Fatal(err)
			}
			if wantTree := gittest.Git(t, work, "rev-parse", commit+":catalog"); tree.String() != wantTree {
				t.Errorf("tree %s, git says %s", tree, wantTree)
			}
			plan := &treePlan{files: map[plumbing.Hash][]treeFile{}}
			if err := planTree(context.Background(), p, tree, "", plan, logr.Discard()); err != nil {
				t.Fatal(err)
			}
			got := map[string]file{}
			err = p.blobs(context.Background(), plan, func(f treeFile, size int64, r io.Reader) error {
				b, err := io.ReadAll(r)
				if int64(len(b)) != size {
					t.Errorf("%s: %d bytes, said %d", f.name, len(b), size)
				}
				if _, dup := got[f.name]; dup {
					t.Errorf("%s given twice", f.name)
				}
				got[f.name] = file{mode: f.mode, content: strings.TrimSpace(string(b))}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				if g, ok := got[name]; !ok || g != w {
					t.Errorf("%s: got %o %q, git has %o %q", name, g.mode, g.content, w.mode, w.content)
				}
			}
			if len(got) != len(want) {
				t.Errorf("got %d files, git lists %d", len(got), len(want))
			}
			if !slices.Contains(plan.dirs, path.Join("deep", "er")) {
				t.Errorf("directories %q lack deep/er", plan.dirs)
			}
			p.close()
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("closing the pack left %d files", len(left))
			}
		})
	}
}

// packEntryBytes encodes one entry of a pack: its header (kind, size),
// then extra (a delta's base), then data deflated.
func packEntryBytes(kind byte, size int, extra, data []byte) []byte {
	b := []byte{kind<<4 | byte(size&0x0f)}
	for size >>= 4; size > 0; size >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
	}
	b = append(b, extra...)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return append(b, z.Bytes()...)
}

// ofsBytes is git's encoding of an offset delta's distance back.
func ofsBytes(n int64) []byte {
	b := []byte{byte(n & 0x7f)}
	for n >>= 7; n > 0; n >>= 7 {
		n--
		b = append([]byte{0x80 | byte(n&0x7f)}, b...)
	}
	return b
}

// packBytes is a version 2 pack of count entries (the count given, not
// taken from entries) and a trailer.
func packBytes(count uint32, entries ...[]byte) []byte {
	b := []byte("PACK\x00\x00\x00\x02")
	b = append(b, byte(count>>24), byte(count>>16), byte(count>>8), byte(count))
	for _, e := range entries {
		b = append(b, e...)
	}
	return append(b, make([]byte, 20)...)
}

// deltaBytes encodes a delta from a base of src bytes to an object of
// dst bytes, with instructions ops (already encoded).
func deltaBytes(src, dst int, ops ...byte) []byte {
	var b []byte
	for _, n := range []int{src, dst} {
		for {
			c := byte(n & 0x7f)
			if n >>= 7; n > 0 {
				b = append(b, c|0x80)
				continue
			}
			b = append(b, c)
			break
		}
	}
	return append(b, ops...)
}

// TestReadPackRefuses: a pack that is not one, or lies, is refused with an
// error that says how, and allocates nothing for what it only claims.
func TestReadPackRefuses(t *testing.T) {
	blob := []byte("hello world")
	blobEntry := packEntryBytes(packBlob, len(blob), nil, blob)
	at := int64(12 + len(blobEntry))
	for _, tc := range []struct {
		name string
		pack []byte
		want string
		as   any
	}{
		{"not a pack", []byte("<html>hello</html>"), "did not send a pack", nil},
		{"version 4", append([]byte("PACK\x00\x00\x00\x04\x00\x00\x00\x00"), make([]byte, 20)...), "version 4", nil},
		{"cut short", packBytes(2, blobEntry), "object 1 of the pack", nil},
		{"more than its header says", packBytes(1, packEntryBytes(packBlob, 5, nil, blob)), "more than the 5 bytes", nil},
		{"fewer than its header says", packBytes(1, packEntryBytes(packBlob, 50, nil, blob)), "11 bytes, the header says 50", nil},
		{"an object too large", packBytes(1, packEntryBytes(packBlob, 1<<40, nil, blob)), "the largest git object", new(*unpack.LimitError)},
		{"an unknown kind", packBytes(1, packEntryBytes(5, len(blob), nil, blob)), "unknown object kind 5", nil},
		{"an offset delta to no object", packBytes(2, blobEntry, packEntryBytes(packOFSDelta, 3, ofsBytes(at-13), deltaBytes(11, 0, 0))), "where no object begins", nil},
		{"an offset delta before the pack", packBytes(2, blobEntry, packEntryBytes(packOFSDelta, 3, ofsBytes(at+100), deltaBytes(11, 0, 0))), "where no object begins", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := readPack(context.Background(), bytes.NewReader(tc.pack), dir, maxSpillBytes)
			t.Logf("error: %v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if tc.as != nil && !errors.As(err, tc.as) {
				t.Errorf("error %v is not a %T", err, tc.as)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("a refused pack left %d files", len(left))
			}
		})
	}
}

// TestPackBlobsRefuses: a pack whose deltas cannot be built is refused
// when its blobs are, and says which object and why.
func TestPackBlobsRefuses(t *testing.T) {
	blob := []byte("hello world")
	blobEntry := packEntryBytes(packBlob, len(blob), nil, blob)
	delta := func(d []byte) []byte { return packEntryBytes(packOFSDelta, len(d), ofsBytes(int64(len(blobEntry))), d) }
	var missing plumbing.Hash
	missing[0] = 0xab
	refDelta := deltaBytes(11, 1, 1, 'x')
	for _, tc := range []struct {
		name string
		pack []byte
		want string
	}{
		{"a base not in the pack", packBytes(1, packEntryBytes(packRefDelta, len(refDelta), missing[:], refDelta)), "object " + missing.String() + ", which the pack does not hold"},
		{"a delta for another base", packBytes(2, blobEntry, delta(deltaBytes(12, 1, 1, 'x'))), "a delta against 12 bytes applied to 11"},
		{"a copy beyond the base", packBytes(2, blobEntry, delta(deltaBytes(11, 12, 0x90|0x01, 8, 12))), "copies beyond its base"},
		{"an insert cut short", packBytes(2, blobEntry, delta(deltaBytes(11, 5, 5, 'a', 'b'))), "an insert cut short"},
		{"fewer bytes than it says", packBytes(2, blobEntry, delta(deltaBytes(11, 5, 2, 'a', 'b'))), "builds 2 bytes, and says 5"},
		{"instruction 0", packBytes(2, blobEntry, delta(deltaBytes(11, 1, 0))), "instruction 0"},
		{"a target too large", packBytes(2, blobEntry, delta(deltaBytes(11, maxPackObjectBytes+1, 1, 'x'))), "the largest git object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := readPack(context.Background(), bytes.NewReader(tc.pack), t.TempDir(), maxSpillBytes)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			plan := &treePlan{files: map[plumbing.Hash][]treeFile{}}
			err = p.blobs(context.Background(), plan, func(treeFile, int64, io.Reader) error { return nil })
			t.Logf("error: %v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestApplyDelta builds objects from copies and inserts, the expected
// object written out by hand from the instructions.
func TestApplyDelta(t *testing.T) {
	base := []byte("0123456789abcdef")
	for _, tc := range []struct {
		name string
		ops  []byte
		want string
	}{
		{"insert", []byte{3, 'x', 'y', 'z'}, "xyz"},
		{"copy with an offset", []byte{0x80 | 0x01 | 0x10, 10, 6}, "abcdef"},
		{"copy from the start", []byte{0x80 | 0x10, 4}, "0123"},
		{"copies and inserts", []byte{0x80 | 0x01 | 0x10, 12, 4, 1, '-', 0x80 | 0x10, 2}, "cdef-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyDelta(base, deltaBytes(len(base), len(tc.want), tc.ops...), nil)
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// A copy of size 0 means 0x10000 bytes.
	big := bytes.Repeat([]byte("ab"), 0x8000)
	got, err := applyDelta(big, deltaBytes(len(big), len(big), 0x80), nil)
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("a copy of size 0 built %d bytes, %v; want 0x10000", len(got), err)
	}
}

// FuzzApplyDelta: a delta comes from the remote; applyDelta never panics,
// and what it builds has the size the delta says.
func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), deltaBytes(16, 7, 0x80|0x01|0x10, 12, 4, 1, '-', 0x80|0x10, 2))
	f.Add([]byte("abc"), deltaBytes(3, 1, 0x80|0x01|0x10, 2, 1))
	f.Add([]byte("abc"), deltaBytes(3, 4, 0xff, 0, 0, 0, 0, 1, 0, 0))
	f.Add([]byte(""), []byte{0x80})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		got, err := applyDelta(base, delta, nil)
		if err != nil {
			return
		}
		_, rest, _ := deltaSize(delta)
		size, _, _ := deltaSize(rest)
		if uint64(len(got)) != size {
			t.Fatalf("built %d bytes; the delta says %d", len(got), size)
		}
	})
}

// FuzzReadPack: a pack comes from the remote; reading it and building its
// blobs never panics, whatever it says.
func FuzzReadPack(f *testing.F) {
	blob := []byte("hello world")
	blobEntry := packEntryBytes(packBlob, len(blob), nil, blob)
	f.Add(packBytes(2, blobEntry, packEntryBytes(packOFSDelta, 6, ofsBytes(int64(12+len(blobEntry))), deltaBytes(11, 6, 0x80|0x10, 5, 1, '!'))))
	f.Add(packBytes(1, packEntryBytes(packTree, 0, nil, nil)))
	if _, err := os.Stat(gittest.Binary); err == nil {
		work, commit := deltaRepo(f)
		f.Add(packObjects(f, work, commit, true))
		f.Add(packObjects(f, work, commit, false))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := readPack(context.Background(), bytes.NewReader(raw), t.TempDir(), int64(len(raw)))
		if err != nil {
			return
		}
		defer p.close()
		// Every blob wanted, as if a tree named them all.
		plan := &treePlan{files: map[plumbing.Hash][]treeFile{}}
		for _, e := range p.entries {
			if e.known && e.typ == plumbing.BlobObject {
				plan.files[e.id] = []treeFile{{name: e.id.String(), mode: modeFile}}
			}
		}
		_ = p.blobs(context.Background(), plan, func(_ treeFile, size int64, r io.Reader) error {
			n, err := io.Copy(io.Discard, r)
			if err == nil && n != size {
				t.Errorf("%d bytes, said %d", n, size)
			}
			return err
		})
	})
}
