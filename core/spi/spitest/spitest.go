// Package spitest lets the SPI conformance suites (schedulertest,
// uploadertest, statemgrtest, packingtest) run both under `go test` and
// from the CLI (`egret plugin verify`): the suites take a T, which
// *testing.T implements, and Reporter implements T outside of go test.
//
// The checks are written once, against T; spitest.Run starts a subtest on
// either kind of T.
package spitest

import (
	"context"
	"testing"
)

// T is the part of *testing.T the conformance suites use. *testing.T
// implements it; so does a check run by a Reporter. As with testing, Fatal,
// FailNow, Skip and their variants end the calling goroutine, so they must
// be called from the goroutine running the check.
type T interface {
	Helper()
	Name() string
	Log(args ...any)
	Logf(format string, args ...any)
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Fail()
	FailNow()
	Failed() bool
	Skip(args ...any)
	Skipf(format string, args ...any)
	SkipNow()
	Cleanup(func())
	Context() context.Context
	TempDir() string
}

// runner is a T that runs subtests of its own (Reporter's checks).
type runner interface {
	RunCheck(name string, f func(T)) bool
}

var (
	_ T = (*testing.T)(nil)
	_ T = (*check)(nil)
)

// Run runs f as the subtest name of t and reports whether it passed (or was
// skipped): t.Run for a *testing.T, a reported check for a Reporter's T.
func Run(t T, name string, f func(T)) bool {
	t.Helper()
	switch p := t.(type) {
	case *testing.T:
		return p.Run(name, func(t *testing.T) { f(t) })
	case runner:
		return p.RunCheck(name, f)
	}
	t.Fatalf("spitest.Run: %T cannot run subtests (use *testing.T or a spitest.Reporter)", t)
	return false
}

// Testing returns t as a *testing.T, or nil when the suite does not run
// under go test. Suites use it to call harness functions written for
// *testing.T.
func Testing(t T) *testing.T {
	tt, _ := t.(*testing.T)
	return tt
}
