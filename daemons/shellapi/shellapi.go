package shellapi

import "time"

// PidsFile is the name of the executor's pid file in the container's
// working directory.
const PidsFile = "pids.json"

// PidFile is the content of W/pids.json (PidsFile).
type PidFile struct {
	Executor int `json:"executor"`
	// Processes maps each running child to its pid.
	Processes map[string]int `json:"processes"`
	// Status is every child's state and restart count, sorted by name
	// (what the shell's GET /processes serves).
	Status []ProcessStatus `json:"status"`
}

// Kind is the kind of a child process.
type Kind string

// The kinds of children.
const (
	KindTManager   Kind = "tmanager"
	KindMetricsMgr Kind = "metricsmgr"
	KindStmgr      Kind = "stmgr"
	KindInstance   Kind = "instance"
	KindShell      Kind = "shell"
	KindCkptMgr    Kind = "ckptmgr"
	KindHealthMgr  Kind = "healthmgr"
	// KindContainer is the process of a process-per-container topology
	// (topology.container.mode): the topology binary running the
	// container's stream manager and all its instances.
	KindContainer Kind = "container"
)

// State is where a child is in its life cycle.
type State string

// The states of a child.
const (
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateBackoff  State = "backoff"  // exited; waiting to be restarted
	StateStopping State = "stopping" // SIGTERM sent
	StateStopped  State = "stopped"  // stopped for good
)

// ProcessStatus is a snapshot of one child, for tests, the shell and the
// tracker.
type ProcessStatus struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Task is the task id of an instance (0 otherwise).
	Task int `json:"task,omitempty"`
	// PID is 0 while the process is not running.
	PID      int   `json:"pid"`
	State    State `json:"state"`
	Restarts int   `json:"restarts"`
	// StartedAt is when the current (or last) run started.
	StartedAt time.Time `json:"started_at"`
	// LastExit describes how the last run ended ("" if none has).
	LastExit string   `json:"last_exit,omitempty"`
	Args     []string `json:"args"`
	// OOMKills counts the runs of an instance that ended because it
	// exceeded its memory limit.
	OOMKills int `json:"oom_kills,omitempty"`
}

// Response headers of a log read.
const (
	HeaderFileSize = "X-Egret-File-Size"
	HeaderOffset   = "X-Egret-Offset"
)
