package daemon

import (
	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/pageout"
)

// pageOutStartup gives back the executable's pages that start-up touched,
// and logs what it did.
func pageOutStartup(log logr.Logger) {
	st, err := pageout.Executable()
	if err != nil {
		// Executable stops at the first step that fails: the mappings it
		// advised before that were given back, the others kept.
		log.V(1).Info("gave back the executable's start-up pages in part or not at all", "mappingsAdvised", st.Mappings, "reason", err.Error())
		return
	}
	log.Info("gave back the executable's start-up pages", "mappings", st.Mappings,
		"residentFileMiBBefore", st.ResidentBefore>>20, "residentFileMiBAfter", st.ResidentAfter>>20)
}
