package daemon

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/pageout"
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

// pageOutStartup gives back the executable's pages that start-up touched,
// and logs what it did.
func pageOutStartup(log logr.Logger) {
	st, err := pageout.Executable()
	if err != nil {
		log.V(1).Info("keeping the executable's start-up pages", "reason", err.Error())
		return
	}
	log.Info("gave back the executable's start-up pages", "mappings", st.Mappings,
		"residentFileMiBBefore", st.ResidentBefore>>20, "residentFileMiBAfter", st.ResidentAfter>>20)
}
