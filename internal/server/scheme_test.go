package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/go-logr/logr"
)

// TestSchemeWhileServing asks for the scheme of a plain-HTTP server that is
// already serving. net/http's Serve fills in http.Server.TLSConfig (to set
// up HTTP/2) when it is nil, so a scheme read from that field turned into
// "https" once serving began, and `catalogd serve` printed https:// URLs
// for a plain-HTTP server whenever its Serve goroutine got there first.
func TestSchemeWhileServing(t *testing.T) {
	srv, err := New(Options{
		API:   http.NotFoundHandler(),
		Ready: func() error { return nil },
		Log:   logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Listener(ln); got != ln {
		t.Errorf("Listener wrapped a plain-HTTP listener in %T", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()

	// An answer means Serve is running.
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %s", resp.Status)
	}
	if got := srv.Scheme(); got != "http" {
		t.Errorf("Scheme() = %q while serving plain HTTP, want http", got)
	}
	if got := srv.Listener(ln); got != ln {
		t.Errorf("Listener wrapped a plain-HTTP listener in %T while serving", got)
	}
}
