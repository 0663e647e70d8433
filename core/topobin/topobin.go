package topobin

// Exit codes of a topology binary.
const (
	ExitOK      = 0
	ExitFailure = 1 // invalid topology or runtime failure
	ExitUsage   = 2 // bad command line (also how Go exits on a panic)
	// ExitPlanChanged: in instance mode, a new physical plan changed the
	// task layout; the executor restarts the instance at once with the
	// new plan.
	ExitPlanChanged = 3
)

// DefineEnv names the environment variable with which egret submit asks a
// topology binary to write its definition to a file and exit.
const DefineEnv = "EGRET_DEFINE_OUT"

// ResourcesDirName is the directory of a topology package that holds the
// files shipped with egret submit --resources.
const ResourcesDirName = "resources"
