// Package watchstate turns successive snapshots of one node into
// spi.Events. Backends that cannot push events (the local filesystem) or
// that signal only "something changed" (the in-memory store) re-read the
// watched node and report the difference, which also coalesces bursts.
package watchstate
