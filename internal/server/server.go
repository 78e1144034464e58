// Package server owns how catalogd's HTTP API meets the network, the same in
// `catalogd serve` and `catalogd manager`: the http.Server's timeouts and
// size limits, TLS with a certificate reloaded when its files change, and
// the /healthz and /readyz endpoints beside the API.
package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/chunkcopy"
)

// Limits every connection is held to. A catalog server answers anyone on
// the network: a client that trickles its headers, never reads its answer
// or keeps idle connections open must not tie up the server, nor keep a
// retired index file on disk for long.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = time.Minute
	// WriteIdleTimeout bounds how long an answer may go without progress,
	// not how long it may take: the largest answer, /api/v1/all of a 1.3 GB
	// catalog, takes over ten minutes on a 2 MB/s link, and a client that
	// keeps reading must get it whole. Each write an answer starts must end
	// within WriteIdleTimeout, and a handler that writes nothing for that
	// long (busy in a query, or blocked on a client that stopped reading)
	// sees its context end (withProgressDeadline), stops and lets its index
	// file go. So a file that a rebuild retired is removed once its readers
	// have finished or stalled for WriteIdleTimeout
	// (TestStalledReadersReleaseRetiredIndex); a reader that keeps reading
	// holds it until its answer is sent, which is the price of not cutting
	// slow links. Answers are written at most progressChunk (1 MiB) at a
	// time, so a client that reads at least 1 MiB a minute (about 17 KiB/s)
	// is never cut; a slower one may be.
	WriteIdleTimeout = time.Minute
	IdleTimeout      = 2 * time.Minute
	MaxHeaderBytes   = 64 << 10
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
}

// Server is the API's http.Server and, with TLS, its certificate, which
// the handshakes keep current (certFiles).
type Server struct {
	HTTP *http.Server
	// certs is nil without TLS.
	certs *certFiles
}

// New builds the server. It fails when the certificate cannot be loaded.
func New(opts Options) (*Server, error) { return newServer(opts, WriteIdleTimeout) }

// newServer builds the server with writeIdle as its WriteIdleTimeout.
func newServer(opts Options, writeIdle time.Duration) (*Server, error) {
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
	s := &Server{HTTP: &http.Server{
		Handler:           withProgressDeadline(mux, writeIdle),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		// The write deadline of a request's first window, set as net/http
		// reads the request; withProgressDeadline moves it on as the
		// answer is written.
		WriteTimeout:   writeIdle,
		IdleTimeout:    IdleTimeout,
		MaxHeaderBytes: MaxHeaderBytes,
		ErrorLog:       stdlog.New(logWriter{opts.Log}, "", 0),
	}}
	if opts.TLSCertFile == "" {
		return s, nil
	}
	certs, err := loadCertFiles(opts.TLSCertFile, opts.TLSKeyFile, opts.Log)
	if err != nil {
		return nil, err
	}
	s.certs = certs
	s.HTTP.TLSConfig = &tls.Config{
		GetCertificate: certs.GetCertificate,
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
	}
	return s, nil
}

// Listener wraps ln in TLS when the server has a certificate. It asks
// certs, not HTTP.TLSConfig: net/http's Serve sets a TLSConfig of its own on
// a plain-HTTP server (to set up HTTP/2), so that field says nothing once
// serving has begun.
func (s *Server) Listener(ln net.Listener) net.Listener {
	if s.certs == nil {
		return ln
	}
	return tls.NewListener(ln, s.HTTP.TLSConfig)
}

// Scheme is "https" with TLS, else "http".
func (s *Server) Scheme() string {
	if s.certs != nil {
		return "https"
	}
	return "http"
}

// Serve answers on ln until ctx ends, then lets in-flight requests finish
// for up to ShutdownGrace. Requests keep a context of their own: cancelling
// them with ctx would cut off the requests Shutdown lets finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
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

// withProgressDeadline holds each answer to a deadline that moves on as it
// is written: every write the handler starts must end within idle (the
// connection's write deadline, set through http.ResponseController), and
// the request's context ends once idle has passed without a write starting
// or ending. net/http by itself only makes writes fail; a handler busy in
// an index query rather than in a write would run on, holding its index
// snapshot. Queries stop when their context ends, so no request holds a
// snapshot much past idle without progress, whatever it is doing.
func withProgressDeadline(next http.Handler, idle time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		pw := &progressWriter{
			ResponseWriter: w,
			rc:             http.NewResponseController(w),
			idle:           idle,
			timer: time.AfterFunc(idle, func() {
				cancel(fmt.Errorf("no progress writing the answer for %v: %w", idle, context.DeadlineExceeded))
			}),
		}
		defer pw.timer.Stop()
		pw.progress(time.Now())
		next.ServeHTTP(pw, r.WithContext(ctx))
	})
}

// progressChunk is the most bytes progressWriter hands the connection in
// one write from a reader, so that a client reading at least progressChunk
// per idle period is never cut. It is as large as the API's own copies from
// files (internal/httpapi's copyChunk), which pass through unsplit:
// smaller pieces cost sendfile throughput.
const progressChunk = 1 << 20

// progressWriter is the ResponseWriter of withProgressDeadline: each write
// starts a new idle period. The deadline and the timer are moved at most
// every idle/64, so that the many small writes of a compressed answer do not
// each pay for it; a period is thus between 63/64 of idle and idle long.
type progressWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	idle  time.Duration
	timer *time.Timer
	// moved is when the deadline and the timer were last moved.
	moved time.Time
}

func (w *progressWriter) progress(now time.Time) {
	if now.Sub(w.moved) < w.idle/64 {
		return
	}
	w.moved = now
	w.timer.Reset(w.idle)
	// A writer below that cannot take a deadline (an in-process test
	// recorder) has no connection to hold.
	_ = w.rc.SetWriteDeadline(now.Add(w.idle))
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.progress(time.Now())
	n, err := w.ResponseWriter.Write(p)
	w.progress(time.Now())
	return n, err
}

// ReadFrom keeps the ReadFrom of net/http's writer, which sends a file with
// sendfile on a plain connection, and gives each progressChunk a period of
// its own. A *io.LimitedReader of at most progressChunk passes through as
// it is: net/http looks no deeper than one LimitedReader for a file.
func (w *progressWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{w}, src)
	}
	// Each piece starts a period; the end of one is the start of the next,
	// and the last is marked once the copy returns.
	n, err := chunkcopy.ReadFrom(rf, src, progressChunk, func() error {
		w.progress(time.Now())
		return nil
	})
	w.progress(time.Now())
	return n, err
}

// Flush sends what is buffered, which is a write too.
func (w *progressWriter) Flush() {
	w.progress(time.Now())
	_ = w.rc.Flush()
	w.progress(time.Now())
}

// Hijack is there for middleware that offers the methods of the writer it
// wraps only when all of them are there (chi's, which the API logs with).
func (w *progressWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.rc.Hijack()
}

func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
