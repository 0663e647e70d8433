// Package procinfo tells whether a process still runs, telling a reused
// pid apart by the process's start time (Linux /proc), and treating a
// zombie (exited, not yet reaped) as gone. It serves every component that
// records a pid in a file and checks it later: the localfs state manager's
// session leases and the local scheduler's service and executors.
package procinfo
