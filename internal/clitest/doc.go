// Package clitest runs the egret CLI binary from the tests of the
// backends that submit to a real cluster (schedulers/slurm, test/hadoop):
// one command line with the cluster's config properties and EGRET_HOME,
// its output and exit code, plus the waits such tests share.
package clitest
