package grpcapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/grpcapi"
	"github.com/catalogd/catalogd/internal/store"
)

const (
	demoDir      = "../../test/testdata/demo"
	communityDir = "../../../shared/catalogs/community-v4.20"
)

// newStore indexes each directory of dirs as the catalog of its key.
func newStore(t testing.TB, dirs map[string]string) *store.Store {
	t.Helper()
	st, err := store.New(t.TempDir(), testr.NewWithInterface(t, testr.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for name, dir := range dirs {
		index(t, st, name, dir)
	}
	return st
}

// index makes dir the live index of catalog name (a swap when it has one).
func index(t testing.TB, st *store.Store, name, dir string) {
	t.Helper()
	content, err := catalogdir.Read(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := st.Update(context.Background(), name, content); err != nil {
		t.Fatal(err)
	}
}

// serve serves the registry API over idx on loopback until the test ends
// and returns its address.
func serve(t testing.TB, idx grpcapi.Indexes, o grpcapi.Options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Log = testr.NewWithInterface(t, testr.Options{})
	srv := grpcapi.New(idx, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

// dial connects to addr as a client that dialled catalog.catalogd.test,
// which names the catalog.
func dial(t testing.TB, addr, catalog string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(catalog + ".catalogd.test:50051")}, opts...)
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// findOPM returns the opm binary to compare with ($OPM, else bin/opm,
// which `make opm` builds from the operator-registry version of
// go.mod), or skips the test saying how to get one.
func findOPM(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("OPM"), filepath.Join("..", "..", "bin", "opm")} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, err := filepath.Abs(p)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	t.Skip("no opm binary to compare with: run `make opm` (operator-registry's opm at go.mod's version) or set $OPM")
	return ""
}

// startOPM runs `opm serve dir` until the test ends and returns a client of
// it, once it answers health checks.
func startOPM(t testing.TB, opm, dir string) *grpc.ClientConn {
	t.Helper()
	port := freePort(t)
	tmp := t.TempDir()
	cmd := exec.Command(opm, "serve", dir, "-p", strconv.Itoa(port), "--cache-dir", filepath.Join(tmp, "cache"), "--cache-enforce-integrity=false",
		"--pprof-addr", "127.0.0.1:"+strconv.Itoa(freePort(t)), "-t", filepath.Join(tmp, "termination-log"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	deadline := time.Now().Add(5 * time.Minute)
	for {
		select {
		case <-exited:
			t.Fatalf("opm serve %s exited: %v\n%s", dir, waitErr, out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("opm serve %s did not answer within 5 minutes: %v\n%s", dir, err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// registry is a client of the Registry service.
func registry(conn *grpc.ClientConn) api.RegistryClient { return api.NewRegistryClient(conn) }
