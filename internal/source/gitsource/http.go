package gitsource

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/catalogd/catalogd/internal/source/remoteaddr"
)

// maxRedirects is how many redirects one request follows, as for
// registries.
const maxRedirects = 10

// userAgent is sent with every request, and as the agent capability.
const userAgent = "git/catalogd"

// httpConn speaks smart HTTP: GET info/refs, then POST git-upload-pack to
// where the first request ended up (git's http.followRedirects=initial).
type httpConn struct {
	client *http.Client
	base   *url.URL
	count  *counter
	auth   Auth
	// bodies are the responses' bodies, read as streams, closed by close.
	bodies []io.Closer
}

// newTransports returns the transports for requests to a repository's own
// host and to any other, the latter's dial guarded by remoteaddr, trusting
// caBundle beside the system's CAs; dial, when set, replaces a net.Dialer.
func newTransports(caBundle []byte, dial remoteaddr.DialFunc) (own, other *http.Transport, err error) {
	own = http.DefaultTransport.(*http.Transport).Clone()
	if len(caBundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, nil, errors.New("the CA bundle for git remotes holds no PEM certificate")
		}
		own.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	other = own.Clone()
	other.DialContext = remoteaddr.Guard(dial)
	if dial != nil {
		own.DialContext = dial
	}
	return own, other, nil
}

// newHTTPConn checks what can be refused before any request: credentials
// in the URL, credentials over plain http.
func (c *Client) newHTTPConn(u *url.URL, auth Auth, count *counter) (*httpConn, error) {
	if u.User != nil {
		return nil, errors.New("the repository URL holds credentials: remove them and give them in a Secret")
	}
	if u.Scheme == "http" && auth.http() {
		return nil, fmt.Errorf("refusing to send the credentials of Secret %s over plain http to %s: use an https URL", auth.SecretName, u.Host)
	}
	if c.transportErr != nil {
		return nil, c.transportErr
	}
	repo := *u
	repo.Path = strings.TrimSuffix(repo.Path, "/")
	hc := &httpConn{base: &repo, count: count, auth: auth}
	hc.client = &http.Client{
		Transport:     &authTransport{next: &remoteaddr.Router{Host: u.Hostname(), Own: c.own, Other: c.other}, host: u.Host, auth: auth},
		CheckRedirect: hc.checkRedirect,
	}
	return hc, nil
}

// authTransport adds the Secret's credentials to requests to the
// repository's own host over https, and to no other.
type authTransport struct {
	next http.RoundTripper
	host string
	auth Auth
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" || req.URL.Host != t.host || !t.auth.http() {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	if t.auth.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+t.auth.BearerToken)
	} else {
		req.SetBasicAuth(t.auth.Username, t.auth.Password)
	}
	return t.next.RoundTrip(req)
}

// checkRedirect follows a remote no further than maxRedirects and never
// from https to http; where a redirect to another host may connect is
// checked as it dials (remoteaddr, through the Client's other transport).
func (h *httpConn) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("%s redirected more than %d times (a redirect loop?)", h.base.Host, maxRedirects)
	}
	prev := via[len(via)-1].URL
	if prev.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%s redirected from https to %s: refused", prev.Host, req.URL.Scheme)
	}
	return nil
}

func (h *httpConn) advertisement(ctx context.Context) (io.Reader, error) {
	u := h.base.JoinPath("info", "refs")
	u.RawQuery = "service=git-upload-pack"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	resp, err := h.do(req, "list refs")
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-git-upload-pack-advertisement" {
		resp.Body.Close()
		return nil, fmt.Errorf("%s is not a git repository served over smart HTTP (its refs came as %q)", h.base.Redacted(), ct)
	}
	// The pack is asked for where the listing was found.
	if final := resp.Request.URL; strings.HasSuffix(final.Path, "/info/refs") {
		b := *final
		b.Path, b.RawPath, b.RawQuery = strings.TrimSuffix(final.Path, "/info/refs"), "", ""
		h.base = &b
	}
	// Read whole, so that its connection serves the pack's request.
	defer resp.Body.Close()
	adv, err := io.ReadAll(h.count.reader(resp.Body))
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", h.count.failed(err))
	}
	return bytes.NewReader(adv), nil
}

func (h *httpConn) uploadPack(ctx context.Context, body []byte) (io.Reader, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base.JoinPath("git-upload-pack").String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-git-upload-pack-request")
	req.Header.Set("Accept", "application/x-git-upload-pack-result")
	resp, err := h.do(req, "fetch")
	if err != nil {
		return nil, err
	}
	return h.body(resp), nil
}

// body counts what resp's body delivers; close closes it.
func (h *httpConn) body(resp *http.Response) io.Reader {
	h.bodies = append(h.bodies, resp.Body)
	return h.count.reader(resp.Body)
}

// do sends req and turns a failed answer into one line naming what
// failed; the body of a failed answer is never read into it.
func (h *httpConn) do(req *http.Request, what string) (*http.Response, error) {
	// Some servers speak the smart protocol only to a user agent that
	// begins with "git/".
	req.Header.Set("User-Agent", userAgent)
	resp, err := h.client.Do(req)
	if host, refused, ok := remoteaddr.Refusal(err); ok {
		return nil, fmt.Errorf("%s: %s redirected to %s: %w", what, h.base.Host, host, refused)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	resp.Body.Close()
	status := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && h.auth.http():
		return nil, fmt.Errorf("%s: authentication refused with Secret %s (%s)", what, h.auth.SecretName, status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s: %s needs credentials (%s): give them in a Secret", what, h.base.Host, status)
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s: no repository at %s (%s)", what, h.base.Redacted(), status)
	}
	return nil, fmt.Errorf("%s: %s answered %s", what, h.base.Host, status)
}

func (h *httpConn) close() {
	for _, b := range h.bodies {
		b.Close()
	}
}
