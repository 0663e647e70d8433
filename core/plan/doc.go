// Package plan holds the packing plan (which instances run in which
// container, with their resources) and the task layout derived from it that
// the runtime routes with.
package plan
