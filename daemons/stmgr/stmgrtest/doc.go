// Package stmgrtest holds test helpers for the data plane: a fake
// topology manager that speaks the framed protocol to stream managers, and
// a counting topology whose bolts record every tuple they receive.
package stmgrtest
