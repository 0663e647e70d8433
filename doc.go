// Package egret is the entry point of a topology binary. A topology's main
// builds the topology with package api and calls Run:
//
//	func main() { egret.Run(buildTopology()) }
//
// Run chooses what the binary does from its command line:
//
//	--local [--duration 30s]   run the whole topology in this process
//	--define FILE              write the topology definition and exit (used by egret submit)
//	--instance --task T ...    run one task in a container (started by the executor)
//
// and prints a usage message otherwise. `egret submit` runs the binary with
// the environment variable EGRET_DEFINE_OUT=FILE, which means --define FILE
// whatever the other arguments are.
package egret
