package httpsource

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/remoteaddr"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Fetcher returns the fetcher of spec, presenting auth to the URL's host;
// downloads and extracted catalogs go to new directories under tempDir
// that Fetched.Cleanup removes.
func (c *Client) Fetcher(spec source.HTTP, auth Auth, tempDir string) source.Fetcher {
	return &fetcher{c: c, spec: spec, auth: auth, tempDir: tempDir}
}

type fetcher struct {
	c       *Client
	spec    source.HTTP
	auth    Auth
	tempDir string
}

// Describe is the URL.
func (f *fetcher) Describe() string { return f.spec.URL }

// Built matches an index built from the same URL, whatever bytes it served.
func (f *fetcher) Built(ref string) bool {
	u, _, _ := strings.Cut(ref, "#sha256=")
	return u == f.spec.URL
}

var (
	errPullTimeout    = errors.New("pull timeout")
	errRequestTimeout = errors.New("request timeout")
	errIdleTimeout    = errors.New("idle timeout")
)

// Fetch gets what the URL serves now, or, when the spec is pinned, exactly
// the bytes of its SHA-256. It asks skip before it downloads when it can
// tell the digest without downloading (a pin, or a 304 for validators it
// remembers), and again before it extracts.
func (f *fetcher) Fetch(ctx context.Context, skip func(digest string) bool) (source.Fetched, error) {
	u, err := f.checkURL()
	if err != nil {
		return source.Fetched{}, err
	}
	shown := redacted(u)
	if f.spec.SHA256 != "" {
		// Content addressed by its digest: nothing to ask the server.
		if d := "sha256:" + f.spec.SHA256; skip(d) {
			return source.Fetched{Content: index.Content{Ref: f.spec.String(), Digest: d}}, nil
		}
	}
	own, other, err := f.c.transportsFor(f.auth.CABundle)
	if err != nil {
		return source.Fetched{}, fmt.Errorf("fetch %s: the CA bundle of Secret %q %w", shown, f.auth.CASecretName, err)
	}
	if own != f.c.own {
		defer own.CloseIdleConnections()
		defer other.CloseIdleConnections()
	}
	pullCtx, cancel := context.WithTimeoutCause(ctx, f.c.opts.PullTimeout, errPullTimeout)
	defer cancel()
	// A sync's logger names the catalog; the Client's serves the others.
	log, err := logr.FromContext(ctx)
	if err != nil {
		log = f.c.log
	}
	g := &get{
		f:   f,
		u:   u,
		log: log.WithValues("url", shown),
		client: &http.Client{
			Transport: &fetchTransport{next: &remoteaddr.Router{Host: u.Hostname(), Own: own, Other: other}, url: u, auth: f.auth},
			CheckRedirect: func(_ *http.Request, via []*http.Request) error {
				if len(via) > maxRedirects {
					return errTooManyRedirects
				}
				return nil
			},
		},
	}
	fetched, err := g.run(pullCtx, skip)
	if err != nil && errors.Is(context.Cause(pullCtx), errPullTimeout) && ctx.Err() == nil {
		// What was cut short says nothing more than the bound that cut it.
		err = fmt.Errorf("fetch %s: gave up after the pull timeout of %s", shown, f.c.opts.PullTimeout)
	}
	return fetched, err
}

var errTooManyRedirects = fmt.Errorf("redirected more than %d times (a redirect loop?)", maxRedirects)

