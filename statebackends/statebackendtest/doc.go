// Package statebackendtest is the conformance suite of
// core/statebackend.Backend: every keyed-state backend runs it.
//
//	func TestConformance(t *testing.T) {
//		statebackendtest.Suite{Name: mybackend.Name}.Run(t)
//	}
//
// The suite opens backends through the registry (so the backend's package
// must be linked in), each with a directory of its own.
package statebackendtest
