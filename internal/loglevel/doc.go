// Package loglevel carries live log-level changes to the processes of a
// container (egret loglevel). The shell writes the requested level, the
// process names it applies to and its expiry into one small JSON file of
// the container, W/loglevel.json; every daemon and instance polls that
// file (the executor hands its path in EGRET_LOGLEVEL_FILE) and sets its
// zap.AtomicLevel to the requested level while the override matches it and
// has not expired, and back to its configured level otherwise. The revert
// thus happens in each process on its own clock: neither the CLI nor the
// shell needs to be alive for it.
package loglevel
