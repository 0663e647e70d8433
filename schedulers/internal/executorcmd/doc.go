// Package executorcmd builds the command line of the executor of one
// container (`egret executor ...`), which every scheduler runs as the
// container's entry point, so that schedulers share it without importing
// one another.
package executorcmd
