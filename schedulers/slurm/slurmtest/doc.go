// Package slurmtest starts a real one-node Slurm cluster for tests: munged,
// slurmctld and slurmd from Debian's slurm-wlm and munge packages, run as
// root with their own slurm.conf, munge key, state, spool and log
// directories under one directory, listening on free loopback ports only.
//
// Start it once per test package (TestMain) and Stop it after the tests:
// Stop cancels every job and then kills what is left of the jobs' processes
// (`scontrol listpids` and their slurmstepd), since job steps outlive the
// daemons. Available says why the cluster cannot run here (binaries
// missing, not root, a host name that does not resolve to loopback), for
// a skip, or a failure when EGRET_REQUIRE_SLURM=1 (RequireEnv).
package slurmtest
