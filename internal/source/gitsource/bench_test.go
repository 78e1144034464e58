package gitsource_test

import (
	"context"
	"fmt"
	"github.com/catalogd/catalogd/test/gittest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/unpack"
)

// BenchmarkFetch fetches a catalog from a loopback git http-backend with
// this package and with Debian's git (`git fetch --depth 1`, then `git
// archive` into the same extractor), reporting peak RSS: this process's
// for "gitsource" (run it alone, -bench 'Fetch/gitsource', for a figure of
// its own), the git processes' for "git". GITSOURCE_BENCH_CATALOG names a
// catalog directory to commit (the bench catalog of test/gen); without it
// a small generated one is used.
func BenchmarkFetch(b *testing.B) {
	srv := newGitServer(b, false)
	r := gittest.NewRepo(b, srv.root, "cat")
	dir := os.Getenv("GITSOURCE_BENCH_CATALOG")
	if dir == "" {
		dir = b.TempDir()
		for i := range 50 {
			p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i), "catalog.json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			blob := fmt.Sprintf(`{"schema":"olm.package","name":"pkg%02d","description":%q}`, i, strings.Repeat(fmt.Sprint(i), 100_000))
			if err := os.WriteFile(p, []byte(blob), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	gittest.Git(b, r.Work, "--work-tree", dir, "add", "-A", ".")
	gittest.Git(b, r.Work, "--work-tree", dir, "commit", "-q", "-m", "catalog")
	r.Push("main")
	url := srv.URL + "/cat.git"

	b.Run("gitsource", func(b *testing.B) {
		u, err := unpack.New(unpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		c := gitsource.New(gitsource.Options{Extractor: u})
		var bytes int64
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		before := ru.Maxrss
		for b.Loop() {
			got, err := c.Fetcher(source.Git{URL: url, Ref: "main"}, gitsource.Auth{}, b.TempDir()).Fetch(context.Background(), never)
			if err != nil {
				b.Fatal(err)
			}
			bytes = got.Bytes
			got.Release()
		}
		b.SetBytes(bytes)
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(before)/1024, "before-MiB")
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-MiB")
	})

	b.Run("git", func(b *testing.B) {
		u, err := unpack.New(unpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var peak int64
		for b.Loop() {
			work := b.TempDir()
			gittest.Git(b, work, "init", "-q")
			peak = max(peak, run(b, exec.Command(gittest.Binary, "-C", work, "fetch", "-q", "--depth", "1", "--no-tags", url, "main"), nil))
			archive := exec.Command(gittest.Binary, "-C", work, "archive", "FETCH_HEAD")
			out, err := archive.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			peak = max(peak, run(b, archive, func() {
				if _, err := u.ExtractArchive(context.Background(), out, filepath.Join(work, "fbc")); err != nil {
					b.Error(err)
				}
			}))
		}
		b.ReportMetric(float64(peak)/1024, "git-peak-MiB")
	})
}

// run runs cmd under /usr/bin/time (calling during, if set, while it
// runs) and returns its peak RSS in KiB. (The rusage Go's wait returns
// for a child counts the memory of this process, which forked it.)
func run(b *testing.B, cmd *exec.Cmd, during func()) int64 {
	report := filepath.Join(b.TempDir(), "time")
	cmd.Args = append([]string{"/usr/bin/time", "-f", "%M", "-o", report}, cmd.Args...)
	cmd.Path = "/usr/bin/time"
	cmd.Env = gittest.Env(b.TempDir())
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if during != nil {
		during()
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	out, err := os.ReadFile(report)
	if err != nil {
		b.Fatal(err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return kib
}
