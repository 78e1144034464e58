package gitsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/catalogd/catalogd/internal/source/remoteaddr"
)

// sshEndpoint is where an ssh URL points: ssh://[user@]host[:port]/path or
// scp-like [user@]host:path.
type sshEndpoint struct {
	user, host, port, path string
}

func (e sshEndpoint) addr() string { return net.JoinHostPort(e.host, e.port) }

// parseSSH reads an ssh URL of either form; ok is false for anything
// else.
func parseSSH(raw string) (sshEndpoint, bool) {
	e := sshEndpoint{user: "git", port: "22"}
	if rest, ok := strings.CutPrefix(raw, "ssh://"); ok {
		hostPart, path, ok := strings.Cut(rest, "/")
		if !ok || path == "" {
			return e, false
		}
		e.path = "/" + path
		if user, host, ok := strings.Cut(hostPart, "@"); ok {
			e.user, hostPart = user, host
		}
		if h, p, err := net.SplitHostPort(hostPart); err == nil {
			e.host, e.port = h, p
		} else {
			e.host = strings.Trim(hostPart, "[]")
		}
		return e, e.host != "" && e.user != ""
	}
	if strings.Contains(raw, "://") {
		return e, false
	}
	hostPart, path, ok := strings.Cut(raw, ":")
	if !ok || path == "" || strings.Contains(hostPart, "/") {
		return e, false
	}
	if user, host, ok := strings.Cut(hostPart, "@"); ok {
		e.user, hostPart = user, host
	}
	e.host, e.path = hostPart, path
	return e, e.host != "" && e.user != ""
}

// sshConn runs git-upload-pack on the remote over one ssh session, opened
// when the refs are first asked for.
type sshConn struct {
	endpoint sshEndpoint
	auth     Auth
	dir      string
	count    *counter
	// dialer, when set, replaces a net.Dialer (Options.DialContext); idle
	// is Options.IdleTimeout.
	dialer remoteaddr.DialFunc
	idle   time.Duration

	client  *ssh.Client
	session *ssh.Session
	stdin   io.WriteCloser
	stdout  io.Reader
	stop    func() bool
	quiet   *silence
	sent    bool
}

// dial connects to the endpoint with auth, checking the host's key against the
// Secret's known_hosts (written to dir, where knownhosts reads it); a
// source without known_hosts is refused before any connection.
func (s *sshConn) dial(ctx context.Context) error {
	e, auth, dir := s.endpoint, s.auth, s.dir
	if len(auth.KnownHosts) == 0 {
		if auth.SecretName == "" {
			return fmt.Errorf("ssh to %s needs a Secret with known_hosts: host keys are always checked", e.host)
		}
		return fmt.Errorf("ssh to %s needs known_hosts in Secret %s: host keys are always checked", e.host, auth.SecretName)
	}
	hostsFile := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(hostsFile, auth.KnownHosts, 0o600); err != nil {
		return fmt.Errorf("write known_hosts: %w", err)
	}
	check, err := knownhosts.New(hostsFile)
	if err != nil {
		return fmt.Errorf("the known_hosts of Secret %s: %w", auth.SecretName, err)
	}
	config := &ssh.ClientConfig{
		User:              e.user,
		HostKeyCallback:   check,
		HostKeyAlgorithms: hostKeyAlgorithms(auth.KnownHosts),
	}
	if len(auth.Identity) > 0 {
		signer, err := ssh.ParsePrivateKey(auth.Identity)
		if err != nil {
			var missing *ssh.PassphraseMissingError
			if errors.As(err, &missing) {
				return fmt.Errorf("the identity of Secret %s is protected by a passphrase: give a key without one", auth.SecretName)
			}
			return fmt.Errorf("the identity of Secret %s is not a private key (PEM or OpenSSH)", auth.SecretName)
		}
		config.Auth = []ssh.AuthMethod{ssh.PublicKeys(signer)}
	}

	dial := s.dialer
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tcp, err := dial(ctx, "tcp", e.addr())
	if err != nil {
		return fmt.Errorf("connect to %s: %w", e.addr(), err)
	}
	// The handshake and every read after it end with the fetch's context,
	// and with a server silent for longer than idle.
	stop := context.AfterFunc(ctx, func() { tcp.Close() })
	quiet := newSilence(s.idle, tcp)
	// Up to the command's start, the exchange is bounded as one read.
	quiet.waiting()
	client, err := s.start(tcp, config)
	if idle := quiet.done(); idle != nil {
		err = fmt.Errorf("ssh to %s: %w while connecting", e.addr(), idle)
	} else if err != nil {
		err = fmt.Errorf("ssh to %s: %w", e.addr(), ctxErr(ctx, err))
	}
	if err != nil {
		stop()
		if client != nil {
			client.Close()
		}
		tcp.Close()
		return err
	}
	s.client, s.stop, s.quiet = client, stop, quiet
	s.stdout = s.count.reader(&silentReader{r: s.stdout, quiet: quiet, count: s.count, addr: e.addr()})
	return nil
}

