// Package registrytest runs a real OCI registry inside a test process and
// pushes catalog images to it, so that code pulling images is tested against
// the registry protocol rather than a fake.
//
// The registry is go-containerregistry's pkg/registry, served by
// net/http/httptest on 127.0.0.1, plain HTTP unless WithTLS is given. Every
// request is counted by kind, so a test can assert for example that polling
// an unchanged tag fetched no blob:
//
//	reg := registrytest.New(t)
//	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", "testdata/demo", registrytest.PushOptions{})
//	reg.Reset()
//	// ... poll ...
//	if n := reg.Counts().BlobGets; n != 0 { t.Errorf("fetched %d blobs", n) }
//
// Clients must be told the registry is insecure (plain HTTP), for example
// with the host in the unpacker's InsecureRegistries.
package registrytest

import (
	"crypto/subtle"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Counts is how many requests of each kind the registry received, including
// ones it refused. Pushes show up as uploads, blob HEADs and manifest PUTs.
type Counts struct {
	// Pings counts GET /v2/ (the API version check every client starts with).
	Pings int
	// ManifestHeads and ManifestGets count HEAD and GET on /v2/<repo>/manifests/<ref>.
	ManifestHeads int
	ManifestGets  int
	// ManifestPuts counts manifest uploads.
	ManifestPuts int
	// BlobHeads and BlobGets count HEAD and GET on /v2/<repo>/blobs/<digest>.
	BlobHeads int
	BlobGets  int
	// Uploads counts requests under /v2/<repo>/blobs/uploads/.
	Uploads int
	// Other counts everything else (tags list, catalog, referrers, ...).
	Other int
	// Total is the sum of all of the above.
	Total int
}

// Request is one request the registry received.
type Request struct {
	Method string
	Path   string
}

// Registry is a running in-process registry. Its methods are safe for
// concurrent use.
type Registry struct {
	// Host is host:port, ready to prefix a repository: Host + "/catalogs/demo:v1".
	Host string
	// URL is the base URL, http:// or https://.
	URL string

	server    *httptest.Server
	username  string
	password  string
	tls       bool
	referrers bool

	mu        sync.Mutex
	counts    Counts
	requests  []Request
	intercept func(http.ResponseWriter, *http.Request) bool
}

// Option configures New.
type Option func(*Registry)

// WithBasicAuth makes the registry require HTTP basic authentication with the
// given credentials on every request, as a private registry would.
func WithBasicAuth(username, password string) Option {
	return func(r *Registry) { r.username, r.password = username, password }
}

// WithTLS serves the registry over HTTPS with httptest's certificate, which
// is valid for 127.0.0.1. Clients must trust CAPEM.
func WithTLS() Option {
	return func(r *Registry) { r.tls = true }
}

// WithReferrers gives the registry the OCI 1.1 referrers API
// (GET /v2/<repo>/referrers/<digest>). Without it, clients keep the
// referrers of a manifest in the distribution spec's fallback tag
// (sha256-<hex>), as they do with registries that predate the API.
func WithReferrers() Option {
	return func(r *Registry) { r.referrers = true }
}

// Start runs a plain-HTTP registry for the rest of the test and returns its
// host:port. Use New for request counts, authentication or TLS.
func Start(t testing.TB) string {
	t.Helper()
	return New(t).Host
}

// New runs a registry on 127.0.0.1 until the test ends.
func New(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	r := &Registry{}
	for _, o := range opts {
		o(r)
	}
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(r.referrers))
	r.server = httptest.NewUnstartedServer(r.wrap(handler))
	// Refused TLS handshakes are expected in tests of untrusted CAs.
	r.server.Config.ErrorLog = log.New(io.Discard, "", 0)
	if r.tls {
		r.server.StartTLS()
	} else {
		r.server.Start()
	}
	t.Cleanup(r.server.Close)
	r.URL = r.server.URL
	r.Host = strings.TrimPrefix(strings.TrimPrefix(r.URL, "http://"), "https://")
	return r
}

// CAPEM returns the PEM certificate a client must trust to reach a WithTLS
// registry, or nil for a plain-HTTP one.
func (r *Registry) CAPEM() []byte {
	if !r.tls {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.server.Certificate().Raw})
}

// Client returns an HTTP client that trusts the registry's certificate.
func (r *Registry) Client() *http.Client { return r.server.Client() }

// Close stops the registry early, for tests of an unreachable registry.
// Requests afterwards fail to connect. It is safe to call more than once.
func (r *Registry) Close() { r.server.Close() }

// Counts returns the requests counted since the start or the last Reset.
func (r *Registry) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Requests returns the requests received since the start or the last Reset,
// oldest first, to help a failing test say what happened.
func (r *Registry) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Reset zeroes the counts and forgets the requests, typically after pushing.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = Counts{}
	r.requests = nil
}

// Intercept installs f to see every request after it is counted and before
// the registry serves it. If f returns true it has written a response and the
// registry does not serve the request; use it to inject failures (say, 503 on
// blob GETs) or to act at a given moment (cancel a context on the first layer
// download). A nil f removes the interceptor.
func (r *Registry) Intercept(f func(w http.ResponseWriter, req *http.Request) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.intercept = f
}

// StallBlobs makes every blob download hang without a byte until the
// client gives up: a registry that stops answering mid-pull, which only a
// deadline on the pull can end.
func (r *Registry) StallBlobs() {
	r.Intercept(func(_ http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/") {
			return false
		}
		<-req.Context().Done()
		return true
	})
}

func (r *Registry) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.count(req)
		intercept := r.intercept
		r.mu.Unlock()

		if intercept != nil && intercept(w, req) {
			return
		}
		if r.username != "" && !r.authorized(req) {
			w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, req)
	})
}

func (r *Registry) authorized(req *http.Request) bool {
	user, pass, ok := req.BasicAuth()
	return ok &&
		subtle.ConstantTimeCompare([]byte(user), []byte(r.username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(r.password)) == 1
}

// count classifies req; r.mu must be held.
func (r *Registry) count(req *http.Request) {
	r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.Path})
	r.counts.Total++
	p := req.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		r.counts.Pings++
	case strings.Contains(p, "/blobs/uploads"):
		r.counts.Uploads++
	case strings.Contains(p, "/manifests/"):
		switch req.Method {
		case http.MethodHead:
			r.counts.ManifestHeads++
		case http.MethodGet:
			r.counts.ManifestGets++
		case http.MethodPut:
			r.counts.ManifestPuts++
		default:
			r.counts.Other++
		}
	case strings.Contains(p, "/blobs/"):
		switch req.Method {
		case http.MethodHead:
			r.counts.BlobHeads++
		case http.MethodGet:
			r.counts.BlobGets++
		default:
			r.counts.Other++
		}
	default:
		r.counts.Other++
	}
}
