package source

import "errors"

// Terminal marks err as decided by the content of a pinned revision (a
// commit, a digest, a checksum): fetching the same revision again cannot
// succeed, so the sync remembers it as bad content and the controller
// reports Blocked rather than Retrying. Errors of the network, of
// credentials, or of a remote that may change its mind stay unmarked, and
// are retried.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or an error it wraps, was marked by
// Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }
