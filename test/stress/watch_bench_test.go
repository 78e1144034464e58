package stress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// BenchmarkWatchEdit runs `catalogd serve --watch` on a copy of
// $CATALOGD_BENCH_CATALOG (make bench: about 100 MB, 300 packages) and of
// $CATALOGD_BENCH_CRD_CATALOG (1.3 GB, 40 packages of inline CRDs), each
// package in a file of its own, or, without either, on a small generated
// catalog, and
// times what a user saving an edit waits for: from the moment the edited
// files are in place (each written aside and renamed over it, an atomic
// save) to the moment /catalogs/c first reports a new digest (digest-s:
// the first index holding an edit is served), and to the moment it
// reports the digest of an index that serves every edited bundle's new
// image (content-s). It edits one bundle in each of 1 and 10 packages' files,
// with incremental builds (the default) and with
// --incremental-index=false. Saving 10 files of tens of MB takes long
// enough for the watch to index a first burst before the rest: the
// figures then cover both builds. Each save is a rename into place, complete
// when its event arrives, so on Linux no debounce is part of a figure. VmHWM-MiB is the server's peak resident set over
// the edits (reset after its first index was built), and packagesRebuilt
// says how many packages the last build parsed and validated.
func BenchmarkWatchEdit(b *testing.B) {
	catalogs := []struct{ name, env string }{
		{"bench", "CATALOGD_BENCH_CATALOG"},
		{"crd", "CATALOGD_BENCH_CRD_CATALOG"},
	}
	ran := false
	for _, c := range catalogs {
		if src := os.Getenv(c.env); src != "" {
			ran = true
			b.Run(c.name, func(b *testing.B) { benchmarkWatchEdit(b, src) })
		}
	}
	if !ran {
		b.Run("generated", func(b *testing.B) { benchmarkWatchEdit(b, "") })
	}
}

// benchmarkWatchEdit is BenchmarkWatchEdit on a copy of the catalog at
// src, or on a generated one when src is empty.
func benchmarkWatchEdit(b *testing.B, src string) {
	root := b.TempDir()
	dir := filepath.Join(root, "catalog")
	if src != "" {
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			b.Fatal(err)
		}
	} else {
		generate(b, dir, generatedWatchCatalog)
	}
	files := bundleFiles(b, dir, 10)
	// What the directory digests to, as catalogd computes it: the check
	// that the digest served after an edit is the edited directory's.
	hashes := catalogdir.NewCache()
	for _, incremental := range []bool{true, false} {
		name := "incremental"
		if !incremental {
			name = "full"
		}
		b.Run(name, func(b *testing.B) {
			s := start(b, "--data-dir", filepath.Join(root, "data-"+name), "--catalog", "c="+dir, "--watch",
				"--incremental-index="+strconv.FormatBool(incremental))
			// A full build of a GB takes minutes on a busy machine.
			began := time.Now()
			for !tryLine.MatchString(s.Stdout.String()) {
				waitOrFail(b, began, s)
			}
			pid := s.Cmd.Process.Pid
			for _, n := range []int{1, 10} {
				b.Run(fmt.Sprintf("packages=%d", n), func(b *testing.B) {
					// The first index's build is not what is measured.
					_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
					var toDigest, toContent time.Duration
					edits := 0
					for b.Loop() {
						edits++
						tag := fmt.Sprintf("%s-%d-%d", name, n, edits)
						var edited []editedBundle
						for _, f := range files[:n] {
							edited = append(edited, editBundle(b, f, root, tag))
						}
						saved := time.Now()
						// /catalogs/c is polled, a small answer, until its
						// digest changes, which it does once the index that
						// holds the edit is swapped in; the edited bundles
						// are then asked for, and their new images make
						// that moment the one the edit was served at. The
						// bundles are not what is polled: each answer holds
						// megabytes of CRDs, and decoding one took 0.3 s,
						// which was counted as waiting.
						digest := catalogDetailOf(b, s.base).ResolvedDigest
						var first, served time.Duration
						for {
							// A sync that read the directory amid the saves
							// may serve only some of them; the next one,
							// after the last save, serves the rest.
							d := catalogDetailOf(b, s.base)
							if d.ResolvedDigest != digest {
								digest = d.ResolvedDigest
								at := time.Since(saved)
								if first == 0 {
									first = at
								}
								if allServe(b, s.base, edited) {
									served = at
									break
								}
							}
							waitOrFail(b, saved, s)
						}
						b.StopTimer()
						src, err := catalogdir.Read(context.Background(), dir, hashes)
						if err != nil {
							b.Fatal(err)
						}
						// A build that read a file as it was being replaced
						// serves what it read under a digest no directory
						// has (catalogdir.Read), and the watch builds once
						// more: the index must end up claiming exactly the
						// directory, whatever served the edits first.
						for digest != src.Digest {
							if time.Since(saved) > watchTimeout {
								b.Fatalf("serving digest %s after %s; the directory's is %s", digest, watchTimeout, src.Digest)
							}
							waitOrFail(b, saved, s)
							if d := catalogDetailOf(b, s.base).ResolvedDigest; d != digest {
								b.Logf("edit %d: served under %s, then under %s (the directory's: %s)", edits, digest, d, src.Digest)
								digest = d
							}
						}
						b.StartTimer()
						toDigest += first
						toContent += served
						b.Logf("edit %d: first new digest after %.2fs, every edit served after %.2fs (%s)", edits, first.Seconds(), served.Seconds(), loadAvg())
					}
					d := catalogDetailOf(b, s.base)
					b.ReportMetric(toDigest.Seconds()/float64(edits), "digest-s")
					b.ReportMetric(toContent.Seconds()/float64(edits), "content-s")
					b.ReportMetric(benchenv.ProcessPeakRSSMiB(pid), "VmHWM-MiB")
					b.ReportMetric(float64(d.Build.PackagesRebuilt), "packagesRebuilt")
					b.Logf("last build: %s, %d packages rebuilt %s", d.Build.Mode, d.Build.PackagesRebuilt, d.Build.Reason)
				})
			}
		})
	}
}

