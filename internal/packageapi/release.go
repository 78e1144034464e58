package packageapi

import (
	"net/http"
	"sync"
	"sync/atomic"

	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// listReleaser gives a list's garbage back to the kernel once the answer
// is written. A list of every manifest encodes each one to JSON and gzips
// the whole (on the bench catalog, 3 MiB of JSON and 6 MiB allocated per
// list); the heap keeps that until the next collection, and the runtime
// returns freed memory to the kernel only gradually and never below its
// heap goal, twice the live heap: a process that answered one list stays
// that much larger. Lists are rare (a console page, a client's or an
// informer's start; watches follow the changes), so one collection after
// each costs little, and consecutive lists share one.
type listReleaser struct {
	// pending says a give-back is waiting to run: lists answered
	// meanwhile need no other.
	pending atomic.Bool
	// mu runs one give-back at a time and guards giveBack
	// (debug.FreeOSMemory; a field so that tests see when it runs).
	mu       sync.Mutex
	giveBack func()
}

// wrap runs h, then, when the request listed packagemanifests, a
// give-back. h must run inside the API server's filters, after the
// request's RequestInfo is known.
func (r *listReleaser) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(w, req)
		info, ok := genericrequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || info.Verb != "list" || info.Resource != groupResource.Resource || info.Subresource != "" {
			return
		}
		if r.pending.Swap(true) {
			return
		}
		// Not in the request's goroutine: its answer is complete, and
		// the client need not wait for the collection.
		go func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.pending.Store(false)
			r.giveBack()
		}()
	})
}
