package reconcile

// ChangesMessage exposes changesMessage to the external tests.
var ChangesMessage = changesMessage
