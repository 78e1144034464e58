package httpsource_test

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/source/remoteaddr"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/dirtree"
	"github.com/catalogd/catalogd/test/loopdial"
)

// TestForms: each form a URL may serve unpacks to its files, told by the
// path's suffix or, without one, by the Content-Type; the digest is the
// SHA-256 of the bytes served, and FileHash that of each file.
func TestForms(t *testing.T) {
	srv := newServer(t, false)
	archive := makeTar(t, filesOf(catalogFiles))
	single := catalogFiles["demo/bundle.json"]
	yamlDoc := catalogFiles["demo/channel.yaml"]
	for _, tc := range []struct {
		path, contentType string
		body              []byte
		want              map[string]string
		wantErr           string
	}{
		{path: "/c.tar", body: archive, want: catalogFiles},
		{path: "/c.tar.gz", body: dirtree.Gzip(t, archive), want: catalogFiles},
		{path: "/c.TGZ", body: dirtree.Gzip(t, archive), want: catalogFiles},
		{path: "/one.json", body: []byte(single), want: map[string]string{"one.json": single}},
		{path: "/one.yaml", body: []byte(yamlDoc), want: map[string]string{"one.yaml": yamlDoc}},
		{path: "/one.yml", body: []byte(yamlDoc), want: map[string]string{"one.yml": yamlDoc}},
		{path: "/download", contentType: "application/gzip", body: dirtree.Gzip(t, archive), want: catalogFiles},
		{path: "/download", contentType: "application/x-tar", body: archive, want: catalogFiles},
		{path: "/api", contentType: "application/json; charset=utf-8", body: []byte(single), want: map[string]string{"catalog.json": single}},
		{path: "/api", contentType: "application/yaml", body: []byte(yamlDoc), want: map[string]string{"catalog.yaml": yamlDoc}},
		{path: "/download", contentType: "application/octet-stream", body: archive, wantErr: "want a .tar, .tar.gz or .tgz archive"},
		{path: "/c.zip", contentType: "", body: archive, wantErr: "want a .tar, .tar.gz or .tgz archive"},
	} {
		t.Run(tc.path+" "+tc.contentType, func(t *testing.T) {
			tmp := t.TempDir()
			c := newClient(t, unpack.Options{}, httpsource.Options{})
			srv.set(tc.path, doc{body: tc.body, contentType: tc.contentType})
			url := srv.URL + tc.path
			got, err := fetch(t, c, source.HTTP{URL: url}, httpsource.Auth{}, tmp, never)
			defer got.Release()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				emptyDir(t, tmp)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			files := dirtree.Files(t, got.FS)
			if len(files) != len(tc.want) {
				t.Errorf("files = %v, want %v", keys(files), keys(tc.want))
			}
			for name, body := range tc.want {
				if files[name] != body {
					t.Errorf("%s = %q, want %q", name, files[name], body)
				}
				sum, ok := got.FileHash(name)
				if want := sha256.Sum256([]byte(body)); !ok || sum != want {
					t.Errorf("FileHash(%s) = %x, %v; want %x", name, sum, ok, want)
				}
			}
			if want := "sha256:" + sha(tc.body); got.Digest != want {
				t.Errorf("Digest = %s, want %s", got.Digest, want)
			}
			if want := url + "#sha256=" + sha(tc.body); got.Ref != want {
				t.Errorf("Ref = %s, want %s", got.Ref, want)
			}
			if !got.Pulled {
				t.Error("Pulled = false")
			}
			got.Release()
			emptyDir(t, tmp)
		})
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestUnchangedPoll: a poll of an unchanged URL whose digest is live is one
// conditional request answered 304, no body byte sent, by ETag or by
// Last-Modified; a 304 whose digest is wanted all the same downloads it; a
// server that ignores conditionals sends the same bytes, and nothing is
// extracted.
func TestUnchangedPoll(t *testing.T) {
	body := dirtree.Gzip(t, makeTar(t, filesOf(catalogFiles)))
	digest := "sha256:" + sha(body)
	modified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		d          doc
		wantHeader string
	}{
		{"etag", doc{body: body, etag: `"v1"`}, "If-None-Match"},
		{"last-modified", doc{body: body, lastModified: modified}, "If-Modified-Since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, false)
			srv.set("/c.tgz", tc.d)
			c := newClient(t, unpack.Options{}, httpsource.Options{})
			f := c.Fetcher(source.HTTP{URL: srv.URL + "/c.tgz"}, httpsource.Auth{}, t.TempDir())
			first, err := f.Fetch(t.Context(), never)
			if err != nil {
				t.Fatal(err)
			}
			first.Release()

			srv.reset()
			var asked []string
			got, err := f.Fetch(t.Context(), func(d string) bool { asked = append(asked, d); return d == digest })
			if err != nil {
				t.Fatal(err)
			}
			requests, bytes := srv.counts()
			if requests != 1 || bytes != 0 {
				t.Errorf("unchanged poll: %d requests, %d body bytes; want 1 and 0", requests, bytes)
			}
			if srv.lastHeader().Get(tc.wantHeader) == "" {
				t.Errorf("the poll sent no %s", tc.wantHeader)
			}
			if got.Digest != digest || got.FS != nil || len(asked) != 1 {
				t.Errorf("unchanged poll: digest %s, FS %v, skip asked %v; want %s, nil, once", got.Digest, got.FS, asked, digest)
			}

			// Not modified, but not live either: downloaded again.
			srv.reset()
			again, err := f.Fetch(t.Context(), never)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Release()
			if requests, bytes := srv.counts(); requests != 2 || bytes != int64(len(body)) {
				t.Errorf("wanted poll: %d requests, %d bytes; want 2 and %d", requests, bytes, len(body))
			}
			if again.FS == nil || again.Digest != digest {
				t.Errorf("wanted poll: FS %v, digest %s", again.FS, again.Digest)
			}
		})
	}

	t.Run("no validators", func(t *testing.T) {
		srv := newServer(t, false)
		srv.set("/c.tgz", doc{body: body})
		c := newClient(t, unpack.Options{}, httpsource.Options{})
		tmp := t.TempDir()
		got, err := fetch(t, c, source.HTTP{URL: srv.URL + "/c.tgz"}, httpsource.Auth{}, tmp, func(d string) bool { return d == digest })
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != digest || got.FS != nil || got.Pulled {
			t.Errorf("same bytes again: digest %s, FS %v, pulled %v; want %s, nil, false", got.Digest, got.FS, got.Pulled, digest)
		}
		emptyDir(t, tmp)
	})
}

