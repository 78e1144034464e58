package gitsource_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"github.com/catalogd/catalogd/test/gittest"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/unpack"
)

// sshServer is an ssh server on loopback that runs Debian's
// git-upload-pack for an exec of "git-upload-pack 'PATH'", PATH under
// root, for the one client key it accepts.
type sshServer struct {
	addr    string
	hostKey ssh.PublicKey
	root    string
	conns   atomic.Int64 // TCP connections accepted
	execs   atomic.Int64 // upload-packs run
	// stall, when set (stallRefs, stallPack), stops upload-pack's output
	// there until the client goes; stalled says it happened.
	stall   atomic.Int32
	stalled atomic.Bool

	mu     sync.Mutex
	wanted []string // the "want" lines upload-pack received
	// finished receives one value as each upload-pack session ends, all
	// its input read.
	finished chan struct{}
}

func newKey(t testing.TB) (ssh.Signer, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return signer, pem.EncodeToMemory(block)
}

func newSSHServer(t testing.TB, root string, client ssh.PublicKey) *sshServer {
	t.Helper()
	hostSigner, _ := newKey(t)
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), client.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	config.AddHostKey(hostSigner)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sshServer{addr: l.Addr().String(), hostKey: hostSigner.PublicKey(), root: root, finished: make(chan struct{}, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(t, c, config)
			}()
		}
	}()
	return s
}

func (s *sshServer) serve(t testing.TB, c net.Conn, config *ssh.ServerConfig) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.session(t, ch, chReqs)
	}
}

func (s *sshServer) session(t testing.TB, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		var exec struct{ Command string }
		if req.Type != "exec" || ssh.Unmarshal(req.Payload, &exec) != nil {
			_ = req.Reply(false, nil)
			continue
		}
		path, ok := strings.CutPrefix(exec.Command, "git-upload-pack '")
		if !ok || !strings.HasSuffix(path, "'") {
			_ = req.Reply(false, nil)
			continue
		}
		_ = req.Reply(true, nil)
		s.execs.Add(1)
		status := s.uploadPack(ch, filepath.Join(s.root, strings.TrimSuffix(path, "'")))
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		s.finished <- struct{}{}
		return
	}
}

// uploadPack runs git-upload-pack on dir with the channel as its stdin and
// stdout; stdin is copied apart, so that the command's end does not wait
// for the client's.
func (s *sshServer) uploadPack(ch ssh.Channel, dir string) uint32 {
	cmd := exec.Command(gittest.Binary, "upload-pack", dir)
	cmd.Env = gittest.Env(s.root)
	read := make(chan struct{})
	cmd.Stdout = ch
	if at := s.stall.Load(); at != stallNone {
		cmd.Stdout = &stallWriter{w: ch, at: at, gone: read, stalled: &s.stalled}
	}
	cmd.Stderr = ch.Stderr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() {
		defer close(read)
		var got bytes.Buffer
		_, _ = io.Copy(io.MultiWriter(stdin, &got), ch)
		stdin.Close()
		for _, line := range strings.Split(got.String(), "\n") {
			if i := strings.Index(line, "want "); i >= 0 && i <= 4 {
				s.mu.Lock()
				s.wanted = append(s.wanted, line[i:])
				s.mu.Unlock()
			}
		}
	}()
	err = cmd.Wait()
	<-read
	if err != nil {
		return 1
	}
	return 0
}

const (
	stallNone = iota
	// stallRefs sends nothing at all: the command runs, silent.
	stallRefs
	// stallPack sends the refs, the acknowledgement and the pack's
	// header, then nothing: a server gone silent mid-pack.
	stallPack
)

// stallWriter passes upload-pack's output on up to the stall point, then
// blocks until gone is closed (the client left) and fails.
type stallWriter struct {
	w       io.Writer
	at      int32
	gone    <-chan struct{}
	stalled *atomic.Bool
}

func (s *stallWriter) Write(p []byte) (int, error) {
	cut := -1
	switch i := bytes.Index(p, []byte("PACK")); {
	case s.stalled.Load(), s.at == stallRefs:
		cut = 0
	case s.at == stallPack && i >= 0:
		cut = i + 12 // the signature, version and object count
	}
	if cut < 0 {
		return s.w.Write(p)
	}
	if _, err := s.w.Write(p[:cut]); err != nil {
		return 0, err
	}
	s.stalled.Store(true)
	<-s.gone
	return cut, io.ErrClosedPipe
}

