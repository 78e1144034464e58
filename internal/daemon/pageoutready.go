//go:build manager

package daemon

import (
	"context"
	"time"

	"github.com/go-logr/logr"
)

// pageOutSettle is how long after readiness the start-up pages are given
// back: what follows readiness at once (the first probes and status
// writes) touches pages of its own.
const pageOutSettle = 2 * time.Second

// pageOutWhenReady gives back the executable's pages that start-up
// touched (package pageout) once ready reports true and pageOutSettle has
// passed, unless ctx ends first. It runs once: the pages serving uses
// come back on their first use and stay, as they would have.
func pageOutWhenReady(ctx context.Context, ready func() bool, log logr.Logger) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !ready() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(pageOutSettle):
	}
	pageOutStartup(log)
}