// TestPin: a pinned fetch whose digest is live asks nothing; the right
// bytes unpack; other bytes fail terminally, naming both digests.
func TestPin(t *testing.T) {
	body := makeTar(t, filesOf(catalogFiles))
	right := sha(body)
	wrong := sha([]byte("something else"))
	srv := newServer(t, false)
	srv.set("/c.tar", doc{body: body, etag: `"x"`})
	url := srv.URL + "/c.tar"
	c := newClient(t, unpack.Options{}, httpsource.Options{})

	got, err := fetch(t, c, source.HTTP{URL: url, SHA256: right}, httpsource.Auth{}, t.TempDir(), func(d string) bool { return d == "sha256:"+right })
	if err != nil || got.Digest != "sha256:"+right || got.Ref != url+"#sha256="+right {
		t.Errorf("live pin: %+v, %v", got.Content, err)
	}
	if n, _ := srv.counts(); n != 0 {
		t.Errorf("live pin: %d requests, want 0", n)
	}

	got, err = fetch(t, c, source.HTTP{URL: url, SHA256: right}, httpsource.Auth{}, t.TempDir(), never)
	if err != nil || got.FS == nil {
		t.Fatalf("right pin: %v", err)
	}
	got.Release()

	tmp := t.TempDir()
	got, err = fetch(t, c, source.HTTP{URL: url, SHA256: wrong}, httpsource.Auth{}, tmp, never)
	if err == nil || !source.IsTerminal(err) || !strings.Contains(err.Error(), right) || !strings.Contains(err.Error(), wrong) {
		t.Fatalf("wrong pin: err = %v, want a terminal error naming %s and %s", err, wrong, right)
	}
	if got.Digest != "sha256:"+right {
		t.Errorf("wrong pin: digest %s, want the one served", got.Digest)
	}
	emptyDir(t, tmp)
}

