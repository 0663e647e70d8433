// Package memory is an in-process spi.StateManager for tests: a Store holds
// one node tree and any number of Sessions share it, so that tests can
// exercise ephemeral nodes, watches and locks across "processes" without a
// filesystem or a ZooKeeper. Session.Crash and Session.Expire simulate a
// dead process and a session expiry.
//
// The package is deliberately not registered in the spi catalog: a factory
// would need a process-wide map of named stores (global mutable state).
// Code that builds state managers from a factory uses Store.Factory.
package memory
