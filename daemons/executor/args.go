package executor

import "strconv"

// Params are what the command lines of a container's children are built
// from.
type Params struct {
	// Egret is the egret binary the daemons run as sub-commands of.
	Egret        string
	TopologyName string
	TopologyID   string
	Container    int
	// StmgrPort is the stream manager's TCP port (0: any).
	StmgrPort int
	Paths     Paths
}

// The argument vectors below are the whole contract between the executor
// and the cobra commands of cli/: every flag is passed explicitly (daemons
// derive no path themselves). Each returns exec.Cmd-style args: element 0 is
// the program.

// TManagerArgs is the topology manager's command line (container 0):
//
//	egret tmanager --topology N --topology-id ID --metrics-socket M --config F
func TManagerArgs(p Params) []string {
	return []string{p.Egret, "tmanager",
		"--topology", p.TopologyName,
		"--topology-id", p.TopologyID,
		"--metrics-socket", p.Paths.MetricsSocket,
		"--config", p.Paths.ConfigFile,
	}
}

// HealthMgrArgs is the health manager's command line (container 0 of a
// topology that sets topology.healthmgr.enabled):
//
//	egret healthmgr --topology N --topology-id ID --metrics-socket M --config F
func HealthMgrArgs(p Params) []string {
	return []string{p.Egret, "healthmgr",
		"--topology", p.TopologyName,
		"--topology-id", p.TopologyID,
		"--metrics-socket", p.Paths.MetricsSocket,
		"--config", p.Paths.ConfigFile,
	}
}

// MetricsMgrArgs is the metrics manager's command line (every container):
//
//	egret metricsmgr --topology N --container C --socket M --metrics-file W/metrics.jsonl --config F
func MetricsMgrArgs(p Params) []string {
	return []string{p.Egret, "metricsmgr",
		"--topology", p.TopologyName,
		"--container", strconv.Itoa(p.Container),
		"--socket", p.Paths.MetricsSocket,
		"--metrics-file", p.Paths.MetricsFile,
		"--config", p.Paths.ConfigFile,
	}
}

// StmgrArgs is the stream manager's command line (containers 1..N):
//
//	egret stmgr --topology N --topology-id ID --container C --socket S --port P --metrics-socket M --config F [--ckptmgr-socket K]
//
// ckpt adds the checkpoint manager's socket (effectively-once).
func StmgrArgs(p Params, ckpt bool) []string {
	args := []string{p.Egret, "stmgr",
		"--topology", p.TopologyName,
		"--topology-id", p.TopologyID,
		"--container", strconv.Itoa(p.Container),
		"--socket", p.Paths.StmgrSocket,
		"--port", strconv.Itoa(p.StmgrPort),
		"--metrics-socket", p.Paths.MetricsSocket,
		"--config", p.Paths.ConfigFile,
	}
	if ckpt {
		args = append(args, "--ckptmgr-socket", p.Paths.CkptMgrSocket)
	}
	return args
}

// CkptMgrArgs is the checkpoint manager's command line (containers 1..N
// of effectively-once topologies):
//
//	egret ckptmgr --topology N --container C --socket K --metrics-socket M --config F
func CkptMgrArgs(p Params) []string {
	return []string{p.Egret, "ckptmgr",
		"--topology", p.TopologyName,
		"--container", strconv.Itoa(p.Container),
		"--socket", p.Paths.CkptMgrSocket,
		"--metrics-socket", p.Paths.MetricsSocket,
		"--config", p.Paths.ConfigFile,
	}
}

// InstanceArgs is the command line of the instance of task (containers
// 1..N), the topology binary in instance mode:
//
//	W/package/topology --instance --task T --container C --topology-id ID --stmgr-socket S --metrics-socket M [--ckptmgr-socket K]
//
// An effectively-once instance gets the checkpoint manager's socket: it
// streams its checkpoints' files there (daemons/ckptio).
func InstanceArgs(p Params, task int, ckpt bool) []string {
	args := []string{p.Paths.TopologyBinary, "--instance",
		"--task", strconv.Itoa(task),
		"--container", strconv.Itoa(p.Container),
		"--topology-id", p.TopologyID,
		"--stmgr-socket", p.Paths.StmgrSocket,
		"--metrics-socket", p.Paths.MetricsSocket,
		"--config", p.Paths.ConfigFile,
	}
	if ckpt {
		args = append(args, "--ckptmgr-socket", p.Paths.CkptMgrSocket)
	}
	return args
}

// ShellArgs is the shell's command line (every container):
//
//	egret shell --topology N --topology-id ID --container C --work-dir W --metrics-socket M --config F
func ShellArgs(p Params) []string {
	return []string{p.Egret, "shell",
		"--topology", p.TopologyName,
		"--topology-id", p.TopologyID,
		"--container", strconv.Itoa(p.Container),
		"--work-dir", p.Paths.WorkDir,
		"--metrics-socket", p.Paths.MetricsSocket,
		"--config", p.Paths.ConfigFile,
	}
}
