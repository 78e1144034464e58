package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/server"
)

// progressBody is the answer of the handlers of the write deadline tests:
// far more than the socket buffers of their connections (see
// progressCase.start and smallSendBuffers), so the handler's writes wait for the client.
var progressBody = func() []byte {
	b := make([]byte, 10<<20)
	for i := range b {
		b[i] = byte(i * 7 / 3)
	}
	return b
}()

// progressCases are the two ways the API writes an answer, over plain HTTP
// and over TLS: many writes (a compressed answer), or one copy from a file
// (the content file), which net/http sends with sendfile on a plain
// connection and copies through user space over TLS.
var progressCases = []progressCase{{"writes", false}, {"file", false}, {"writes", true}, {"file", true}}

type progressCase struct {
	way string
	tls bool
}

func (c progressCase) name() string {
	if c.tls {
		return c.way + " tls"
	}
	return c.way
}

// start serves the case's handler with the write idle bound idle, sends it
// a GET on a new connection with a receive buffer of 64 KiB (Linux would
// otherwise grow it to megabytes, enough to take much of the answer
// without the client reading it), reads the answer's header, and returns
// the connection, its reader of the body, and where the handler reports
// how its answer ended. The connection is closed at cleanup.
func (c progressCase) start(t *testing.T, idle time.Duration) (net.Conn, *bufio.Reader, <-chan error) {
	t.Helper()
	ended := make(chan error, 1)
	opts := server.Options{API: progressHandler(t, c.way, ended), Ready: func() error { return nil }}
	var clientTLS *tls.Config
	if c.tls {
		dir := t.TempDir()
		opts.TLSCertFile, opts.TLSKeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(writeCert(t, opts.TLSCertFile, opts.TLSKeyFile, "catalogd"))
		clientTLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, opts, idle, smallSendBuffers{ln})
	tcp, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	if err := tcp.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	conn := tcp
	if clientTLS != nil {
		conn = tls.Client(tcp, clientTLS)
	}
	if _, err := io.WriteString(conn, "GET /answer HTTP/1.1\r\nHost: catalogd\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(progressBody)) {
		t.Fatalf("status %d, Content-Length %d; want 200 and %d", resp.StatusCode, resp.ContentLength, len(progressBody))
	}
	return conn, br, ended
}

// progressHandler writes progressBody in the given way and reports how its
// answer ended on ended.
func progressHandler(t *testing.T, way string, ended chan<- error) http.Handler {
	file := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(file, progressBody, 0o600); err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(progressBody)))
		var err error
		switch way {
		case "writes":
			for p := progressBody; len(p) > 0 && err == nil; p = p[min(len(p), 32<<10):] {
				_, err = w.Write(p[:min(len(p), 32<<10)])
			}
		case "file":
			var f *os.File
			if f, err = os.Open(file); err == nil {
				_, err = io.Copy(w, f)
				f.Close()
			}
		}
		ended <- errors.Join(err, context.Cause(r.Context()))
	})
}

// TestSteadyReaderGetsWholeAnswer: a client that reads slowly but steadily
// gets the whole answer, though it takes several times the write idle
// bound, for both ways of writing an answer, over plain HTTP and TLS. (A bound on the whole answer
// cut it off after the first second.)
func TestSteadyReaderGetsWholeAnswer(t *testing.T) {
	const idle = time.Second
	for _, c := range progressCases {
		t.Run(c.name(), func(t *testing.T) {
			conn, br, ended := c.start(t, idle)
			// 3 MiB/s on average, whatever the machine's load delays: the
			// 10 MiB take over 3 s, and a 1 MiB write waits about a third
			// of a second.
			const rate = 3 << 20 // bytes per second
			start := time.Now()
			got := sha256.New()
			piece := make([]byte, 32<<10)
			var read int
			for read < len(progressBody) {
				if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
					t.Fatal(err)
				}
				n, err := io.ReadFull(br, piece[:min(len(piece), len(progressBody)-read)])
				got.Write(piece[:n])
				read += n
				if err != nil {
					t.Fatalf("after %d of %d bytes in %v: %v", read, len(progressBody), time.Since(start).Round(time.Millisecond), err)
				}
				time.Sleep(time.Until(start.Add(time.Duration(read) * time.Second / rate)))
			}
			took := time.Since(start)
			if want := sha256.Sum256(progressBody); !bytes.Equal(got.Sum(nil), want[:]) {
				t.Fatalf("the %d bytes read differ from the answer's", read)
			}
			if err := <-ended; err != nil {
				t.Errorf("the handler's answer ended with %v", err)
			}
			if took < 3*idle {
				t.Errorf("the answer took %v, under 3 times the idle bound %v: the test shows nothing", took, idle)
			}
			t.Logf("%d bytes in %v with a write idle bound of %v", read, took.Round(time.Millisecond), idle)
		})
	}
}

// TestStalledReaderIsCut: a client that reads the start of the answer and
// then stops is cut off once the write idle bound has passed without
// progress, not before: the handler's write fails and its context ends.
func TestStalledReaderIsCut(t *testing.T) {
	const idle = time.Second
	for _, c := range progressCases {
		t.Run(c.name(), func(t *testing.T) {
			_, br, ended := c.start(t, idle)
			if _, err := io.ReadFull(br, make([]byte, 64<<10)); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			select {
			case err := <-ended:
				cut := time.Since(stopped)
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("the handler's answer ended with %v, want a deadline", err)
				}
				// The last write may have started a little before the
				// client stopped; it cannot have started an idle period
				// before.
				if cut < idle/2 {
					t.Errorf("the answer was cut %v after the client stopped reading, before the idle bound %v", cut, idle)
				}
				t.Logf("cut %v after the client stopped reading: %v", cut.Round(time.Millisecond), err)
			case <-time.After(30 * time.Second):
				t.Fatalf("the answer to a client that stopped reading was not cut 30 s later, with a write idle bound of %v", idle)
			}
		})
	}
}
