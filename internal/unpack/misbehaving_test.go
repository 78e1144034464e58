package unpack_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/registrytest"
)

// redirectsFollowed is the redirect limit the unpacker promises: net/http's.
const redirectsFollowed = 10

// A registry that keeps redirecting a request must fail the pull at once
// with an error that says so, after a bounded number of requests, instead
// of being followed (and its responses kept) for ever.
func TestUnpackRedirectLoop(t *testing.T) {
	const secret = "S3CR3T-SIGNATURE"
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	layerPath := "/v2/catalogs/demo/blobs/" + manifestOf(t, ref).Layers[0].Digest.String()
	isLayer := func(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == layerPath }

	tests := []struct {
		name string
		// redirect answers a request of the loop, or returns false for the
		// registry to serve it.
		redirect func(w http.ResponseWriter, r *http.Request) bool
		// hops is how many redirects the registry sends before it would
		// serve the blob; -1 means never.
		hops int
	}{
		{
			name: "blob GET redirected to itself",
			hops: -1,
			redirect: func(w http.ResponseWriter, r *http.Request) bool {
				if !isLayer(r) {
					return false
				}
				http.Redirect(w, r, r.URL.String(), http.StatusTemporaryRedirect)
				return true
			},
		},
		{
			name: "blob GET redirected between two paths with signed queries",
			hops: -1,
			redirect: func(w http.ResponseWriter, r *http.Request) bool {
				switch {
				case isLayer(r), r.URL.Path == "/storage/b":
					http.Redirect(w, r, "/storage/a?X-Amz-Signature="+secret, http.StatusFound)
				case r.URL.Path == "/storage/a":
					http.Redirect(w, r, "/storage/b?X-Amz-Signature="+secret, http.StatusFound)
				default:
					return false
				}
				return true
			},
		},
		{
			name: "blob GET redirected as often as followed, then served",
			hops: redirectsFollowed,
			redirect: func(w http.ResponseWriter, r *http.Request) bool {
				if !isLayer(r) {
					return false
				}
				hop, _ := strconv.Atoi(r.URL.Query().Get("hop"))
				if hop == redirectsFollowed {
					return false
				}
				http.Redirect(w, r, fmt.Sprintf("%s?hop=%d", layerPath, hop+1), http.StatusTemporaryRedirect)
				return true
			},
		},
		{
			name: "blob GET redirected once more than followed",
			hops: redirectsFollowed + 1,
			redirect: func(w http.ResponseWriter, r *http.Request) bool {
				if !isLayer(r) {
					return false
				}
				hop, _ := strconv.Atoi(r.URL.Query().Get("hop"))
				if hop == redirectsFollowed+1 {
					return false
				}
				http.Redirect(w, r, fmt.Sprintf("%s?hop=%d", layerPath, hop+1), http.StatusTemporaryRedirect)
				return true
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var redirects atomic.Int64
			reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				if tt.redirect(w, r) {
					redirects.Add(1)
					return true
				}
				return false
			})
			defer reg.Intercept(nil)
			// A guard, far above the seconds a refused loop takes, so that
			// following the loop for ever fails rather than hangs.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			dst := filepath.Join(t.TempDir(), "dst")
			_, err := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}}).Unpack(ctx, ref, dst)
			t.Logf("Unpack error: %v (%d redirects sent)", err, redirects.Load())
			if ctx.Err() != nil {
				t.Fatalf("the unpack ran until the test's own deadline, after %d redirects: %v", redirects.Load(), err)
			}
			if tt.hops >= 0 && tt.hops <= redirectsFollowed {
				if err != nil {
					t.Fatalf("Unpack: %v; want %d redirects followed", err, tt.hops)
				}
				if got := redirects.Load(); got != int64(tt.hops) {
					t.Errorf("registry sent %d redirects, want %d", got, tt.hops)
				}
				return
			}
			var re *unpack.RedirectError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *unpack.RedirectError", err)
			}
			if re.Host != reg.Host || re.Path != layerPath {
				t.Errorf("RedirectError names %s%s, want the registry's %s%s", re.Host, re.Path, reg.Host, layerPath)
			}
			want := fmt.Sprintf("registry %s redirected the request for %s more than %d times", reg.Host, layerPath, redirectsFollowed)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error reveals a signed URL's token: %v", err)
			}
			// One request and the redirects followed, then the redirect
			// that is refused: the loop was not followed any further.
			if got := redirects.Load(); got != redirectsFollowed+1 {
				t.Errorf("registry sent %d redirects, want %d: one more than followed", got, redirectsFollowed+1)
			}
			if unpack.IsTerminal(err) {
				t.Errorf("IsTerminal = true, want a retryable registry error")
			}
			assertNoDst(t, dst)
		})
	}
}