// watchTimeout bounds each wait of BenchmarkWatchEdit: a full build of the
// CRD catalog takes minutes on a loaded machine.
const watchTimeout = 15 * time.Minute

// waitOrFail waits a moment, failing when the server exited or nothing
// was served within watchTimeout since since.
func waitOrFail(b *testing.B, since time.Time, s *server) {
	b.Helper()
	select {
	case <-s.Exited:
		b.Fatalf("catalogd exited: %v\n%s", s.ExitErr, tail(s.Stderr.String(), 4096))
	default:
	}
	if time.Since(since) > watchTimeout {
		b.Fatalf("nothing served in %s:\n%s", watchTimeout, tail(s.Stderr.String(), 4096))
	}
	time.Sleep(5 * time.Millisecond)
}

// generatedWatchCatalog stands in for the CRD catalog where make bench has
// not generated it.
var generatedWatchCatalog = fbcgen.Options{Packages: 20, Bundles: 200, BundleObjectBytes: 3000, Seed: 1}

// watchDetail is what BenchmarkWatchEdit reads of GET /catalogs/c.
type watchDetail struct {
	ResolvedDigest string
	LastError      string
	Build          struct {
		Mode            string
		PackagesRebuilt int
		Reason          string
	}
}

func catalogDetailOf(b *testing.B, base string) watchDetail {
	b.Helper()
	resp, err := http.Get(base + "/catalogs/c")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var d watchDetail
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		b.Fatal(err)
	}
	return d
}

// editedBundle is a bundle editBundle changed, and its image now.
type editedBundle struct{ pkg, name, image string }

// bundleFiles returns n catalog files under dir, each holding a bundle
// line (a JSON blob of schema olm.bundle on a line of its own), in name
// order; the test catalogs keep each package in a file of its own.
func bundleFiles(b *testing.B, dir string, n int) []string {
	b.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".json") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(files)
	if len(files) < n {
		b.Fatalf("%s has %d catalog files; want at least %d", dir, len(files), n)
	}
	return files[:n]
}

// editBundle sets the image of the first bundle in the file at p to one
// tagged tag, writing the new content into scratch (outside the catalog,
// on its filesystem) and renaming it over the file: an atomic save, as
// editors make it.
func editBundle(b *testing.B, p, scratch, tag string) editedBundle {
	b.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, line := range lines {
		if !bytes.Contains(line, []byte(`"schema":"olm.bundle"`)) {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal(line, &doc); err != nil {
			b.Fatalf("%s: a bundle line that is not JSON: %v", p, err)
		}
		pkg, _ := doc["package"].(string)
		image := "example.com/edited/" + pkg + ":" + tag
		doc["image"] = image
		out, err := json.Marshal(doc)
		if err != nil {
			b.Fatal(err)
		}
		lines[i] = append(out, '\n')
		tmp := filepath.Join(scratch, "saving.json")
		if err := os.WriteFile(tmp, bytes.Join(lines, nil), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			b.Fatal(err)
		}
		name, _ := doc["name"].(string)
		return editedBundle{pkg: pkg, name: name, image: image}
	}
	b.Fatalf("%s holds no bundle line", p)
	return editedBundle{}
}

// allServe reports whether the server answers every bundle of edited
// with its new image.
func allServe(b *testing.B, base string, edited []editedBundle) bool {
	b.Helper()
	for _, e := range edited {
		if !bundleServes(b, base, e) {
			return false
		}
	}
	return true
}

// loadAvg is the machine's load, as uptime says it: figures taken on a
// busy machine mean little without it.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	f := strings.Fields(string(data))
	return "load " + strings.Join(f[:min(3, len(f))], " ")
}

// bundleServes reports whether the server answers e's bundle with its
// new image.
func bundleServes(b *testing.B, base string, e editedBundle) bool {
	b.Helper()
	resp, err := http.Get(base + "/catalogs/c/packages/" + url.PathEscape(e.pkg) + "/bundles/" + url.PathEscape(e.name))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Image string }
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return false
	}
	if err := json.Unmarshal(body, &got); err != nil {
		b.Fatal(err)
	}
	return got.Image == e.image
}
