package thermos

// Job is Aurora's MesosJob.
type Job struct {
	Name            string `json:"name"`
	Role            string `json:"role"`
	Environment     string `json:"environment"`
	Cluster         string `json:"cluster"`
	Instances       int    `json:"instances"`
	Service         bool   `json:"service"`
	MaxTaskFailures int    `json:"max_task_failures"`
	Production      bool   `json:"production"`
	Priority        int    `json:"priority"`
	Task            Task   `json:"task"`
}

// Task is a Thermos task: processes run in the order of the constraints.
type Task struct {
	Name        string       `json:"name"`
	Processes   []Process    `json:"processes"`
	Constraints []Constraint `json:"constraints"`
	Resources   Resources    `json:"resources"`
	MaxFailures int          `json:"max_failures"`
	// MaxConcurrency 0 means no limit.
	MaxConcurrency int `json:"max_concurrency"`
	// FinalizationWait is the time in seconds a killed task's processes
	// get between SIGTERM and SIGKILL.
	FinalizationWait int `json:"finalization_wait"`
}

// Process is one command line of a task, run with bash -c in the task's
// sandbox.
type Process struct {
	Name        string `json:"name"`
	Cmdline     string `json:"cmdline"`
	MaxFailures int    `json:"max_failures"`
	Daemon      bool   `json:"daemon"`
	Ephemeral   bool   `json:"ephemeral"`
	MinDuration int    `json:"min_duration"`
	Final       bool   `json:"final"`
}

// Resources of a task: cpu in cores, ram and disk in bytes.
type Resources struct {
	CPU  float64 `json:"cpu"`
	RAM  int64   `json:"ram"`
	Disk int64   `json:"disk"`
	GPU  int     `json:"gpu"`
}

// Constraint orders processes: each starts once the one before it ended
// successfully.
type Constraint struct {
	Order []string `json:"order"`
}
