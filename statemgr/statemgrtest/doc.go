// Package statemgrtest is the conformance suite every spi.StateManager
// backend runs, built in or third party:
//
//	func TestConformance(t *testing.T) {
//		statemgrtest.Run(t, func(t *testing.T) spi.StateManager {
//			return openSession(t) // a NEW session against the SAME store
//		})
//	}
//
//	func TestExpiry(t *testing.T) {
//		statemgrtest.RunExpiry(t, openShortTimeoutSession, func(t *testing.T, sm spi.StateManager) {
//			crash(sm) // end the session without Close, as a dead process would
//		})
//	}
//
// Run checks node semantics and versions, the sentinel errors, Multi
// atomicity, ephemeral nodes across sessions, watches, locks, path
// validation and concurrent writers. RunExpiry checks that a crashed
// session's ephemeral nodes and locks vanish within SessionTimeout plus a
// margin. Both wait on conditions with deadlines; both leave the store as
// they found it.
//
// The checks take a spitest.T, so they also run outside go test: RunOpen
// and RunExpiryOpen take a context-and-error session opener and crash
// function instead of the *testing.T ones (`egret plugin verify` uses
// them with a spitest.Reporter).
package statemgrtest
