package packageapi

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/catalogd/catalogd/test/await"
)

// TestListsGiveBackMemory checks that the server returns its garbage to
// the kernel after each list of packagemanifests it answered (as JSON or
// as kubectl's table), and not after answers that make little (a get, the
// icon, a watch) or requests refused before they reached the API.
func TestListsGiveBackMemory(t *testing.T) {
	e := startEnv(t, map[string]testCatalog{"main": {dir: "testdata/main"}})
	var calls atomic.Int64
	e.srv.lists.mu.Lock()
	e.srv.lists.giveBack = func() { calls.Add(1) }
	e.srv.lists.mu.Unlock()

	path := "/apis/packages.operators.coreos.com/v1/namespaces/" + testNamespace + "/packagemanifests"
	do := func(token, url, accept string) error {
		req, err := http.NewRequest(http.MethodGet, e.url+url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := insecureClient().Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
	cases := []struct {
		name string
		req  func() error
		want int64
	}{
		{"list", func() error { return do(e.reader, path, "") }, 1},
		{"list as a table", func() error {
			return do(e.reader, path, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
		}, 1},
		{"list across namespaces with a selector", func() error {
			return do(e.reader, "/apis/packages.operators.coreos.com/v1/packagemanifests?labelSelector=catalog%3Dmain", "")
		}, 1},
		{"get", func() error { return do(e.reader, path+"/alpha-op", "") }, 0},
		{"icon", func() error { return do(e.reader, path+"/alpha-op/icon", "") }, 0},
		{"watch", func() error {
			w, err := e.client(t, e.reader).Get().Namespace(testNamespace).Resource("packagemanifests").
				VersionedParams(&metav1.ListOptions{Watch: true}, metav1.ParameterCodec).Watch(context.Background())
			if err != nil {
				return err
			}
			<-w.ResultChan()
			w.Stop()
			return nil
		}, 0},
		{"list refused", func() error {
			if err := do(e.outsder, path, ""); err == nil {
				return fmt.Errorf("a user without RBAC listed")
			}
			return nil
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			if err := tc.req(); err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				// A list after it gives back once: had the request given
				// back too, there would be two.
				if err := do(e.reader, path, ""); err != nil {
					t.Fatal(err)
				}
			}
			await.True(t, "the give-back after a list", 10*time.Second, func() bool { return calls.Load() > before })
			time.Sleep(100 * time.Millisecond)
			if got := calls.Load() - before; got != 1 {
				t.Errorf("%d give-backs after the request (and a list when it is none), want 1", got)
			}
		})
	}
}
