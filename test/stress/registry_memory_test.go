package stress

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/catalogd/catalogd/test/benchenv"
)

var grpcLine = regexp.MustCompile(`registry API \(gRPC\) on (\S+):`)

// BenchmarkRegistryMemory reports what OLM v0's registry API costs an idle
// `catalogd serve` on the bench catalog (issue 38's goal: at most 16 MiB
// more): VmRSS idle after the first build without --grpc-listen and with
// it, then with it after a ListBundles and a GetBundle of every bundle
// listed, beside `opm serve` ($OPM or bin/opm) on the same catalog, idle
// once its cache is built and after the same calls. Run with -benchtime
// 1x -count 3 (make bench-grpc-memory): each run is a new process.
func BenchmarkRegistryMemory(b *testing.B) {
	dir := benchenv.Catalog(b)
	installed := installBinary(b, binary)
	for _, tc := range []struct {
		name  string
		grpc  bool
		calls bool
	}{{"catalogd", false, false}, {"catalogd-grpc", true, false}, {"catalogd-grpc-after-calls", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var idle, anon, file float64
			for range b.N {
				args := []string{"--data-dir", filepath.Join(b.TempDir(), "data"), "--catalog", "c=" + dir}
				if tc.grpc {
					args = append(args, "--grpc-listen", "127.0.0.1:0")
				}
				s := startBinary(b, installed, args...)
				s.waitSynced(b)
				time.Sleep(idleAfterBuild)
				if tc.calls {
					addr := grpcLine.FindStringSubmatch(s.Stdout.String())
					if addr == nil {
						b.Fatalf("serve did not say where the registry API listens:\n%s", s.Stdout)
					}
					askEveryBundle(b, addr[1], "c.catalogd")
					time.Sleep(idleAfterBuild)
				}
				pid := s.Cmd.Process.Pid
				idle += benchenv.ProcessMemoryMiB(pid, "VmRSS")
				anon += benchenv.ProcessMemoryMiB(pid, "RssAnon")
				file += benchenv.ProcessMemoryMiB(pid, "RssFile")
				s.Kill(b)
			}
			n := float64(b.N)
			b.ReportMetric(idle/n, "idle-VmRSS-MiB")
			b.ReportMetric(anon/n, "idle-RssAnon-MiB")
			b.ReportMetric(file/n, "idle-RssFile-MiB")
		})
	}
	b.Run("opm-serve", func(b *testing.B) {
		opm := os.Getenv("OPM")
		if opm == "" {
			opm = filepath.Join("..", "..", "bin", "opm")
		}
		if _, err := os.Stat(opm); err != nil {
			b.Skipf("no opm to compare with (%v): make opm, or set $OPM", err)
		}
		var idle, after, peak float64
		for range b.N {
			addr, pid := startOPM(b, opm, dir)
			time.Sleep(idleAfterBuild)
			idle += benchenv.ProcessMemoryMiB(pid, "VmRSS")
			peak += benchenv.ProcessMemoryMiB(pid, "VmHWM")
			askEveryBundle(b, addr, "")
			time.Sleep(idleAfterBuild)
			after += benchenv.ProcessMemoryMiB(pid, "VmRSS")
		}
		n := float64(b.N)
		b.ReportMetric(idle/n, "idle-VmRSS-MiB")
		b.ReportMetric(after/n, "after-calls-VmRSS-MiB")
		b.ReportMetric(peak/n, "VmHWM-MiB")
	})
}

// askEveryBundle lists every bundle from the registry API at addr, dialled
// with authority (none: the address), and gets each one.
func askEveryBundle(b *testing.B, addr, authority string) {
	b.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))}
	if authority != "" {
		opts = append(opts, grpc.WithAuthority(authority))
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	r := api.NewRegistryClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stream, err := r.ListBundles(ctx, &api.ListBundlesRequest{})
	if err != nil {
		b.Fatal(err)
	}
	var listed []*api.Bundle
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		listed = append(listed, &api.Bundle{PackageName: m.GetPackageName(), ChannelName: m.GetChannelName(), CsvName: m.GetCsvName()})
	}
	for _, l := range listed {
		if _, err := r.GetBundle(ctx, &api.GetBundleRequest{PkgName: l.GetPackageName(), ChannelName: l.GetChannelName(), CsvName: l.GetCsvName()}); err != nil {
			b.Fatal(err)
		}
	}
}

// startOPM runs `opm serve dir` until the benchmark ends and returns its
// address and pid once it answers health checks (its cache built).
func startOPM(b *testing.B, opm, dir string) (string, int) {
	b.Helper()
	port, pprof := freePort(b), freePort(b)
	tmp := b.TempDir()
	cmd := exec.Command(opm, "serve", dir, "-p", strconv.Itoa(port), "--cache-dir", filepath.Join(tmp, "cache"), "--cache-enforce-integrity=false",
		"--pprof-addr", "127.0.0.1:"+strconv.Itoa(pprof), "-t", filepath.Join(tmp, "termination-log"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return addr, cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			b.Fatalf("opm serve did not answer within 5 minutes: %v\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
