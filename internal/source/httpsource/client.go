// Package httpsource fetches a catalog served at an http(s) URL: a .tar,
// .tar.gz or .tgz archive of a catalog directory, or one FBC .json, .yaml
// or .yml file. The bytes go through the image layers' extractor
// (unpack.Unpacker.ExtractArchive), so an archive gets exactly a layer's
// rules and limits; a single file goes in as a one-entry tar stream.
//
// A Client is made once per process: it remembers, per URL, the validators
// (ETag, Last-Modified) of the bytes it last downloaded and their SHA-256,
// so that polling an unchanged URL is one conditional request answered with
// 304 and nothing downloaded.
//
// The remote is followed no further than it points: redirects are capped,
// a redirect to another host may not reach a loopback, link-local or
// cloud-metadata address (the rule of package remoteaddr, checked on the
// address dialled), credentials go only to the URL's own host and
// never in the clear to a host that is not this machine, and a failed
// response's body is never read into an error or a log.
package httpsource

import (
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/source/remoteaddr"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Extractor writes an archive into a new directory under the image layers'
// rules and limits; *unpack.Unpacker provides it.
type Extractor interface {
	ExtractArchive(ctx context.Context, r io.Reader, dst string) (unpack.Result, error)
}

// Options configures a Client.
type Options struct {
	// Extractor extracts every download; required.
	Extractor Extractor
	// PullTimeout bounds one Fetch as a whole, however steadily bytes
	// arrive. Zero means unpack.DefaultPullTimeout.
	PullTimeout time.Duration
	// RequestTimeout bounds how long the server (and those it redirects to)
	// may take to answer with response headers; IdleTimeout how long a
	// body may go without delivering a byte. Zero means unpack's defaults.
	RequestTimeout, IdleTimeout time.Duration
	// MaxDownloadBytes bounds the bytes downloaded in one Fetch: a larger
	// Content-Length is refused before the body is read, and the body is
	// read no further. Zero means unpack.DefaultMaxDownloadBytes.
	MaxDownloadBytes int64
	// CABundle is PEM certificates every Fetch trusts besides the system's
	// (the process's --ca-file); a Fetcher's own bundle (http.caSecretRef)
	// is trusted in addition to both.
	CABundle []byte
	// Log receives what a Fetch did (V(1)). Credentials and response
	// bodies are never logged.
	Log logr.Logger
	// DialContext, when set, opens connections in place of a net.Dialer.
	// Tests use it to reach a made-up host name on 127.0.0.1; the address
	// rules for redirects to other hosts apply to the remote address of the
	// connection it returns.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// maxCachedURLs bounds the validators remembered: one entry per URL ever
// fetched would otherwise grow with every catalog a cluster ever had.
const maxCachedURLs = 1024

// maxRedirects is how many redirects one request may follow, as for
// registries (net/http's own default).
const maxRedirects = 10

// Client fetches catalogs over HTTP. It is safe for concurrent use.
type Client struct {
	opts Options
	log  logr.Logger
	// own and other carry, without a CA bundle of a Fetcher's, the
	// requests to the URL's own host name and to any other host
	// (redirects), whose connections are checked (remoteaddr.Router).
	own, other *http.Transport

	mu    sync.Mutex
	cache map[string]*list.Element // URL → element of lru, holding a *validated
	lru   *list.List               // most recently used first
}

// validated is what a URL last served: the validators of the bytes
// downloaded from it and their digest.
type validated struct {
	url          string
	etag         string
	lastModified string
	digest       string
}

// New returns a Client; make one per process, so that its memory of
// validators serves every poll.
func New(opts Options) (*Client, error) {
	if opts.Extractor == nil {
		return nil, errors.New("creating HTTP source client: an extractor is required")
	}
	opts.PullTimeout = orDefault(opts.PullTimeout, unpack.DefaultPullTimeout)
	opts.RequestTimeout = orDefault(opts.RequestTimeout, unpack.DefaultRequestTimeout)
	opts.IdleTimeout = orDefault(opts.IdleTimeout, unpack.DefaultIdleTimeout)
	opts.MaxDownloadBytes = orDefault(opts.MaxDownloadBytes, unpack.DefaultMaxDownloadBytes)
	c := &Client{opts: opts, log: opts.Log, cache: map[string]*list.Element{}, lru: list.New()}
	var pool *x509.CertPool
	if len(opts.CABundle) > 0 {
		var err error
		if pool, err = c.trusting(nil); err != nil {
			return nil, fmt.Errorf("creating HTTP source client: the CA bundle %w", err)
		}
	}
	c.own = c.newTransport(pool, false)
	c.other = c.newTransport(pool, true)
	return c, nil
}

// trusting is the system's certificate pool with the Client's CA bundle
// and caBundle (PEM) added; an error says that one of them holds no
// certificate.
func (c *Client) trusting(caBundle []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, b := range [][]byte{c.opts.CABundle, caBundle} {
		if len(b) > 0 && !pool.AppendCertsFromPEM(b) {
			return nil, errors.New("holds no PEM certificate")
		}
	}
	return pool, nil
}

func orDefault[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// newTransport returns a transport trusting pool in addition to the system
// roots (nil: the system roots alone), whose connections are checked by
// the remoteaddr rule when guarded.
func (c *Client) newTransport(pool *x509.CertPool, guarded bool) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Compressed transfer would be undone by net/http, and the digest
	// would then not be of the bytes served.
	t.DisableCompression = true
	if pool != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	switch {
	case guarded:
		t.DialContext = remoteaddr.Guard(c.opts.DialContext)
	case c.opts.DialContext != nil:
		t.DialContext = c.opts.DialContext
	}
	return t
}

// transportsFor returns the transports for a Fetcher with caBundle (PEM):
// the Client's own when it is empty, new ones trusting it otherwise, which
// the Fetcher closes the idle connections of after each Fetch.
func (c *Client) transportsFor(caBundle []byte) (own, other *http.Transport, err error) {
	if len(caBundle) == 0 {
		return c.own, c.other, nil
	}
	pool, err := c.trusting(caBundle)
	if err != nil {
		return nil, nil, err
	}
	return c.newTransport(pool, false), c.newTransport(pool, true), nil
}

// remembered returns what url last served, and marks it recently used.
func (c *Client) remembered(url string) (validated, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cache[url]
	if !ok {
		return validated{}, false
	}
	c.lru.MoveToFront(e)
	return *e.Value.(*validated), true
}

// remember records v, or forgets v.url when v has no validator; the least
// recently used entry goes when there are too many.
func (c *Client) remember(v validated) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cache[v.url]; ok {
		c.lru.Remove(e)
		delete(c.cache, v.url)
	}
	if v.etag == "" && v.lastModified == "" {
		return
	}
	c.cache[v.url] = c.lru.PushFront(&v)
	for c.lru.Len() > maxCachedURLs {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.cache, last.Value.(*validated).url)
	}
}
