// Package executorcmd builds the command line of the executor of one
// container (`egret executor ...`), which every scheduler runs as the
// container's entry point. It is the shared home of the function the local
// scheduler exports as local.ExecutorArgs, so that a scheduler does not
// import another scheduler.
package executorcmd