// start makes the ssh handshake over tcp and runs git-upload-pack in a
// session, whose pipes it keeps; an error says which step failed (the
// client is returned, to close, when the handshake succeeded).
func (s *sshConn) start(tcp net.Conn, config *ssh.ClientConfig) (*ssh.Client, error) {
	secret := s.auth.SecretName
	c, chans, reqs, err := ssh.NewClientConn(tcp, s.endpoint.addr(), config)
	if err != nil {
		var keyErr *knownhosts.KeyError
		switch {
		case errors.As(err, &keyErr) && len(keyErr.Want) > 0:
			return nil, fmt.Errorf("the host key is not the one known_hosts of Secret %s lists: refusing to connect (a changed key, or another host)", secret)
		case errors.As(err, &keyErr):
			return nil, fmt.Errorf("the host is not in known_hosts of Secret %s: refusing to connect", secret)
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, fmt.Errorf("authentication refused with Secret %s", secret)
		}
		return nil, err
	}
	client := ssh.NewClient(c, chans, reqs)
	if s.session, err = client.NewSession(); err != nil {
		return client, fmt.Errorf("open a session: %w", err)
	}
	if s.stdin, err = s.session.StdinPipe(); err != nil {
		return client, err
	}
	if s.stdout, err = s.session.StdoutPipe(); err != nil {
		return client, err
	}
	if err := s.session.Start("git-upload-pack " + shellQuote(s.endpoint.path)); err != nil {
		return client, fmt.Errorf("run git-upload-pack: %w", err)
	}
	return client, nil
}

// silence closes the connection when the server sends nothing for idle
// while catalogd waits on it: a read blocked on a silent server returns
// then, not at the pull deadline. Time catalogd spends between reads is
// not counted.
type silence struct {
	idle  time.Duration
	timer *time.Timer
	fired atomic.Bool
}

func newSilence(idle time.Duration, conn net.Conn) *silence {
	s := &silence{idle: idle}
	s.timer = time.AfterFunc(idle, func() {
		s.fired.Store(true)
		conn.Close()
	})
	s.timer.Stop()
	return s
}

// waiting starts the wait for the server; done ends it, saying whether it
// went silent.
func (s *silence) waiting() { s.timer.Reset(s.idle) }

func (s *silence) done() error {
	s.timer.Stop()
	return s.heard()
}

// heard is the idle bound's error once it has closed the connection.
func (s *silence) heard() error {
	if s.fired.Load() {
		return fmt.Errorf("the server sent nothing for %s (IdleTimeout)", s.idle)
	}
	return nil
}

// silentReader bounds each read of git-upload-pack's output by the idle
// bound; what it stopped is recorded in the fetch's counter, since the
// closed connection reads as a plain end of stream to the decoders.
type silentReader struct {
	r     io.Reader
	quiet *silence
	count *counter
	addr  string
}

func (r *silentReader) Read(p []byte) (int, error) {
	r.quiet.waiting()
	n, err := r.r.Read(p)
	if idle := r.quiet.done(); idle != nil {
		r.count.hit = fmt.Errorf("ssh to %s: %w", r.addr, idle)
		return n, r.count.hit
	}
	return n, err
}

// ctxErr prefers the context's error to what closing the connection under
// a read made of it.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// hostKeyAlgorithms are the algorithms of the keys known_hosts lists, so
// that the server is asked for a key known_hosts can vouch for rather than
// for the one it prefers.
func hostKeyAlgorithms(knownHosts []byte) []string {
	var algs []string
	add := func(a ...string) {
		for _, x := range a {
			if !strings.Contains(strings.Join(algs, " "), x) {
				algs = append(algs, x)
			}
		}
	}
	rest := knownHosts
	for len(rest) > 0 {
		_, _, key, _, r, err := ssh.ParseKnownHosts(rest)
		if err != nil {
			break
		}
		rest = r
		switch key.Type() {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			add(key.Type())
		}
	}
	return algs
}

// shellQuote quotes s for the remote's shell, as git does.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (s *sshConn) advertisement(ctx context.Context) (io.Reader, error) {
	if err := s.dial(ctx); err != nil {
		return nil, err
	}
	return s.stdout, nil
}

func (s *sshConn) uploadPack(_ context.Context, req []byte) (io.Reader, error) {
	s.sent = true
	if _, err := io.Copy(s.stdin, bytes.NewReader(req)); err != nil {
		return nil, fmt.Errorf("fetch: send the request: %w", err)
	}
	return s.stdout, nil
}

func (s *sshConn) close() {
	if s.client == nil {
		return
	}
	if !s.sent {
		// A flush tells git-upload-pack that nothing is wanted.
		_, _ = s.stdin.Write([]byte("0000"))
	}
	s.stdin.Close()
	s.session.Close()
	s.client.Close()
	s.stop()
	s.quiet.done()
}
