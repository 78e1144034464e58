package unpack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// guardTransport is the bottom of the unpacker's transport stack: below
// go-containerregistry's own transports, so that it sees every request,
// including token requests, redirects and its plain-HTTP fallback. It
// refuses plain HTTP to hosts not explicitly listed, bounds the redirects
// one request may follow, bounds how long a response body may go without
// delivering a byte, and bounds the size of manifest bodies, which
// go-containerregistry would otherwise read whole up to 100 MiB.
type guardTransport struct {
	next        http.RoundTripper
	allowed     map[string]bool
	idle        time.Duration
	maxManifest int64
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.allowed[strings.ToLower(req.URL.Host)] {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s (pass --insecure-registry %s to allow it)", ErrPlainHTTPNotAllowed, req.URL.Host, req.URL.Host)
	}
	if err := checkRedirects(req); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	// Cancelling this context is what aborts a body read that stalls; the
	// caller's context still cancels it too.
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := g.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	isManifest := req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/manifests/")
	if isManifest && resp.ContentLength > g.maxManifest {
		resp.Body.Close()
		cancel()
		return nil, &LimitError{Limit: "MaxManifestBytes", Max: g.maxManifest, Entry: "the manifest"}
	}
	var body io.ReadCloser = newIdleBody(resp.Body, g.idle, cancel)
	if isManifest {
		body = &limitedBody{ReadCloser: body, left: g.maxManifest, max: g.maxManifest}
	}
	resp.Body = body
	return resp, nil
}

// maxRedirects is how many redirects one request may follow: the bound of
// 10 that net/http applies by default. go-containerregistry gives its clients a CheckRedirect (a check
// against redirects to private addresses) that replaces net/http's limit
// without one of its own, so a registry redirecting a request to itself
// would be followed forever, the client keeping every response of the
// chain. The limit is kept here, below their check, which stays as it is.
const maxRedirects = 10

// checkRedirects refuses req when it is a redirect past maxRedirects. A
// redirected request carries the response that redirected it, and that
// response the request before it, so the chain is counted without state.
func checkRedirects(req *http.Request) error {
	n := 0
	first := req
	for r := req; r.Response != nil && r.Response.Request != nil; r = r.Response.Request {
		n++
		first = r.Response.Request
	}
	if n <= maxRedirects {
		return nil
	}
	return &RedirectError{Host: first.URL.Host, Path: first.URL.Path, Max: maxRedirects}
}

// idleBody fails a read that waits longer than idle for data, so a registry
// that stops sending in the middle of a body cannot hold a pull forever.
// Time the caller spends between reads does not count: a slow disk is not
// the registry's fault.
type idleBody struct {
	body     io.ReadCloser
	idle     time.Duration
	timer    *time.Timer
	timedOut atomic.Bool
	cancel   context.CancelFunc
	once     sync.Once
}

func newIdleBody(body io.ReadCloser, idle time.Duration, cancel context.CancelFunc) *idleBody {
	b := &idleBody{body: body, idle: idle, cancel: cancel}
	b.timer = time.AfterFunc(time.Hour, func() {
		b.timedOut.Store(true)
		cancel()
	})
	b.timer.Stop()
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.timedOut.Load() {
		return 0, b.timeoutError()
	}
	b.timer.Reset(b.idle)
	n, err := b.body.Read(p)
	if !b.timer.Stop() && b.timedOut.Load() {
		return n, b.timeoutError()
	}
	return n, err
}

func (b *idleBody) timeoutError() error {
	return &TimeoutError{Op: "reading a registry response", After: b.idle, Idle: true}
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.once.Do(b.cancel)
	return err
}

// limitedBody fails, rather than truncates, a body longer than max.
type limitedBody struct {
	io.ReadCloser
	left, max int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, &LimitError{Limit: "MaxManifestBytes", Max: l.max, Entry: "the manifest"}
	}
	// Read one byte past the limit to tell "exactly max" from "more".
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.ReadCloser.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, &LimitError{Limit: "MaxManifestBytes", Max: l.max, Entry: "the manifest"}
	}
	return n, err
}
