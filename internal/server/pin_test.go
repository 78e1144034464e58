package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/server"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// pinCatalog is large enough (4.3 MB of JSON, 600 KB gzipped) that none
// of the streamed answers fits in the socket buffers of a loopback client
// that does not read (see smallSendBuffers), so the handler stays blocked
// in a write.
var pinCatalog = fbcgen.Options{Packages: 20, Bundles: 300, BundleObjectBytes: 8000, Seed: 11}

const demoDir = "../../test/testdata/demo"

// TestStalledReadersReleaseRetiredIndex shows what bounds the disk a slow
// reader can hold: clients ask for a streamed answer of a large index and
// never read it; the catalog is then rebuilt, which retires that index.
// The retired file stays while their answers are in flight (they pin it)
// and is removed once the write deadline cuts them off, while an ordinary
// client gets answers from the new index throughout. Each case is one
// streamed answer the API writes in its own way.
func TestStalledReadersReleaseRetiredIndex(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	stats, err := fbcgen.Write(context.Background(), big, pinCatalog)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stalled clients ask for answers of a %d-byte catalog", stats.Bytes)
	wantAll := fbcfacts.Load(t, demoDir).JSONLines()
	for _, tc := range []struct {
		name, path string
		header     []string
		status     int
	}{
		{"all", "/catalogs/c/api/v1/all", []string{"Accept-Encoding: identity"}, http.StatusOK},
		{"all gzip", "/catalogs/c/api/v1/all", []string{"Accept-Encoding: gzip"}, http.StatusOK},
		// Two ranges: net/http writes the multipart answer from a goroutine
		// of its own.
		{"all two ranges", "/catalogs/c/api/v1/all", []string{"Accept-Encoding: identity", "Range: bytes=0-99,1000-"}, http.StatusPartialContent},
		{"metas", "/catalogs/c/api/v1/metas", []string{"Accept-Encoding: identity"}, http.StatusOK},
		{"metas bundles gzip", "/catalogs/c/api/v1/metas?schema=olm.bundle", []string{"Accept-Encoding: gzip"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			request := "GET " + tc.path + " HTTP/1.1\r\nHost: catalogd\r\n" + strings.Join(tc.header, "\r\n") + "\r\n\r\n"
			// The pin can only be seen before the deadline; a machine too
			// busy to rebuild within it tries again with a longer one.
			for timeout := 2 * time.Second; ; timeout *= 4 {
				if pinReleased(t, big, request, tc.status, timeout, wantAll) {
					return
				}
				if timeout > time.Minute {
					t.Fatalf("the catalog could not be rebuilt within a write timeout of %v", timeout)
				}
				t.Logf("rebuilding took longer than the write timeout %v; trying again with a longer one", timeout)
			}
		})
	}
}

// pinReleased serves the catalog in dir as "c" with the given write
// timeout, has three clients send request and stop reading after the
// status line, rebuilds "c" from the demo catalog and checks the retired
// file is pinned and then removed. It returns false, having checked
// nothing, when the rebuild outlasted the timeout, so that the pin could
// not be seen.
func pinReleased(t *testing.T, dir, request string, wantStatus int, timeout time.Duration, wantAll []byte) bool {
	t.Helper()
	st, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cats := catalogs.NewTable()
	cats.Put(catalogs.Catalog{Name: "c", Source: dir})
	cats.MarkLoaded()
	old, _, _, err := st.Update(context.Background(), "c", index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:big"})
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(cats, st, httpapi.Options{Log: testr.New(t)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, server.Options{API: api, Ready: func() error { return nil }}, timeout, smallSendBuffers{ln})

	began := time.Now() // before any request, so before any write deadline is set
	for range 3 {
		stall(t, strings.TrimPrefix(base, "http://"), request, wantStatus)
	}
	if _, _, _, err := st.Update(context.Background(), "c", index.Content{FS: os.DirFS(demoDir), Ref: demoDir, Digest: "sha256:demo"}); err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(old.Path)
	if time.Since(began) >= timeout {
		return false
	}
	if statErr != nil {
		t.Fatalf("the retired index is gone while stalled readers hold it (%v): the clients were not stalled", statErr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var answers int
	var answerErr error
	wg.Go(func() {
		for ctx.Err() == nil && answerErr == nil {
			answerErr = checkAll(base, wantAll)
			answers++
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	removed := false
	grace := timeout + 30*time.Second
	for deadline := time.Now().Add(grace); !removed && time.Now().Before(deadline); {
		_, err := os.Stat(old.Path)
		removed = errors.Is(err, os.ErrNotExist)
		if !removed {
			time.Sleep(50 * time.Millisecond)
		}
	}
	cancel()
	wg.Wait()
	if answerErr != nil {
		t.Errorf("an ordinary client while readers were stalled (answer %d): %v", answers, answerErr)
	}
	if !removed {
		t.Errorf("the retired index %s is still on disk %v after the rebuild, with a write timeout of %v", filepath.Base(old.Path), grace, timeout)
		return true
	}
	t.Logf("write timeout %v: retired index removed %v after the first request; %d ordinary answers meanwhile", timeout, time.Since(began).Round(time.Millisecond), answers)
	return true
}

// stall sends request on a new connection with a tiny receive window,
// reads the status line (the handler has begun its answer, so it holds
// the index) and reads nothing more. The connection is closed at cleanup.
func stall(t *testing.T, addr, request string, wantStatus int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReaderSize(conn, 16).ReadString('\n')
	if err != nil {
		t.Fatalf("read status line: %v", err)
	}
	if want := fmt.Sprintf("HTTP/1.1 %d ", wantStatus); !strings.HasPrefix(line, want) {
		t.Fatalf("status line %q, want %s…", line, want)
	}
}

// checkAll fetches /all of "c" and compares it with want.
func checkAll(base string, want []byte) error {
	req, err := http.NewRequest(http.MethodGet, base+"/catalogs/c/api/v1/all", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
		return fmt.Errorf("status %d, %d bytes; want 200 and the demo catalog's %d bytes", resp.StatusCode, len(body), len(want))
	}
	return nil
}

// smallSendBuffers gives every accepted connection a send buffer of 64 KiB.
// Linux grows a loopback send buffer up to net.ipv4.tcp_wmem's maximum (4
// MiB by default), enough to take a whole gzipped answer; a fixed small
// buffer makes the answers block whatever the host's settings.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := conn.(*net.TCPConn).SetWriteBuffer(64 << 10); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