// checkURL parses the spec's URL and refuses what cannot be fetched
// safely. Its messages never repeat userinfo.
func (f *fetcher) checkURL() (*url.URL, error) {
	u, err := url.Parse(f.spec.URL)
	if err != nil {
		return nil, fmt.Errorf("fetch: the URL does not parse: want http(s)://HOST/PATH")
	}
	shown := redacted(u)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("fetch %s: the URL's scheme must be http or https", shown)
	case u.Host == "":
		return nil, fmt.Errorf("fetch %s: the URL has no host", shown)
	case u.User != nil:
		return nil, fmt.Errorf("fetch %s: the URL holds credentials: put them in a Secret (http.secretRef) instead", shown)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// redacted is u as errors and logs show it: without userinfo, query or
// fragment, which may hold credentials or signed tokens.
func redacted(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return v.String()
}

// get is one Fetch's exchange with the server.
type get struct {
	f      *fetcher
	u      *url.URL
	log    logr.Logger
	client *http.Client
}

func (g *get) shown() string { return redacted(g.u) }

func (g *get) run(ctx context.Context, skip func(string) bool) (source.Fetched, error) {
	opts := g.f.c.opts
	key := g.u.String() + "\x00" + g.f.auth.SecretName
	var cond *validated
	if prev, ok := g.f.c.remembered(key); ok && g.f.spec.SHA256 == "" {
		cond = &prev
	}
	resp, cancelReq, err := g.do(ctx, cond)
	if err != nil {
		return source.Fetched{}, err
	}
	if resp.StatusCode == http.StatusNotModified && cond != nil {
		resp.Body.Close()
		cancelReq(nil)
		ref := source.HTTP{URL: g.f.spec.URL, SHA256: strings.TrimPrefix(cond.digest, "sha256:")}.String()
		if skip(cond.digest) {
			g.log.V(1).Info("not modified", "digest", cond.digest)
			return source.Fetched{Content: index.Content{Ref: ref, Digest: cond.digest}}, nil
		}
		// Unchanged, but wanted: only a full answer has the bytes.
		if resp, cancelReq, err = g.do(ctx, nil); err != nil {
			return source.Fetched{}, err
		}
	}
	defer func() { cancelReq(nil) }()
	defer resp.Body.Close()
	if err := g.checkStatus(resp); err != nil {
		return source.Fetched{}, err
	}
	fm, err := formOf(resp.Header.Get("Content-Type"), g.u.Path, resp.Request.URL.Path)
	if err != nil {
		return source.Fetched{}, fmt.Errorf("fetch %s: %w", g.shown(), err)
	}
	if resp.ContentLength > opts.MaxDownloadBytes {
		return source.Fetched{}, fmt.Errorf("fetch %s: the server declares %d bytes, more than MaxDownloadBytes (%d)", g.shown(), resp.ContentLength, opts.MaxDownloadBytes)
	}

	if err := os.MkdirAll(g.f.tempDir, 0o755); err != nil {
		return source.Fetched{}, fmt.Errorf("fetch %s: create download directory: %w", g.shown(), err)
	}
	tmp, err := os.MkdirTemp(g.f.tempDir, datadir.UnpackPrefix)
	if err != nil {
		return source.Fetched{}, fmt.Errorf("fetch %s: create download directory: %w", g.shown(), err)
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	fetched, err := g.download(ctx, resp, fm, tmp, key, skip)
	if err != nil || fetched.FS == nil {
		cleanup()
		return fetched, err
	}
	fetched.Cleanup = cleanup
	return fetched, nil
}

// download reads the body into a file under tmp, hashing it, checks the
// pin, remembers the validators, asks skip, and extracts.
func (g *get) download(ctx context.Context, resp *http.Response, fm form, tmp, key string, skip func(string) bool) (source.Fetched, error) {
	limit := g.f.c.opts.MaxDownloadBytes
	path := filepath.Join(tmp, "download")
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return source.Fetched{}, fmt.Errorf("fetch %s: create download file: %w", g.shown(), err)
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(file, h), &io.LimitedReader{R: resp.Body, N: limit + 1})
	if err != nil {
		return source.Fetched{}, g.explain(resp.Request.Context(), fmt.Errorf("reading the body: %w", err))
	}
	if n > limit {
		return source.Fetched{}, fmt.Errorf("fetch %s: the body is larger than MaxDownloadBytes (%d)", g.shown(), limit)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	digest := "sha256:" + sum
	res := source.Fetched{Content: index.Content{Ref: source.HTTP{URL: g.f.spec.URL, SHA256: sum}.String(), Digest: digest}}
	if pin := g.f.spec.SHA256; pin != "" && pin != sum {
		return res, source.Terminal(fmt.Errorf("fetch %s: checksum mismatch: want sha256 %s (http.sha256), the server sent %s", g.shown(), pin, sum))
	}
	g.f.c.remember(validated{url: key, etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified"), digest: digest})
	g.log.V(1).Info("downloaded", "bytes", n, "digest", digest)
	if skip(digest) {
		return res, nil
	}

	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("fetch %s: rewind download file: %w", g.shown(), err)
	}
	var archive io.Reader = file
	if !fm.archive {
		if archive, err = unpack.FileArchive(fm.name, n, file); err != nil {
			return res, fmt.Errorf("fetch %s: %w", g.shown(), err)
		}
	}
	dst := filepath.Join(tmp, "fbc")
	out, err := g.f.c.opts.Extractor.ExtractArchive(ctx, archive, dst)
	var corrupt *unpack.CorruptLayerError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return res, fmt.Errorf("fetch %s: extract: %w", g.shown(), err)
	case errors.As(err, &corrupt):
		return res, source.Terminal(fmt.Errorf("fetch %s: the download is not a tar archive (plain, gzip or zstd): %w", g.shown(), corrupt.Err))
	case unpack.IsTerminal(err):
		return res, source.Terminal(fmt.Errorf("fetch %s: %w", g.shown(), err))
	default:
		return res, fmt.Errorf("fetch %s: %w", g.shown(), err)
	}
	// The download is no longer needed: only the catalog stays on disk.
	_ = os.Remove(path)
	g.log.V(1).Info("extracted", "files", out.Files, "bytes", out.Bytes)
	res.FS = catalogdir.FS(dst)
	res.FileHash = out.FileHash
	res.Pulled = true
	res.Bytes = out.Bytes
	return res, nil
}

// do sends one GET, conditional on cond when set, bounded by the request
// timeout until the response headers arrive and by the idle timeout while
// its body is read. cancelReq releases the request's context.
func (g *get) do(ctx context.Context, cond *validated) (*http.Response, context.CancelCauseFunc, error) {
	opts := g.f.c.opts
	reqCtx, cancelReq := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, g.u.String(), nil)
	if err != nil {
		cancelReq(nil)
		return nil, nil, fmt.Errorf("fetch %s: %w", g.shown(), err)
	}
	if cond != nil {
		if cond.etag != "" {
			req.Header.Set("If-None-Match", cond.etag)
		}
		if cond.lastModified != "" {
			req.Header.Set("If-Modified-Since", cond.lastModified)
		}
	}
	timer := time.AfterFunc(opts.RequestTimeout, func() { cancelReq(errRequestTimeout) })
	resp, err := g.client.Do(req)
	timer.Stop()
	if err != nil {
		err = g.explain(reqCtx, err)
		cancelReq(nil)
		return nil, nil, err
	}
	resp.Body = newIdleBody(resp.Body, opts.IdleTimeout, func() { cancelReq(errIdleTimeout) })
	return resp, cancelReq, nil
}

// checkStatus turns a failed response into one line: its status, never
// its body.
func (g *get) checkStatus(resp *http.Response) error {
	code := resp.StatusCode
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	auth := g.f.auth
	switch {
	case code == http.StatusOK:
		return nil
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && auth.present():
		return fmt.Errorf("fetch %s: the server refused the credentials of Secret %s (%s)", g.shown(), auth.secretName(), status)
	case code == http.StatusUnauthorized:
		return fmt.Errorf("fetch %s: the server wants credentials (%s): name a Secret in http.secretRef", g.shown(), status)
	case code == http.StatusForbidden:
		return fmt.Errorf("fetch %s: access denied (%s)", g.shown(), status)
	case code == http.StatusNotFound:
		return fmt.Errorf("fetch %s: not found (%s)", g.shown(), status)
	}
	return fmt.Errorf("fetch %s: the server answered %s", g.shown(), status)
}

// explain phrases an error of a request: the bound that stopped it, or
// what could not be reached. net/http's *url.Error is unwrapped, since it
// repeats the URL, query included.
func (g *get) explain(reqCtx context.Context, err error) error {
	opts := g.f.c.opts
	if host, refused, ok := remoteaddr.Refusal(err); ok {
		return fmt.Errorf("fetch %s: redirected to %s: %w", g.shown(), host, refused)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var unknownCA x509.UnknownAuthorityError
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch cause := context.Cause(reqCtx); {
	case errors.Is(cause, errRequestTimeout):
		return fmt.Errorf("fetch %s: the server did not answer within %s (request timeout)", g.shown(), opts.RequestTimeout)
	case errors.Is(cause, errIdleTimeout):
		return fmt.Errorf("fetch %s: the server sent nothing for %s (idle timeout)", g.shown(), opts.IdleTimeout)
	case errors.Is(cause, errPullTimeout):
		// Said by Fetch, which knows it was not its caller's deadline.
		return fmt.Errorf("fetch %s: %w", g.shown(), err)
	case errors.Is(err, errTooManyRedirects), errors.Is(err, errPlainCredentials):
		return fmt.Errorf("fetch %s: %w", g.shown(), err)
	case errors.As(err, &unknownCA):
		return fmt.Errorf("fetch %s: %w (trust the server's CA with http.caSecretRef)", g.shown(), err)
	case errors.As(err, &dnsErr), errors.As(err, &opErr):
		return fmt.Errorf("fetch %s: cannot reach the server: %w", g.shown(), err)
	}
	return fmt.Errorf("fetch %s: %w", g.shown(), err)
}

// errPlainCredentials refuses to send credentials in the clear.
var errPlainCredentials = errors.New("refusing to send credentials over plain http to a host other than this machine: use https")

// fetchTransport adds credentials to the requests of one Fetch to the
// URL's host and port, and to no other.
type fetchTransport struct {
	next http.RoundTripper
	url  *url.URL
	auth Auth
}

func (t *fetchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.auth.present() && hostPort(req.URL) == hostPort(t.url) {
		if req.URL.Scheme != "https" && !isLoopbackName(req.URL.Hostname()) {
			closeBody(req)
			return nil, fmt.Errorf("secret %s: %w", t.auth.secretName(), errPlainCredentials)
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", t.auth.header())
	}
	return t.next.RoundTrip(req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// hostPort is u's host name, lower case, and port, the scheme's default
// when none is written.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// isLoopbackName reports whether host names this machine: "localhost" or a
// loopback IP.
func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// idleBody calls stall when one read waits longer than idle, which cancels
// the request; time between reads is the reader's, not the server's.
type idleBody struct {
	io.ReadCloser
	idle  time.Duration
	timer *time.Timer
}

func newIdleBody(body io.ReadCloser, idle time.Duration, stall func()) *idleBody {
	t := time.AfterFunc(idle, stall)
	t.Stop()
	return &idleBody{ReadCloser: body, idle: idle, timer: t}
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.idle)
	n, err := b.ReadCloser.Read(p)
	b.timer.Stop()
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.ReadCloser.Close()
}
