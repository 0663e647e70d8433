package main

import "strings"

// area is what part of the architecture a package belongs to.
type area int

const (
	areaOther       area = iota // proto/, multilang/, the root
	areaCore                    // core/
	areaInternal                // internal/: helpers below everything but core
	areaConf                    // conf: typed cluster config
	areaBackend                 // one backend: packing/ffd, schedulers/nomad/...
	areaKind                    // what the backends of a kind share: its internal/, its conformance suite
	areaDaemon                  // one daemon: daemons/stmgr/...
	areaContract                // a package daemons share: daemons/wire, ...
	areaAPI                     // api/: what a topology author imports
	areaRunner                  // api/runner: the runtime of a topology binary
	areaLauncher                // launcher/: the client flows
	areaPlugins                 // plugins/: the go-plugin glue
	areaTracker                 // tracker/
	areaConnectors              // connectors/
	areaComposition             // cli/, cmd/, catalog/: they compose everything
	areaProgram                 // bench/, examples/, test/: programs on top
)

// backendKinds are the folders whose subfolders are backends, each its own
// room.
var backendKinds = map[string]bool{
	"packing": true, "schedulers": true, "statemgr": true, "uploaders": true,
	"checkpoints": true, "statebackends": true,
}

// contracts are the packages of daemons/ that daemons share; a daemon
// reaches another only through them.
var contracts = map[string]bool{
	"daemons/wire":       true, // framing, codecs, the data frame
	"daemons/acking":     true, // the XOR ledger, kept by the stream manager and by local mode
	"daemons/shellapi":   true, // the executor's pid file and the shell's HTTP API, read by the tracker
	"daemons/tmlocation": true, // the topology manager's location, as an executor hands it to a container process
	"daemons/ckptio":     true, // checkpoint files between an instance and its checkpoint manager
}

// fakes are test doubles whose name does not say so.
var fakes = map[string]bool{
	"statemgr/memory": true, // an in-process state manager for tests (its doc.go)
}

// allowance is an import that breaks a rule on purpose.
type allowance struct {
	from, to string
	reason   string
}

// allowed lists the imports that break a rule, each with its reason.
// An entry that no import needs any more is reported, so the list only
// shrinks.
var allowed = []allowance{
	// `egret plugin verify` certifies a third-party plugin binary by
	// running the conformance suites its kind's built-ins pass under go
	// test (DESIGN.md §4); the suites are written against spitest.T so
	// that they also run outside go test. Nothing else in production
	// imports them.
	{"plugins/verify", "core/spi/spitest", "egret plugin verify runs the conformance suites"},
	{"plugins/verify", "packing/packingtest", "egret plugin verify runs the conformance suites"},
	{"plugins/verify", "schedulers/schedulertest", "egret plugin verify runs the conformance suites"},
	{"plugins/verify", "statemgr/statemgrtest", "egret plugin verify runs the conformance suites"},
	{"plugins/verify", "uploaders/uploadertest", "egret plugin verify runs the conformance suites"},
	{"plugins/verify", "checkpoints/checkpointtest", "egret plugin verify runs the conformance suites"},
	{"plugins/verify", "daemons/metricsmgr/metricssinktest", "egret plugin verify runs the conformance suites"},
}

// classify tells the area of the package at path p (relative to the
// module) and its room: the backend or daemon it belongs to.
func classify(p string) (area, string) {
	parts := strings.Split(p, "/")
	first := parts[0]
	switch {
	case first == "core":
		return areaCore, first
	case first == "internal":
		return areaInternal, first
	case p == "conf" || strings.HasPrefix(p, "conf/"):
		return areaConf, first
	case backendKinds[first]:
		if len(parts) == 1 || parts[1] == "internal" || strings.HasSuffix(parts[1], "test") {
			return areaKind, first
		}
		return areaBackend, first + "/" + parts[1]
	case first == "daemons":
		if len(parts) == 1 {
			return areaOther, first
		}
		room := first + "/" + parts[1]
		if contracts[room] {
			return areaContract, room
		}
		return areaDaemon, room
	case first == "api":
		if len(parts) > 1 && parts[1] == "runner" {
			return areaRunner, "api/runner"
		}
		return areaAPI, first
	case first == "launcher":
		return areaLauncher, first
	case first == "plugins":
		return areaPlugins, first
	case first == "tracker":
		return areaTracker, first
	case first == "connectors":
		return areaConnectors, first
	case first == "cli" || first == "cmd" || first == "catalog":
		return areaComposition, first
	case first == "bench" || first == "examples" || first == "test":
		return areaProgram, first
	}
	return areaOther, first
}

