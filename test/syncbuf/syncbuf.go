// Package syncbuf holds a buffer that tests can read while a server or a
// child process is still writing its output to it.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer whose contents may be read concurrently with writes.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