// TestRedirects: a chain within the cap is followed; a loop stops at the
// cap; a redirect from a host the user named to another host on a
// loopback address is refused before any request reaches it.
func TestRedirects(t *testing.T) {
	body := makeTar(t, filesOf(catalogFiles))
	srv := newServer(t, false)
	srv.set("/c.tar", doc{body: body})
	for i := 1; i <= 3; i++ {
		srv.set("/hop"+string(rune('0'+i)), doc{redirect: "/hop" + string(rune('0'+i+1))})
	}
	srv.set("/hop4", doc{redirect: "/c.tar"})
	srv.set("/loop", doc{redirect: "/loop"})
	c := newClient(t, unpack.Options{}, httpsource.Options{})

	got, err := fetch(t, c, source.HTTP{URL: srv.URL + "/hop1"}, httpsource.Auth{}, t.TempDir(), never)
	if err != nil {
		t.Fatalf("chain of 4: %v", err)
	}
	got.Release()

	srv.reset()
	_, err = fetch(t, c, source.HTTP{URL: srv.URL + "/loop"}, httpsource.Auth{}, t.TempDir(), never)
	if err == nil || !strings.Contains(err.Error(), "redirect loop") {
		t.Fatalf("loop: err = %v", err)
	}
	if n, _ := srv.counts(); n != 11 {
		t.Errorf("loop: %d requests, want 11 (the first and 10 redirects)", n)
	}

	target := newServer(t, false)
	target.set("/c.tar", doc{body: body})
	for _, to := range []string{target.URL + "/c.tar", loopdial.URL(target.URL, "mirror.example") + "/c.tar"} {
		srv.set("/away", doc{redirect: to})
		_, err = fetch(t, c, source.HTTP{URL: loopdial.URL(srv.URL, "catalogs.example") + "/away"}, httpsource.Auth{}, t.TempDir(), never)
		host := strings.TrimPrefix(strings.TrimSuffix(to, "/c.tar"), "http://")
		if !errors.Is(err, remoteaddr.ErrRefused) || !strings.Contains(err.Error(), "redirected to "+host+": ") ||
			!strings.Contains(err.Error(), "127.0.0.1 is loopback") || strings.Contains(err.Error(), "\n") {
			t.Errorf("redirect to %s: err = %v, want remoteaddr.ErrRefused naming %s and 127.0.0.1, in one line", to, err, host)
		}
		if n, _ := target.counts(); n != 0 {
			t.Errorf("redirect to %s: the target got %d requests", to, n)
		}
	}
}

// TestCredentials: basic and bearer are sent to the URL's host and
// accepted; refused ones name the Secret, never its content; they are not
// forwarded to another host, and never sent in the clear to a host that is
// not this machine.
func TestCredentials(t *testing.T) {
	body := makeTar(t, filesOf(catalogFiles))
	srv := newServer(t, false)
	basic := httpsource.Auth{SecretName: "pull", Username: "alice", Password: "p4ss-w0rd-xyz"}
	bearer := httpsource.Auth{SecretName: "token", BearerToken: "t0ken-abc-123"}
	srv.set("/basic.tar", doc{body: body, auth: "Basic YWxpY2U6cDRzcy13MHJkLXh5eg=="})
	srv.set("/bearer.tar", doc{body: body, auth: "Bearer t0ken-abc-123"})
	c := newClient(t, unpack.Options{}, httpsource.Options{})

	for _, tc := range []struct {
		path    string
		auth    httpsource.Auth
		wantErr string
	}{
		{"/basic.tar", basic, ""},
		{"/bearer.tar", bearer, ""},
		{"/basic.tar", httpsource.Auth{SecretName: "pull", Username: "alice", Password: "wrong-pass-qqq"}, `refused the credentials of Secret "pull" (401 Unauthorized)`},
		{"/bearer.tar", httpsource.Auth{SecretName: "token", BearerToken: "wrong-token-qqq"}, `refused the credentials of Secret "token"`},
		{"/bearer.tar", httpsource.Auth{}, "wants credentials (401 Unauthorized): name a Secret in http.secretRef"},
	} {
		got, err := fetch(t, c, source.HTTP{URL: srv.URL + tc.path}, tc.auth, t.TempDir(), never)
		got.Release()
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s with %s: %v", tc.path, tc.auth.SecretName, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want %q", tc.path, err, tc.wantErr)
			continue
		}
		for _, secret := range []string{tc.auth.Password, tc.auth.BearerToken} {
			if secret != "" && strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows the secret: %v", tc.path, err)
			}
		}
	}

	// Another port of the same machine is another host.
	other := newServer(t, false)
	other.set("/c.tar", doc{body: body})
	srv.set("/elsewhere.tar", doc{redirect: other.URL + "/c.tar", auth: "Bearer t0ken-abc-123"})
	got, err := fetch(t, c, source.HTTP{URL: srv.URL + "/elsewhere.tar"}, bearer, t.TempDir(), never)
	if err != nil {
		t.Fatal(err)
	}
	got.Release()
	if h := other.lastHeader(); h == nil || h.Get("Authorization") != "" {
		t.Errorf("the other host got Authorization %q (headers %v)", h.Get("Authorization"), h != nil)
	}

	srv.reset()
	_, err = fetch(t, c, source.HTTP{URL: loopdial.URL(srv.URL, "catalogs.example") + "/bearer.tar"}, bearer, t.TempDir(), never)
	if err == nil || !strings.Contains(err.Error(), "over plain http") {
		t.Errorf("plain http to a named host: err = %v", err)
	}
	if n, _ := srv.counts(); n != 0 {
		t.Errorf("plain http to a named host: %d requests reached it", n)
	}
}

