// Package shell is the shell daemon (`egret shell`), one per container,
// started and restarted by the executor like the other daemons. It is a
// small HTTP server over the container's working directory W:
//
//	GET  /logs                      the log files of W/logs: name, size, mtime (JSON)
//	GET  /logs/<name>               one log file; ?offset=N (negative: from the end)
//	                                and &length=M select bytes, else HTTP Range applies
//	GET  /processes                 the container's processes: name, kind, pid,
//	                                state, restarts (from W/pids.json, which the
//	                                executor rewrites at every start and exit)
//	POST /processes/<name>/kill     SIGKILL the process group of one process; the
//	                                executor restarts it
//	GET  /loglevel                  the live log-level override (internal/loglevel)
//	POST /loglevel                  {"level","component","duration"}: set it
//
// The POST endpoints require the topology's secret (generated at submit,
// read from /secrets/<topology>), hex-encoded in the X-Egret-Secret
// header; it is compared in constant time and never travels in a URL.
//
// Only files of W/logs can be read: a log name must be one plain file
// name (internal/safepath, letters, digits, '.', '-', '_', not starting
// with '.'), be listed in W/logs as a regular file (no symbolic link) and
// is opened with O_NOFOLLOW and checked again after the open. Anything else
// is refused with 400 or 404 before a file is opened. The shell does its
// own routing on the raw path: no path cleaning redirects.
//
// The shell publishes its address at /shells/<topology>.<container>
// (ephemeral) in the state manager; `egret logs` and `egret loglevel` find
// it there.
package shell