// Resolving a tag whose manifest requests loop fails the same way, for the
// HEAD and for the GET tried after it.
func TestResolveRedirectLoop(t *testing.T) {
	reg := registrytest.New(t)
	registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	var redirects atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/manifests/") {
			return false
		}
		redirects.Add(1)
		http.Redirect(w, r, r.URL.String(), http.StatusTemporaryRedirect)
		return true
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})
	_, err := u.Resolve(ctx, reg.Host+"/catalogs/demo:v1")
	t.Logf("Resolve error: %v (%d redirects sent)", err, redirects.Load())
	if ctx.Err() != nil {
		t.Fatalf("Resolve ran until the test's own deadline, after %d redirects: %v", redirects.Load(), err)
	}
	var re *unpack.RedirectError
	if !errors.As(err, &re) || re.Host != reg.Host || unpack.IsTerminal(err) {
		t.Errorf("error %v, want a retryable *unpack.RedirectError naming %s", err, reg.Host)
	}
	if got, most := redirects.Load(), int64(2*(redirectsFollowed+1)); got > most {
		t.Errorf("registry sent %d redirects, want at most %d: the HEAD's and the GET's", got, most)
	}
}

// A pull started with PullContext is bounded as a whole: a registry slow
// enough that resolving and pulling each fit in PullTimeout, but not both,
// fails it with a timeout that says so. The caller's own deadline is not
// reported as the pull's.
func TestPullContextBoundsTheWholePull(t *testing.T) {
	const pullTimeout = 2 * time.Second
	const slow = 3 * pullTimeout / 4
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	layerPath := "/v2/catalogs/demo/blobs/" + manifestOf(t, ref).Layers[0].Digest.String()
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/manifests/v1") || r.URL.Path == layerPath {
			select {
			case <-r.Context().Done():
				return true
			case <-time.After(slow):
			}
		}
		return false // served, late
	})
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}, PullTimeout: pullTimeout})

	tests := []struct {
		name string
		// callerTimeout is the caller's own deadline on the whole pull.
		callerTimeout time.Duration
		wantPullTimer bool
	}{
		{name: "the pull's deadline", callerTimeout: time.Minute, wantPullTimer: true},
		{name: "the caller's deadline", callerTimeout: slow / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.callerTimeout)
			defer cancel()
			ctx, stop := u.PullContext(ctx)
			defer stop()
			dst := filepath.Join(t.TempDir(), "dst")
			digestRef, err := u.Resolve(ctx, reg.Host+"/catalogs/demo:v1")
			if err == nil {
				_, err = u.Unpack(ctx, digestRef, dst)
			}
			t.Logf("pull error: %v", err)
			if err == nil {
				t.Fatal("the pull succeeded")
			}
			var te *unpack.TimeoutError
			isPull := errors.As(err, &te) && te.After == pullTimeout
			if isPull != tt.wantPullTimer {
				t.Errorf("error %v: reported as the pull timing out = %v, want %v", err, isPull, tt.wantPullTimer)
			}
			if tt.wantPullTimer && !strings.Contains(err.Error(), "timed out after "+pullTimeout.String()) {
				t.Errorf("error %q does not say the pull timed out after %s", err, pullTimeout)
			}
			if unpack.IsTerminal(err) {
				t.Errorf("IsTerminal = true, want retryable")
			}
			assertNoDst(t, dst)
		})
	}
}