// TestTLS: a server with a private CA is refused until the CA is given.
func TestTLS(t *testing.T) {
	srv := newServer(t, true)
	srv.set("/c.tar", doc{body: makeTar(t, filesOf(catalogFiles))})
	c := newClient(t, unpack.Options{}, httpsource.Options{})
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	spec := source.HTTP{URL: srv.URL + "/c.tar"}

	_, err := fetch(t, c, spec, httpsource.Auth{}, t.TempDir(), never)
	if err == nil || !strings.Contains(err.Error(), "http.caSecretRef") {
		t.Errorf("without the CA: err = %v", err)
	}
	_, err = fetch(t, c, spec, httpsource.Auth{CABundle: []byte("not pem"), CASecretName: "ca"}, t.TempDir(), never)
	if err == nil || !strings.Contains(err.Error(), `CA bundle of Secret "ca" holds no PEM certificate`) {
		t.Errorf("a bad CA: err = %v", err)
	}
	got, err := fetch(t, c, spec, httpsource.Auth{CABundle: ca, CASecretName: "ca"}, t.TempDir(), never)
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	got.Release()

	// The process's CA (--ca-file) serves every fetch, and a Secret's CA
	// is trusted beside it.
	trusting := newClient(t, unpack.Options{}, httpsource.Options{CABundle: ca})
	for _, auth := range []httpsource.Auth{{}, {CABundle: ca, CASecretName: "ca"}} {
		got, err := fetch(t, trusting, spec, auth, t.TempDir(), never)
		if err != nil {
			t.Fatalf("with the process's CA, Secret CA %q: %v", auth.CASecretName, err)
		}
		got.Release()
	}
	u, err := unpack.New(unpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpsource.New(httpsource.Options{Extractor: u, CABundle: []byte("not pem")}); err == nil || !strings.Contains(err.Error(), "CA bundle holds no PEM certificate") {
		t.Errorf("a bad process CA: err = %v", err)
	}
}

// TestFailures: each failure is one line naming what failed; neither a
// failed response's body nor the URL's query reaches it.
func TestFailures(t *testing.T) {
	srv := newServer(t, false)
	srv.set("/boom.tar", doc{status: 500, statusBody: "BODY-SECRET-42"})
	srv.set("/big.tar", doc{body: make([]byte, 4096)})
	srv.set("/chunked.tar", doc{body: make([]byte, 4096), chunked: true})
	srv.set("/headers.tar", doc{stall: "headers"})
	srv.set("/body.tar", doc{body: make([]byte, 100), stall: "body"})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	for _, tc := range []struct {
		name    string
		url     string
		opts    httpsource.Options
		wantErr string
	}{
		{"500", srv.URL + "/boom.tar?token=QUERY-SECRET", httpsource.Options{}, "the server answered 500 Internal Server Error"},
		{"404", srv.URL + "/nothing.tar", httpsource.Options{}, "not found (404 Not Found)"},
		{"declared too large", srv.URL + "/big.tar", httpsource.Options{MaxDownloadBytes: 1000}, "declares 4096 bytes, more than MaxDownloadBytes (1000)"},
		{"streamed too large", srv.URL + "/chunked.tar", httpsource.Options{MaxDownloadBytes: 1000}, "larger than MaxDownloadBytes (1000)"},
		{"no headers", srv.URL + "/headers.tar", httpsource.Options{RequestTimeout: 50 * time.Millisecond}, "did not answer within 50ms (request timeout)"},
		{"stalled body", srv.URL + "/body.tar", httpsource.Options{IdleTimeout: 50 * time.Millisecond}, "sent nothing for 50ms (idle timeout)"},
		{"pull timeout", srv.URL + "/headers.tar", httpsource.Options{PullTimeout: 50 * time.Millisecond}, "gave up after the pull timeout of 50ms"},
		{"unreachable", closed.URL + "/c.tar", httpsource.Options{}, "cannot reach the server"},
		{"unknown host", "http://nowhere.invalid/c.tar", httpsource.Options{DialContext: (&net.Dialer{}).DialContext}, "cannot reach the server"},
		{"userinfo", "http://bob:hunter2@" + srv.Listener.Addr().String() + "/c.tar", httpsource.Options{}, "the URL holds credentials: put them in a Secret"},
		{"scheme", "ftp://example.com/c.tar", httpsource.Options{}, "scheme must be http or https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, unpack.Options{}, tc.opts)
			tmp := t.TempDir()
			_, err := fetch(t, c, source.HTTP{URL: tc.url}, httpsource.Auth{}, tmp, never)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			msg := err.Error()
			for _, secret := range []string{"BODY-SECRET", "QUERY-SECRET", "hunter2"} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error shows %s: %s", secret, msg)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("the error is not one line: %q", msg)
			}
			if source.IsTerminal(err) {
				t.Errorf("terminal, but the server may change: %v", err)
			}
			emptyDir(t, tmp)
		})
	}
}

