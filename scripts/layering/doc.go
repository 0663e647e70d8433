// Command layering checks the import graph of the module against the
// layering of DESIGN.md §3 and exits 1 with one line per violation. `make
// lint` runs it from the repository root:
//
//	go run ./scripts/layering
//
// It reads the graph with `go list -json ./...` (the imports of the
// non-test files: a _test.go file may import what it needs) and checks:
//
//   - core/ imports only core/, proto/ and internal/;
//   - internal/ helpers import only core/, proto/ and internal/;
//   - conf imports only core/, proto/ and internal/;
//   - a backend (a folder of packing/, schedulers/, statemgr/, uploaders/,
//     checkpoints/, statebackends/) imports no other backend, no daemon,
//     and none of launcher/, plugins/, cli/, tracker/, connectors/ or the
//     topology-binary runtime api/runner;
//   - a daemon (a folder of daemons/) imports no backend, no other daemon
//     except the contract packages they share (daemons/wire,
//     daemons/acking, daemons/shellapi, daemons/tmlocation, daemons/ckptio),
//     and none of launcher/, plugins/,
//     cli/, tracker/ or connectors/; a daemon's test harness (stmgrtest)
//     may start other daemons;
//   - api/ imports no backend, daemon, launcher/, plugins/, cli/, conf or
//     tracker/, except that api/runner, the runtime of a topology binary,
//     runs the daemons it is made of and links the state backends
//     (statebackends/) its tasks keep their keyed state in;
//   - launcher/ imports no backend, no daemon and not api/runner;
//   - plugins/ (the go-plugin glue) imports no backend and no daemon;
//   - tracker/ imports no backend and no daemon except the contract
//     packages;
//   - connectors/ are built on api/ only: no backend, daemon, launcher/,
//     plugins/, conf or tracker/;
//   - production code imports no test suite, fake or test helper (a
//     package whose name ends in "test", a fakes package, the memory
//     state manager, anything under test/).
//
// cli/, cmd/ and catalog/ (the built-in backends) compose everything and bench/ and examples/ are programs
// on top; only the last rule applies to them. A rule broken on purpose is
// listed, with its reason, in allowed (rules.go).
package main
