// Package e2e holds Egret's end-to-end tests: they build the egret binary
// and example topologies, submit topologies to the local cluster (and to
// localzk against a real ZooKeeper) as a user would, and inspect the real
// processes, state and metrics. Every test runs in its own EGRET_HOME and
// kills what it started.
package e2e
