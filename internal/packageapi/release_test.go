package packageapi

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/await"
)

// TestListsRunTheGiveBack checks that the server runs its give-back
// (debug.FreeOSMemory, which returns the free heap to the kernel; stubbed
// here to count its runs) after each list of packagemanifests it answered
// (as JSON or as kubectl's table), and not after answers that make little
// (a get, the icon, a watch) or requests refused before they reached the
// API. What it returns is not measured: the runtime's background scavenger
// returns much of it meanwhile anyway (see store's
// TestUpdateCollectsOncePerSwap).
//
// Requests go one after another over one connection, so that once an
// answer is read, one more request's answer says the server has returned
// from the handler before it, release check included; the releaser's
// state is then read under its lock, where a give-back is either still
// pending or done.
func TestListsRunTheGiveBack(t *testing.T) {
	e := startEnv(t, map[string]testCatalog{"main": {dir: "testdata/main"}})
	var calls atomic.Int64
	e.srv.lists.mu.Lock()
	e.srv.lists.giveBack = func() { calls.Add(1) }
	e.srv.lists.mu.Unlock()
	// The give-backs run so far and whether one is pending.
	state := func() (int64, bool) {
		e.srv.lists.mu.Lock()
		defer e.srv.lists.mu.Unlock()
		return calls.Load(), e.srv.lists.pending.Load()
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxConnsPerHost: 1},
		Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	path := "/apis/packages.operators.coreos.com/v1/namespaces/" + testNamespace + "/packagemanifests"
	// do sends a request and reads its answer whole, which leaves the
	// connection to the next; it reports whether the connection was one
	// an earlier request used.
	do := func(token, url, accept string, want int) (reused bool, err error) {
		req, err := http.NewRequest(http.MethodGet, e.url+url, nil)
		if err != nil {
			return false, err
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
		}))
		req.Header.Set("Authorization", "Bearer "+token)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return false, err
		}
		if resp.StatusCode != want {
			return false, fmt.Errorf("GET %s: %s, want %d", url, resp.Status, want)
		}
		return reused, nil
	}
	cases := []struct {
		name, token, url, accept string
		status                   int
		want                     int64
	}{
		{name: "list", token: e.reader, url: path, status: http.StatusOK, want: 1},
		{name: "list as a table", token: e.reader, url: path, accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
			status: http.StatusOK, want: 1},
		{name: "list across namespaces with a selector", token: e.reader, url: "/apis/packages.operators.coreos.com/v1/packagemanifests?labelSelector=catalog%3Dmain",
			status: http.StatusOK, want: 1},
		{name: "get", token: e.reader, url: path + "/alpha-op", status: http.StatusOK},
		{name: "icon", token: e.reader, url: path + "/alpha-op/icon", status: http.StatusOK},
		// The server ends the watch after a second, so that its answer
		// can be read whole.
		{name: "watch", token: e.reader, url: path + "?watch=true&timeoutSeconds=1", status: http.StatusOK},
		{name: "list refused", token: e.outsder, url: path, status: http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := state()
			if _, err := do(tc.token, tc.url, tc.accept, tc.status); err != nil {
				t.Fatal(err)
			}
			if tc.want > 0 {
				// The give-back runs after the answer, in a goroutine of its own.
				await.True(t, "the give-back after a list", 10*time.Second, func() bool { return calls.Load() > before })
			}
			reused, err := do(e.reader, "/version", "", http.StatusOK)
			if err != nil {
				t.Fatal(err)
			}
			if !reused {
				t.Fatal("the request after went over a new connection: it says nothing of when the server returned")
			}
			got, pending := state()
			if got-before != tc.want || pending {
				t.Errorf("%d give-backs after the request (pending: %v), want %d", got-before, pending, tc.want)
			}
		})
	}
}
