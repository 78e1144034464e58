// Package await owns one thing: waiting, in a test, for a condition that
// something running in the background (a controller, a server, a watch)
// makes true. Tests assert outcomes this way rather than by sleeping a
// fixed time, so a slow machine makes them slower, not flaky.
package await

import (
	"errors"
	"testing"
	"time"
)

// interval is how often a condition is checked: often enough that a test
// waits little past the moment it holds, rarely enough that checking (an
// API call, an HTTP request) does not load the thing being waited for.
const interval = 25 * time.Millisecond

// Until checks cond until it returns nil, and fails t with cond's last
// error, naming what was awaited, once timeout has passed.
func Until(t testing.TB, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(interval)
	}
}

// True is Until for a condition that has no error to report.
func True(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	Until(t, what, timeout, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
}
