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

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
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

	client  *ssh.Client
	session *ssh.Session
	stdin   io.WriteCloser
	stdout  io.Reader
	stop    func() bool
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

	var d net.Dialer
	tcp, err := d.DialContext(ctx, "tcp", e.addr())
	if err != nil {
		return fmt.Errorf("connect to %s: %w", e.addr(), err)
	}
	// The handshake and every read after it end with the fetch's context.
	stop := context.AfterFunc(ctx, func() { tcp.Close() })
	c, chans, reqs, err := ssh.NewClientConn(tcp, e.addr(), config)
	if err != nil {
		stop()
		tcp.Close()
		var keyErr *knownhosts.KeyError
		switch {
		case errors.As(err, &keyErr) && len(keyErr.Want) > 0:
			return fmt.Errorf("the host key of %s is not the one known_hosts of Secret %s lists: refusing to connect (a changed key, or another host)", e.addr(), auth.SecretName)
		case errors.As(err, &keyErr):
			return fmt.Errorf("%s is not in known_hosts of Secret %s: refusing to connect", e.addr(), auth.SecretName)
		case strings.Contains(err.Error(), "unable to authenticate"):
			return fmt.Errorf("ssh to %s: authentication refused with Secret %s", e.addr(), auth.SecretName)
		}
		return fmt.Errorf("ssh to %s: %w", e.addr(), ctxErr(ctx, err))
	}
	client := ssh.NewClient(c, chans, reqs)
	session, err := client.NewSession()
	if err != nil {
		stop()
		client.Close()
		return fmt.Errorf("ssh to %s: open a session: %w", e.addr(), ctxErr(ctx, err))
	}
	stdin, err := session.StdinPipe()
	if err != nil {
		stop()
		client.Close()
		return fmt.Errorf("ssh to %s: %w", e.addr(), err)
	}
	stdout, err := session.StdoutPipe()
	if err != nil {
		stop()
		client.Close()
		return fmt.Errorf("ssh to %s: %w", e.addr(), err)
	}
	if err := session.Start("git-upload-pack " + shellQuote(e.path)); err != nil {
		stop()
		client.Close()
		return fmt.Errorf("ssh to %s: run git-upload-pack: %w", e.addr(), ctxErr(ctx, err))
	}
	s.client, s.session, s.stdin, s.stdout, s.stop = client, session, stdin, s.count.reader(stdout), stop
	return nil
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
}
