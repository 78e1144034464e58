package server

import "time"

// NewWithWriteIdle is New with idle in place of WriteIdleTimeout (when not
// zero), so that tests watch a stalled client be cut off, and the index
// file it held be removed, without waiting the full minute.
func NewWithWriteIdle(opts Options, idle time.Duration) (*Server, error) {
	if idle == 0 {
		idle = WriteIdleTimeout
	}
	return newServer(opts, idle)
}
