package index

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// BenchmarkBuildIncremental times Build from content on disk to its
// return, full and incremental, after n packages of the catalog changed
// (one blob added to each package's file), on the bench catalog
// ($CATALOGD_BENCH_CATALOG) and the catalog of CRD objects
// ($CATALOGD_BENCH_CRD_CATALOG); small generated ones stand in where
// unset. "1-bundle" adds a bundle (a copy of one under a new name) to the
// package in the middle of the catalog instead, which moves the ids of
// every blob and bundle after it; "1-image" changes the image of a bundle
// there, which moves only the offsets after it (BenchmarkWatchEdit's
// edit). The previous index, and the file hashes
// an incremental build is given (Content.FileHash, which the source computes while it reads the
// content), are made before the timer starts; "-hashing" builds hash
// every file themselves. Peak RSS (of the build alone) is only meaningful
// with one sub-benchmark per process, as make bench runs them, and bytes
// written are what the process wrote (wchar, which counts the ranges
// copy_file_range copied as written too) and the index's files; what a
// build compressed and how many big blobs it took over undecoded are
// Stats.Work's.
func BenchmarkBuildIncremental(b *testing.B) {
	catalogs := []struct{ name, env string }{{"bench", "CATALOGD_BENCH_CATALOG"}, {"crd", "CATALOGD_BENCH_CRD_CATALOG"}}
	for _, c := range catalogs {
		b.Run(c.name, func(b *testing.B) {
			for _, mode := range []string{"full", "1", "10", "100", "1-hashing", "1-bundle", "1-image"} {
				b.Run(mode, func(b *testing.B) {
					dir := os.Getenv(c.env)
					if dir == "" {
						dir = b.TempDir()
						opts := fbcgen.Options{Packages: 50, Bundles: 500, BundleObjectBytes: 5500, Seed: 1}
						if c.name == "crd" {
							opts = fbcgen.Options{Packages: 4, Bundles: 12, BundleObjectBytes: 12000, CRDObjectBytes: 2_000_000, Seed: 1}
						}
						if _, err := fbcgen.Write(context.Background(), dir, opts); err != nil {
							b.Fatal(err)
						}
					}
					benchmarkIncremental(b, dir, mode)
				})
			}
		})
	}
}

func benchmarkIncremental(b *testing.B, src, mode string) {
	tmp := b.TempDir()
	// The catalog, linked file by file, so that changing a file (written
	// anew and renamed) leaves the original alone.
	dir := filepath.Join(tmp, "catalog")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var files []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == src {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.Mkdir(filepath.Join(dir, rel), 0o755)
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		files = append(files, rel)
		return os.Link(path, filepath.Join(dir, rel))
	})
	if err != nil {
		b.Fatal(err)
	}
	prev := filepath.Join(tmp, "prev.db")
	if _, err := Build(context.Background(), prev, Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:prev"}, time.Now()); err != nil {
		b.Fatal(err)
	}
	n := 0
	incremental := mode != "full"
	if incremental {
		count, _, _ := strings.Cut(mode, "-")
		n, _ = strconv.Atoi(count)
	}
	if n > len(files)/2 {
		b.Skipf("the catalog has %d package files, too few to change %d", len(files), n)
	}
	slices.Sort(files)
	switch mode {
	case "1-bundle", "1-image":
		editBundle(b, filepath.Join(dir, files[len(files)/2]), mode == "1-bundle")
	default:
		// Every len(files)/n-th file changes.
		for i := 0; i < n; i++ {
			changeFile(b, filepath.Join(dir, files[i*len(files)/n]), i)
		}
	}
	var hashes func(string) ([sha256.Size]byte, bool)
	if incremental && !strings.HasSuffix(mode, "-hashing") {
		hashes = hashDir(b, dir)
	}
	// What the setup read is given back, so that the peak is the build's.
	debug.FreeOSMemory()
	benchenv.ResetPeakRSS(b)
	wchar := procIO(b, "wchar")
	cpu := benchenv.CPUTime()
	var stats Stats
	var size int64
	i := 0
	for b.Loop() {
		path := filepath.Join(tmp, strconv.Itoa(i)+".db")
		i++
		src := Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:bench", FileHash: hashes}
		if incremental {
			src.Previous = prev
		}
		// The label sets the measured builds apart from the setup's in a
		// CPU profile (go tool pprof -tagfocus build=measured).
		pprof.Do(context.Background(), pprof.Labels("build", "measured"), func(ctx context.Context) {
			stats, err = Build(ctx, path, src, time.Now())
		})
		if err != nil {
			b.Fatal(err)
		}
		size = indexBytes(b, path)
		RemoveFiles(path)
	}
	if incremental && stats.Build.Mode != ModeIncremental {
		b.Fatalf("build was %+v", stats.Build)
	}
	benchenv.ReportCPU(b, cpu)
	b.ReportMetric(benchenv.PeakRSSMiB(), "peak-RSS-MiB")
	b.ReportMetric(float64(procIO(b, "wchar")-wchar)/(1<<20)/float64(i), "written-MiB/op")
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")
	b.ReportMetric(float64(stats.Build.PackagesRebuilt), "packages-rebuilt")
	b.ReportMetric(float64(stats.Work.CompressedBytes)/(1<<20), "compressed-MiB")
	b.ReportMetric(float64(stats.Work.BlobsReused), "blobs-reused")
}

// indexBytes adds up the sizes of the database and the segment files of
// the index at path, linked or not.
func indexBytes(b *testing.B, path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	size := info.Size()
	entries, err := os.ReadDir(ContentDir(path))
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		size += info.Size()
	}
	return size
}

// changeFile adds a blob of the file's first package to it, written as a
// new file in its place.
func changeFile(b *testing.B, path string, i int) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	pkg := line[strings.Index(line, `"name":"`)+len(`"name":"`):]
	pkg = pkg[:strings.IndexByte(pkg, '"')]
	data = fmt.Appendf(data, `{"schema":"bench.edit","package":%q,"name":"edit-%d"}`+"\n", pkg, i)
	if err := os.WriteFile(path+".new", data, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		b.Fatal(err)
	}
}

// editBundle adds a copy of the file's first bundle under a new name to
// it, or changes that bundle's image, written as a new file in its place.
func editBundle(b *testing.B, path string, add bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if !strings.Contains(line, `"schema":"olm.bundle"`) {
			continue
		}
		var bundle map[string]any
		if err := json.Unmarshal([]byte(line), &bundle); err != nil {
			b.Fatal(err)
		}
		if add {
			bundle["name"] = fmt.Sprint(bundle["name"], "-added")
		} else {
			bundle["image"] = fmt.Sprint(bundle["image"], "-edited")
		}
		edited, err := json.Marshal(bundle)
		if err != nil {
			b.Fatal(err)
		}
		if add {
			data = append(append(data, edited...), '\n')
		} else {
			data = []byte(strings.Replace(string(data), line, string(edited)+"\n", 1))
		}
		if err := os.WriteFile(path+".new", data, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			b.Fatal(err)
		}
		return
	}
	b.Fatalf("%s holds no bundle", path)
}

// hashDir hashes every file under dir, as a source gives them.
func hashDir(b *testing.B, dir string) func(string) ([sha256.Size]byte, bool) {
	sums := map[string][sha256.Size]byte{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(filepath.Join(dir, path))
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		sums[path] = [sha256.Size]byte(h.Sum(nil))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return func(name string) ([sha256.Size]byte, bool) {
		sum, ok := sums[name]
		return sum, ok
	}
}

// procIO reads a counter of /proc/self/io.
func procIO(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Skipf("no /proc/self/io: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+": "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/io", field)
	return 0
}
