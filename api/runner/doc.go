// Package runner is the runtime of a topology binary: what a topology's main
// calls once it has built the topology with package api.
//
//	func main() { runner.Main(buildTopology()) }
//
// Main chooses what the binary does from its command line:
//
//	--local [--duration 30s]   run the whole topology in this process
//	--define FILE              write the topology definition and exit (used by egret submit)
//	--instance --task T ...    run one task in a container (started by the executor)
//	--container-process ...    run a container's stream manager and instances in one
//	                           process (topology.container.mode process-per-container)
//
// and prints a usage message otherwise. `egret submit` runs the binary with
// the environment variable EGRET_DEFINE_OUT=FILE, which means --define FILE
// whatever the other arguments are. A main with flags of its own separates
// them with SplitArgs and passes the rest to MainArgs.
//
// The contract between Egret and a topology binary (exit codes, the
// define-mode variable, the package layout) is core/topobin's: the
// launcher and the executor import that, not this package, which links
// the instance runtime and the stream manager.
package runner