func TestFetchSSH(t *testing.T) {
	gittest.Need(t)
	root := t.TempDir()
	r := gittest.NewRepo(t, root, "cat")
	commit := r.Commit(catalogFiles)
	r.Push("main")
	clientSigner, identity := newKey(t)
	srv := newSSHServer(t, root, clientSigner.PublicKey())
	otherHost, _ := newKey(t)
	hostPattern := knownhosts.Normalize(srv.addr)
	line := func(host string, key ssh.PublicKey) []byte {
		return []byte(knownhosts.Line([]string{host}, key) + "\n")
	}

	for _, tc := range []struct {
		name      string
		auth      gitsource.Auth
		wantErr   string
		wantConns int64
	}{
		{"known host key", gitsource.Auth{SecretName: "ssh", Identity: identity, KnownHosts: line(hostPattern, srv.hostKey)}, "", 1},
		{"wrong host key", gitsource.Auth{SecretName: "ssh", Identity: identity, KnownHosts: line(hostPattern, otherHost.PublicKey())}, "is not the one known_hosts of Secret ssh lists", 1},
		{"host not listed", gitsource.Auth{SecretName: "ssh", Identity: identity, KnownHosts: line("[example.com]:22", srv.hostKey)}, "is not in known_hosts of Secret ssh", 1},
		{"no known_hosts", gitsource.Auth{SecretName: "ssh", Identity: identity}, "needs known_hosts in Secret ssh", 0},
		{"key refused", gitsource.Auth{SecretName: "ssh", Identity: mustOtherIdentity(t), KnownHosts: line(hostPattern, srv.hostKey)}, "authentication refused with Secret ssh", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns, execs := srv.conns.Load(), srv.execs.Load()
			c := newClient(t, gitsource.Options{}, unpack.Options{})
			spec := source.Git{URL: "ssh://git@" + srv.addr + "/cat.git", Directory: "catalog"}
			got, err := c.Fetcher(spec, tc.auth, t.TempDir()).Fetch(context.Background(), never)
			defer got.Release()
			if n := srv.conns.Load() - conns; n != tc.wantConns {
				t.Errorf("%d connections, want %d", n, tc.wantConns)
			}
			if wantOutcome(t, r, got, err, commit, "catalog", tc.wantErr); err == nil {
				unchangedSSHPoll(t, srv, c.Fetcher(spec, tc.auth, t.TempDir()), got.Digest)
				return
			}
			if n := srv.execs.Load() - execs; n != 0 {
				t.Errorf("git-upload-pack ran %d times for a refused connection", n)
			}
		})
	}
}

func mustOtherIdentity(t testing.TB) []byte {
	_, identity := newKey(t)
	return identity
}

// unchangedSSHPoll: polling an unchanged branch over ssh is one connection
// that lists the refs and wants nothing.
func unchangedSSHPoll(t *testing.T, srv *sshServer, f source.Fetcher, live string) {
	t.Helper()
	<-srv.finished // the first fetch's session
	conns := srv.conns.Load()
	srv.mu.Lock()
	if len(srv.wanted) != 1 {
		t.Errorf("the first fetch asked for %q, want one commit", srv.wanted)
	}
	srv.wanted = nil
	srv.mu.Unlock()
	got, err := f.Fetch(context.Background(), func(d string) bool { return d == live })
	if err != nil || got.Digest != live || got.FS != nil {
		t.Errorf("unchanged poll: digest %q (live %q), FS %v, error %v", got.Digest, live, got.FS, err)
	}
	if n := srv.conns.Load() - conns; n != 1 {
		t.Errorf("unchanged poll: %d connections, want 1", n)
	}
	<-srv.finished
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.wanted) != 0 {
		t.Errorf("unchanged poll asked for %q", srv.wanted)
	}
}

// TestFetchSSHIdle: an ssh server that goes silent, before the handshake,
// after the command starts or in the middle of the pack, fails the fetch
// once IdleTimeout passes without a byte, not at the pull deadline,
// with a message saying so; the fetch's files are removed.
func TestFetchSSHIdle(t *testing.T) {
	gittest.Need(t)
	root := t.TempDir()
	r := gittest.NewRepo(t, root, "cat")
	files := map[string]string{"catalog/big.json": strings.Repeat(`{"schema":"olm.package","name":"x"}`+"\n", 2000)}
	for k, v := range catalogFiles {
		files[k] = v
	}
	r.Commit(files)
	r.Push("main")
	clientSigner, identity := newKey(t)
	srv := newSSHServer(t, root, clientSigner.PublicKey())
	silent := silentListener(t)
	const idle = 300 * time.Millisecond
	for _, tc := range []struct {
		name  string
		addr  string
		stall int32
		want  string
	}{
		{"before the handshake", silent, stallNone, "the server sent nothing for 300ms (IdleTimeout) while connecting"},
		{"after the command starts", srv.addr, stallRefs, "the server sent nothing for 300ms (IdleTimeout)"},
		{"mid-pack", srv.addr, stallPack, "receive commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.stall.Store(tc.stall)
			srv.stalled.Store(false)
			defer srv.stall.Store(stallNone)
			known := []byte(knownhosts.Line([]string{knownhosts.Normalize(tc.addr)}, srv.hostKey) + "\n")
			auth := gitsource.Auth{SecretName: "ssh", Identity: identity, KnownHosts: known}
			c := newClient(t, gitsource.Options{IdleTimeout: idle, PullTimeout: 30 * time.Second}, unpack.Options{})
			tmp := t.TempDir()
			got, err := c.Fetcher(source.Git{URL: "ssh://git@" + tc.addr + "/cat.git", Directory: "catalog"}, auth, tmp).Fetch(context.Background(), never)
			got.Release()
			t.Logf("error: %v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "(IdleTimeout)") || strings.Contains(err.Error(), "PullTimeout") {
				t.Fatalf("error %v, want one saying %q and the idle bound", err, tc.want)
			}
			if tc.stall != stallNone && !srv.stalled.Load() {
				t.Errorf("the server never reached its stall point: the case tests something else")
			}
			entries, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("left behind: %s", e.Name())
			}
		})
	}
}

// silentListener accepts connections on loopback and never says a word.
func silentListener(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return l.Addr().String()
}
