// Package catalogdproc builds the catalogd binary once per test binary and
// runs it as a subprocess, keeping its output (end-to-end, crash and load
// tests).
package catalogdproc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/syncbuf"
)

// Main builds catalogd into a temporary directory, sets *binary to its
// path, runs the tests and removes the directory; call it from TestMain as
// os.Exit(catalogdproc.Main(m, &binary)).
func Main(m *testing.M, binary *string) int {
	return MainWith(m, map[string]*string{"catalogd": binary})
}

// builds are the binaries MainWith builds, by name: the command of this
// module and its build tags. catalogd-manager and catalogd-package-api are
// cmd/catalogd with the ClusterCatalog controllers, and with them and the
// package API, as make build builds them.
var builds = map[string]struct{ cmd, tags string }{
	"catalogd":             {"catalogd", ""},
	"catalogd-manager":     {"catalogd", "manager"},
	"catalogd-package-api": {"catalogd", "manager,packageapi"},
	"kubectl-catalog":      {"kubectl-catalog", ""},
}

// MainWith is Main for several binaries of this module (builds names
// them): it builds each name in binaries and sets the pointer to its path.
func MainWith(m *testing.M, binaries map[string]*string) int {
	dir, err := os.MkdirTemp("", "catalogd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for name, binary := range binaries {
		path, err := build(dir, name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		*binary = path
	}
	return m.Run()
}

// Build builds the binary name (see builds) into a directory the test
// removes, for a test or benchmark that needs one that TestMain does not
// build for every test.
func Build(tb testing.TB, name string) string {
	tb.Helper()
	path, err := build(tb.TempDir(), name)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// build builds the binary name into dir and returns its path.
func build(dir, name string) (string, error) {
	b, ok := builds[name]
	if !ok {
		return "", fmt.Errorf("catalogdproc: no binary %q", name)
	}
	path := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-tags", b.tags, "-o", path, "github.com/catalogd/catalogd/cmd/"+b.cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return path, nil
}

var servingLine = regexp.MustCompile(`catalogd serving (http://\S+?),`)

// Serve runs `catalogd serve --listen 127.0.0.1:0 args...`, waits until it
// has tried every catalog once (it prints "Try:") and returns the process
// and the base URL it serves on. Its output is logged if the test fails.
func Serve(t testing.TB, binary string, args ...string) (*Process, string) {
	t.Helper()
	p := Start(t, binary, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("catalogd stdout:\n%s\ncatalogd stderr:\n%s", p.Stdout, p.Stderr)
		}
	})
	// Generous: a benchmark's first build of the 1.3 GB CRD catalog from
	// an image takes minutes on a loaded machine.
	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(p.Stdout.String(), "Try:") {
		select {
		case <-p.Exited:
			t.Fatalf("catalogd exited at start-up (%v):\n%s\n%s", p.ExitErr, p.Stdout, p.Stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalogd printed no summary:\n%s\n%s", p.Stdout, p.Stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := servingLine.FindStringSubmatch(p.Stdout.String())
	if m == nil {
		t.Fatalf("no serving address in the output:\n%s", p.Stdout)
	}
	return p, m[1]
}

// Process is a running catalogd subprocess whose output is kept.
type Process struct {
	Cmd    *exec.Cmd
	Stdout *syncbuf.Buffer
	Stderr *syncbuf.Buffer
	// Exited is closed once the process has exited and its whole stdout
	// has been read, with ExitErr set.
	Exited  chan struct{}
	ExitErr error
}

// Start runs binary with args. The process is killed when the test ends,
// if it is still running.
func Start(t testing.TB, binary string, args ...string) *Process {
	t.Helper()
	p := &Process{Cmd: exec.Command(binary, args...), Stdout: &syncbuf.Buffer{}, Stderr: &syncbuf.Buffer{}, Exited: make(chan struct{})}
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.Cmd.Stderr = p.Stderr
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(p.Stdout, bufio.NewReader(stdout))
		close(copied)
	}()
	go func() {
		<-copied // Wait must not close the pipe before everything was read
		p.ExitErr = p.Cmd.Wait()
		close(p.Exited)
	}()
	t.Cleanup(func() { p.Kill(t) })
	return p
}

// Kill ends the process with SIGKILL, unless it has exited, and waits for it.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	select {
	case <-p.Exited:
		return
	default:
	}
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Errorf("kill catalogd: %v", err)
	}
	<-p.Exited
}
