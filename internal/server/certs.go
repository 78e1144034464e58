package server

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// certCheckInterval is how often, at most, a handshake looks at the
// certificate files: a rotated Secret is served within about a second of
// the kubelet writing it, and a busy server stats two files once a second.
const certCheckInterval = time.Second

// certFiles is the server's certificate, read from its two files and read
// again when either file changes, as a mounted Secret does when it is
// rotated (the kubelet swaps a symbolic link, which stat follows). It is
// checked from the handshakes themselves, at most every
// certCheckInterval, so there is no watcher to start or stop and a server
// that nobody calls does nothing. A pair that does not load (a key written
// after its certificate, a broken Secret) leaves the last good certificate
// in place and is logged once; the files are tried again at the next check.
type certFiles struct {
	certFile, keyFile string
	log               logr.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	loaded  [2]os.FileInfo // the files as they were when cert was read
	checked time.Time
	// failed and failedErr are the files as they were when a check last
	// failed, and why: the same failure is logged once.
	failed    [2]os.FileInfo
	failedErr string
}

// loadCertFiles reads the pair once, failing if it does not load: a server
// must not start without a certificate.
func loadCertFiles(certFile, keyFile string, log logr.Logger) (*certFiles, error) {
	c := &certFiles{certFile: certFile, keyFile: keyFile, log: log}
	stat, err := c.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	c.cert, c.loaded, c.checked = &cert, stat, time.Now()
	return c, nil
}

// GetCertificate is tls.Config's: the current certificate, read again
// first when the files changed since it was read.
func (c *certFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= certCheckInterval {
		c.checked = now
		c.reload()
	}
	return c.cert, nil
}

// reload reads the pair again if either file is not the one last read.
func (c *certFiles) reload() {
	stat, err := c.stat()
	switch {
	case err != nil:
		c.logFailure(stat, err)
		return
	case sameFiles(stat, c.loaded):
		return
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		c.logFailure(stat, fmt.Errorf("load TLS certificate %s and key %s: %w", c.certFile, c.keyFile, err))
		return
	}
	c.cert, c.loaded, c.failed, c.failedErr = &cert, stat, [2]os.FileInfo{}, ""
	c.log.Info("loaded a new TLS certificate", "certFile", c.certFile)
}

// logFailure logs err unless it is the failure already logged: the same
// error, on the same files or on files still missing, so that a broken or
// missing Secret is logged once rather than every second.
func (c *certFiles) logFailure(stat [2]os.FileInfo, err error) {
	missing := stat[0] == nil || stat[1] == nil
	if err.Error() == c.failedErr && (missing || sameFiles(stat, c.failed)) {
		return
	}
	c.failed, c.failedErr = stat, err.Error()
	c.log.Error(err, "keeping the TLS certificate already loaded")
}

func (c *certFiles) stat() ([2]os.FileInfo, error) {
	var st [2]os.FileInfo
	for i, name := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return st, fmt.Errorf("TLS certificate: %w", err)
		}
		st[i] = fi
	}
	return st, nil
}

// sameFiles says whether a and b are the same two files, unchanged: the
// same inodes, sizes and modification times.
func sameFiles(a, b [2]os.FileInfo) bool {
	for i := range a {
		if a[i] == nil || b[i] == nil || !os.SameFile(a[i], b[i]) ||
			a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()) {
			return false
		}
	}
	return true
}
