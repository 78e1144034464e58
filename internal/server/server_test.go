package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/server"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/tlstest"
)

// writeCert writes a self-signed certificate for 127.0.0.1 with the given
// common name, and returns its PEM.
func writeCert(t *testing.T, certFile, keyFile, cn string) []byte {
	t.Helper()
	certPEM, keyPEM := tlstest.SelfSigned(t, cn, "127.0.0.1")
	// Written to temporary names and renamed, as a mounted Secret changes.
	for path, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(path+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	return certPEM
}

func start(t *testing.T, opts server.Options) (*server.Server, string) {
	t.Helper()
	return startIdle(t, opts, 0)
}

// startIdle is start with a write idle timeout of idle (0: the default).
func startIdle(t *testing.T, opts server.Options, idle time.Duration) (*server.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, opts, idle, ln)
}

// serve runs a server on ln, with a write idle timeout of idle (0: the
// default), until the test ends, and returns its base URL.
func serve(t *testing.T, opts server.Options, idle time.Duration, ln net.Listener) (*server.Server, string) {
	t.Helper()
	opts.Log = testr.New(t)
	srv, err := server.NewWithWriteIdle(opts, idle)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, srv.Scheme() + "://" + ln.Addr().String()
}

var api = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "api "+r.URL.Path) })

// TestTLSCertificateIsReloaded serves HTTPS, replaces the certificate files
// as a rotated Secret does, and sees new handshakes use the new one.
func TestTLSCertificateIsReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeCert(t, certFile, keyFile, "first")
	_, base := start(t, server.Options{API: api, Ready: func() error { return nil }, TLSCertFile: certFile, TLSKeyFile: keyFile})
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("base %s is not https", base)
	}
	served := func() string {
		// Only the served certificate is read, not trusted.
		conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(first)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(base + "/catalogs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "api /catalogs" {
		t.Errorf("HTTPS answer %q", body)
	}
	if got := served(); got != "first" {
		t.Fatalf("serving %q, want first", got)
	}
	writeCert(t, certFile, keyFile, "second")
	await.True(t, "the rotated certificate to be served", 10*time.Second, func() bool { return served() == "second" })
}

// TestBrokenTLSCertificateKeepsTheLastGoodOne: a rotation that leaves a
// key that does not load (written after its certificate, or broken) goes
// on serving the certificate already loaded, and the next good pair is
// served once it is written.
func TestBrokenTLSCertificateKeepsTheLastGoodOne(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeCert(t, certFile, keyFile, "first")
	_, base := start(t, server.Options{API: api, Ready: func() error { return nil }, TLSCertFile: certFile, TLSKeyFile: keyFile})
	served := func() (string, error) {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
	}
	writeCert(t, certFile, keyFile, "second")
	if err := os.WriteFile(keyFile, []byte("-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A handshake more than a second after the last one reads the files
	// again (server.certCheckInterval): this one finds the broken pair.
	time.Sleep(1500 * time.Millisecond)
	if got, err := served(); err != nil || got != "first" {
		t.Fatalf("with a broken key: serving %q (%v), want the first certificate still", got, err)
	}
	writeCert(t, certFile, keyFile, "third")
	await.True(t, "the next good certificate to be served", 10*time.Second, func() bool {
		got, err := served()
		return err == nil && got == "third"
	})
}

// TestHealthAndReadiness: /healthz is always ok, /readyz says why not.
func TestHealthAndReadiness(t *testing.T) {
	var notReady error = errors.New("not indexed yet: [demo]")
	_, base := start(t, server.Options{API: api, Ready: func() error { return notReady }})
	for _, tc := range []struct {
		path     string
		ready    bool
		wantCode int
		wantBody string
	}{
		{"/healthz", false, http.StatusOK, "ok"},
		{"/readyz", false, http.StatusServiceUnavailable, "not indexed yet: [demo]"},
		{"/readyz", true, http.StatusOK, "ok"},
		{"/catalogs/demo", true, http.StatusOK, "api /catalogs/demo"},
	} {
		if tc.ready {
			notReady = nil
		}
		resp, err := http.Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantCode || !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("GET %s (ready %v): %d %q, want %d %q", tc.path, tc.ready, resp.StatusCode, body, tc.wantCode, tc.wantBody)
		}
	}
}

// TestLimits: oversized headers are refused before they reach the API.
func TestLimits(t *testing.T) {
	_, base := start(t, server.Options{API: api, Ready: func() error { return nil }})
	req, err := http.NewRequest(http.MethodGet, base+"/catalogs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Big", strings.Repeat("a", server.MaxHeaderBytes+4096))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a %d-byte header: %d, want 431", server.MaxHeaderBytes+4096, resp.StatusCode)
	}
}

// TestHandlerContextEndsAtWriteDeadline: a handler that writes nothing
// (busy in a query) for a client that neither reads nor hangs up sees its
// context end once the write idle bound has passed, so it lets go of what
// it holds; net/http by itself would fail only its writes.
func TestHandlerContextEndsAtWriteDeadline(t *testing.T) {
	ended := make(chan error, 1)
	busy := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		ended <- context.Cause(r.Context())
	})
	_, base := startIdle(t, server.Options{API: busy, Ready: func() error { return nil }}, 100*time.Millisecond)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /catalogs/c/packages HTTP/1.1\r\nHost: catalogd\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the handler's context ended with %v, want %v", err, context.DeadlineExceeded)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's context had not ended 30 s after a write deadline of 100 ms")
	}
}
