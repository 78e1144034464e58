// Package server owns how catalogd's HTTP API meets the network, the same in
// `catalogd serve` and `catalogd manager`: the http.Server's timeouts and
// size limits, TLS with a certificate reloaded when its files change, and
// the /healthz and /readyz endpoints beside the API.
package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Limits every connection is held to. A catalog server answers anyone on
// the network: a client that trickles its headers, never reads its answer
// or keeps idle connections open must not tie up the server, nor keep a
// retired index file on disk for long.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = time.Minute
	// WriteTimeout bounds a whole answer, and with it how long a request
	// holds the index file it answers from: when it passes, the answer's
	// writes fail and its context ends (withDeadline), and the API's
	// handlers stop and let the file go. So a file that a rebuild retired
	// is removed about WriteTimeout after the rebuild at the latest, however
	// slowly its readers read, and a catalog has on disk at most one
	// retired file per rebuild of the last WriteTimeout besides its live one
	// (TestStalledReadersReleaseRetiredIndex). The largest answer,
	// /api/v1/all of a 100 MB catalog, takes under a minute on a 2 MB/s
	// link; a client that cannot keep up can resume with a Range request.
	WriteTimeout   = 10 * time.Minute
	IdleTimeout    = 2 * time.Minute
	MaxHeaderBytes = 64 << 10
	// ShutdownGrace is how long in-flight requests may take to finish when
	// the process is asked to stop.
	ShutdownGrace = 10 * time.Second
)

// Options configures New.
type Options struct {
	// API answers every path but /healthz and /readyz.
	API http.Handler
	// Ready says whether this process can answer for every catalog it
	// should serve; /readyz answers 503 with its error otherwise.
	Ready func() error
	// TLSCertFile and TLSKeyFile, when set, make the server speak HTTPS
	// with that certificate, reloaded whenever the files change (a rotated
	// Secret). The command line checks that both or neither are given
	// (internal/daemon).
	TLSCertFile, TLSKeyFile string
	Log                     logr.Logger
	// WriteTimeout, when not zero, replaces the package's WriteTimeout. It
	// exists for tests, which watch a stalled client be cut off and the
	// index file it held be removed without waiting the full ten minutes.
	WriteTimeout time.Duration
}

// Server is the API's http.Server and, with TLS, the watcher that keeps its
// certificate current; the caller runs the watcher (Start) while serving.
type Server struct {
	HTTP *http.Server
	// Certs is nil without TLS.
	Certs *certwatcher.CertWatcher
}

// New builds the server. It fails when the certificate cannot be loaded.
func New(opts Options) (*Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { plain(w, http.StatusOK, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := opts.Ready(); err != nil {
			plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
		plain(w, http.StatusOK, "ok")
	})
	mux.Handle("/", opts.API)
	writeTimeout := WriteTimeout
	if opts.WriteTimeout != 0 {
		writeTimeout = opts.WriteTimeout
	}
	s := &Server{HTTP: &http.Server{
		Handler:           withDeadline(mux, writeTimeout),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          stdlog.New(logWriter{opts.Log}, "", 0),
	}}
	if opts.TLSCertFile == "" {
		return s, nil
	}
	w, err := certwatcher.New(opts.TLSCertFile, opts.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate: %w", err)
	}
	s.Certs = w
	s.HTTP.TLSConfig = &tls.Config{
		GetCertificate: w.GetCertificate,
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
	}
	return s, nil
}

// Listener wraps ln in TLS when the server has a certificate. It asks
// Certs, not HTTP.TLSConfig: net/http's Serve sets a TLSConfig of its own on
// a plain-HTTP server (to set up HTTP/2), so that field says nothing once
// serving has begun.
func (s *Server) Listener(ln net.Listener) net.Listener {
	if s.Certs == nil {
		return ln
	}
	return tls.NewListener(ln, s.HTTP.TLSConfig)
}

// Scheme is "https" with TLS, else "http".
func (s *Server) Scheme() string {
	if s.Certs != nil {
		return "https"
	}
	return "http"
}

// Serve answers on ln until ctx ends, then lets in-flight requests finish
// for up to ShutdownGrace. Requests keep a context of their own: cancelling
// them with ctx would cut off the requests Shutdown lets finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.Certs != nil {
		go func() { _ = s.Certs.Start(ctx) }()
	}
	served := make(chan error, 1)
	go func() { served <- s.HTTP.Serve(s.Listener(ln)) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("serve HTTP: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	if shutdownErr := s.HTTP.Shutdown(shutdownCtx); shutdownErr != nil {
		err = errors.Join(err, fmt.Errorf("shut down HTTP server: %w", shutdownErr))
		_ = s.HTTP.Close()
	}
	return err
}

// withDeadline ends each request's context when its write deadline
// passes. net/http only makes writes fail after WriteTimeout; a handler busy
// in an index query rather than in a write would run on, holding its index
// snapshot. Queries stop when their context ends, so with this no request
// holds a snapshot much past WriteTimeout, whatever it is doing.
func withDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func plain(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}

// logWriter sends the HTTP server's own messages (TLS handshake errors,
// panics it recovered) to the structured log.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