// TestHostileArchives: what the extractor refuses in an image layer it
// refuses in a download, terminally, leaving nothing behind.
func TestHostileArchives(t *testing.T) {
	bomb := dirtree.Gzip(t, makeTar(t, []entry{{name: "big.json", typeflag: tar.TypeReg, body: strings.Repeat("\x00", 1<<20)}}))
	many := make([]entry, 20)
	for i := range many {
		many[i] = entry{name: "f" + string(rune('a'+i)) + ".json", typeflag: tar.TypeReg, body: "{}"}
	}
	for _, tc := range []struct {
		name    string
		body    []byte
		wantErr string
	}{
		{"traversal", makeTar(t, []entry{{name: "../x.json", typeflag: tar.TypeReg, body: "{}"}}), `unsafe entry "../x.json" in the archive`},
		{"absolute", makeTar(t, []entry{{name: "/etc/x.json", typeflag: tar.TypeReg, body: "{}"}}), `unsafe entry "/etc/x.json" in the archive`},
		{"symlink out", makeTar(t, []entry{{name: "l", typeflag: tar.TypeSymlink, linkname: "../../etc/passwd"}}), `unsafe entry "l" in the archive: symbolic link target "../../etc/passwd" leaves the root of the image or archive`},
		{"device", makeTar(t, []entry{{name: "null", typeflag: tar.TypeChar}}), `unsafe entry "null" in the archive`},
		{"bomb", bomb, "the decompressed archive exceeds MaxUncompressedBytes"},
		{"too many files", makeTar(t, many), "MaxFiles"},
		{"not an archive", []byte("<html>hello</html>" + strings.Repeat(" ", 1024)), "the download is not a tar archive"},
		{"corrupt gzip", append(dirtree.Gzip(t, makeTar(t, filesOf(catalogFiles)))[:40:40], make([]byte, 600)...), "the download is not a tar archive (plain, gzip or zstd): reading the archive: flate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, false)
			srv.set("/c.tar", doc{body: tc.body})
			c := newClient(t, unpack.Options{MaxUncompressedBytes: 64 << 10, MaxFiles: 10}, httpsource.Options{})
			tmp := t.TempDir()
			got, err := fetch(t, c, source.HTTP{URL: srv.URL + "/c.tar"}, httpsource.Auth{}, tmp, never)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !source.IsTerminal(err) {
				t.Fatalf("err = %v, want a terminal error saying %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "layer") || strings.Contains(err.Error(), "image") && !strings.Contains(err.Error(), "image or archive") {
				t.Errorf("a download's error speaks of images and layers: %v", err)
			}
			if got.Digest != "sha256:"+sha(tc.body) {
				t.Errorf("digest %q, want that of the bytes, so the sync remembers them as bad", got.Digest)
			}
			emptyDir(t, tmp)
		})
	}
}

// TestBuilt: an index built from the same URL, pinned or not, is this
// source's; another URL's is not.
func TestBuilt(t *testing.T) {
	c := newClient(t, unpack.Options{}, httpsource.Options{})
	f := c.Fetcher(source.HTTP{URL: "https://h.example/c.tgz"}, httpsource.Auth{}, t.TempDir())
	for ref, want := range map[string]bool{
		"https://h.example/c.tgz":                    true,
		"https://h.example/c.tgz#sha256=" + sha(nil): true,
		"https://h.example/d.tgz":                    false,
		"https://h.example/c.tgz?x=1":                false,
	} {
		if got := f.Built(ref); got != want {
			t.Errorf("Built(%s) = %v, want %v", ref, got, want)
		}
	}
	if f.Describe() != "https://h.example/c.tgz" {
		t.Errorf("Describe() = %s", f.Describe())
	}
}
