// Package instance is the runtime of one spout or bolt task inside the
// topology binary: it calls the user's component, computes groupings,
// batches outgoing tuples per destination task and decodes incoming ones.
//
// An Instance talks to the outside world only through a Transport: the
// gateway to a stream manager in a container, or the in-memory router of
// the in-process runner (package local). The same code runs in both.
package instance
