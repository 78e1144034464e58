package server

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/catalogd/catalogd/test/tlstest"
)

// TestCertFilesLogEachFailureOnce: a key that goes missing, then is
// broken, then is good again, is checked at every handshake past the
// interval; each failure is logged once however many handshakes find it,
// the first certificate is served throughout, and the good pair is
// loaded.
func TestCertFilesLogEachFailureOnce(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(name+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(name+".new", name); err != nil {
			t.Fatal(err)
		}
	}
	writePair := func(cn string) {
		certPEM, keyPEM := tlstest.SelfSigned(t, cn)
		write(certFile, certPEM)
		write(keyFile, keyPEM)
	}
	writePair("first")
	var errorsLogged int
	log := funcr.New(func(_, _ string) {}, funcr.Options{})
	log = logr.New(&countErrors{LogSink: log.GetSink(), n: &errorsLogged})
	c, err := loadCertFiles(certFile, keyFile, log)
	if err != nil {
		t.Fatal(err)
	}
	// served makes handshakes past the check interval and returns the
	// certificate's common name.
	served := func(handshakes int) string {
		t.Helper()
		var cn string
		for range handshakes {
			c.mu.Lock()
			c.checked = time.Now().Add(-2 * certCheckInterval)
			c.mu.Unlock()
			got, err := c.GetCertificate(nil)
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(got.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			cn = leaf.Subject.CommonName
		}
		return cn
	}
	for _, step := range []struct {
		name       string
		change     func()
		wantCN     string
		wantErrors int
	}{
		{"key missing", func() { os.Remove(keyFile) }, "first", 1},
		{"key broken", func() { write(keyFile, []byte("-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n")) }, "first", 2},
		{"good pair", func() { writePair("second") }, "second", 2},
	} {
		step.change()
		if cn := served(3); cn != step.wantCN || errorsLogged != step.wantErrors {
			t.Errorf("%s: serving %q with %d errors logged, want %q with %d", step.name, cn, errorsLogged, step.wantCN, step.wantErrors)
		}
	}
}

// countErrors counts the errors logged through it.
type countErrors struct {
	logr.LogSink
	n *int
}

func (c *countErrors) Error(err error, msg string, kv ...any) {
	*c.n++
	c.LogSink.Error(err, msg, kv...)
}