// isTestHelper tells test suites, fakes and test helpers: what only tests
// may import.
func isTestHelper(p string) bool {
	if fakes[p] || p == "test" || strings.HasPrefix(p, "test/") {
		return true
	}
	for _, e := range strings.Split(p, "/") {
		if strings.HasSuffix(e, "test") || e == "fakes" {
			return true
		}
	}
	return false
}

// in tells whether a is one of as.
func in(a area, as ...area) bool {
	for _, x := range as {
		if a == x {
			return true
		}
	}
	return false
}

// violation returns the rule that the import of to by from breaks, or "".
func violation(from, to string) string {
	if !isTestHelper(from) && isTestHelper(to) {
		return "production code imports no test suite, fake or test helper"
	}
	if isTestHelper(from) && fakes[to] {
		return "" // a test helper builds on a fake
	}
	fa, fr := classify(from)
	ta, tr := classify(to)
	switch fa {
	case areaCore:
		if !in(ta, areaCore, areaOther, areaInternal) || tr == "multilang" {
			return "core imports only core/, proto/ and internal/"
		}
	case areaInternal, areaConf:
		if !in(ta, areaCore, areaOther, areaInternal) || tr == "multilang" {
			return fr + " imports only core/, proto/ and internal/"
		}
	case areaBackend, areaKind:
		switch {
		case ta == areaBackend && tr != fr:
			return "a backend imports no other backend"
		case ta == areaKind && tr != strings.Split(fr, "/")[0]:
			return "a backend imports nothing of another kind of backend"
		case in(ta, areaDaemon, areaContract, areaLauncher, areaPlugins, areaComposition, areaTracker, areaConnectors, areaRunner):
			return "a backend imports no daemon and none of launcher/, plugins/, cli/, tracker/, connectors/, api/runner"
		}
	case areaDaemon, areaContract:
		switch {
		case in(ta, areaBackend, areaKind):
			return "a daemon imports no backend"
		case ta == areaDaemon && tr != fr && !(fa == areaDaemon && isTestHelper(from)):
			return "daemons import each other only through the contract packages (daemons/wire, daemons/acking, daemons/shellapi, daemons/tmlocation, daemons/ckptio)"
		case in(ta, areaLauncher, areaPlugins, areaComposition, areaTracker, areaConnectors, areaRunner):
			return "a daemon imports none of launcher/, plugins/, cli/, tracker/, connectors/, api/runner"
		}
	case areaAPI:
		if in(ta, areaBackend, areaKind, areaDaemon, areaContract, areaLauncher, areaPlugins, areaComposition, areaConf, areaTracker, areaConnectors, areaRunner) {
			return "api/ imports no backend, daemon, conf, launcher/, plugins/, cli/, tracker/, connectors/ (only api/runner runs daemons)"
		}
	case areaRunner:
		if ta == areaBackend && strings.HasPrefix(tr, "statebackends/") {
			return "" // the tasks it runs keep their keyed state in them
		}
		if in(ta, areaBackend, areaKind, areaLauncher, areaPlugins, areaComposition, areaConf, areaTracker, areaConnectors) {
			return "api/runner runs daemons but imports no backend, conf, launcher/, plugins/, cli/, tracker/, connectors/"
		}
	case areaLauncher:
		if in(ta, areaBackend, areaKind, areaDaemon, areaContract, areaRunner, areaComposition, areaPlugins, areaTracker) {
			return "launcher/ imports no backend, daemon, api/runner, plugins/, tracker/, cli/"
		}
	case areaPlugins:
		if in(ta, areaBackend, areaDaemon, areaContract, areaLauncher, areaComposition, areaTracker, areaRunner) {
			return "plugins/ imports no backend, daemon, launcher/, tracker/, cli/, api/runner"
		}
	case areaTracker:
		if in(ta, areaBackend, areaKind, areaDaemon, areaComposition, areaRunner, areaPlugins) {
			return "tracker/ imports no backend, no daemon (only their contract packages), no plugins/, cli/, api/runner"
		}
	case areaConnectors:
		if in(ta, areaBackend, areaKind, areaDaemon, areaContract, areaLauncher, areaPlugins, areaComposition, areaConf, areaTracker, areaRunner) {
			return "connectors/ are built on api/ only"
		}
	}
	return ""
}
