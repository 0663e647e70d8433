package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/executor"
	"github.com/egret-stream/egret/statemgr/localfs"
)

// ClusterName is the cluster the benchmarks submit to.
const ClusterName = "local"

// LocalCluster is one run's Egret installation: a fresh EGRET_HOME.
type LocalCluster struct {
	egret string
	home  string
	props []string
}

// NewLocalCluster prepares a fresh EGRET_HOME for the local cluster whose
// scheduler runs egret, with props as --config-property overrides.
func NewLocalCluster(egret string, props []string) (*LocalCluster, error) {
	home, err := os.MkdirTemp("", "egret-bench-")
	if err != nil {
		return nil, fmt.Errorf("create EGRET_HOME: %w", err)
	}
	props = append([]string{"egret.scheduler.local.egret.binary=" + egret}, props...)
	return &LocalCluster{egret: egret, home: home, props: props}, nil
}

// Home is the cluster's EGRET_HOME.
func (c *LocalCluster) Home() string { return c.home }

// CLI runs the egret CLI with the cluster's properties.
func (c *LocalCluster) CLI(ctx context.Context, args ...string) (string, error) {
	full := make([]string, 0, 2*len(c.props)+len(args))
	for _, p := range c.props {
		full = append(full, "--config-property", p)
	}
	full = append(full, args...)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.egret, full...)
	cmd.Env = append(os.Environ(), "EGRET_HOME="+c.home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("egret %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// WorkDir is the local scheduler's working directory of a topology.
func (c *LocalCluster) WorkDir(topology string) string {
	return filepath.Join(c.home, "topologies", ClusterName, "root", topology)
}

// SchedulerPID returns the pid of the topology's scheduler service.
func (c *LocalCluster) SchedulerPID(topology string) (int, error) {
	var ep struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(c.WorkDir(topology), "scheduler.json"))
	if err != nil {
		return 0, fmt.Errorf("the scheduler service's endpoint: %w", err)
	}
	if err := json.Unmarshal(b, &ep); err != nil || ep.PID <= 0 {
		return 0, fmt.Errorf("scheduler.json of %s is not usable (%v)", topology, err)
	}
	return ep.PID, nil
}

// Pids returns the processes of a container as its executor recorded
// them in pids.json: process name → pid, plus "executor".
func (c *LocalCluster) Pids(topology string, container int) (map[string]int, error) {
	var pf executor.PidFile
	path := filepath.Join(c.WorkDir(topology), fmt.Sprintf("container-%d", container), "pids.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pids of container %d: %w", container, err)
	}
	if err := json.Unmarshal(b, &pf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]int{"executor": pf.Executor}
	for k, v := range pf.Processes {
		out[k] = v
	}
	return out, nil
}

// containerDirs returns the container working directories by container id.
func (c *LocalCluster) containerDirs(topology string) (map[int]string, error) {
	matches, err := filepath.Glob(filepath.Join(c.WorkDir(topology), "container-*"))
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, m := range matches {
		var id int
		if _, err := fmt.Sscanf(filepath.Base(m), "container-%d", &id); err == nil {
			out[id] = m
		}
	}
	return out, nil
}

// ProcessKinds maps the pid of every engine process to its kind: the
// scheduler service, and for every container the executor and its
// children as recorded in W/pids.json ("tmanager", "stmgr",
// "metricsmgr", "instance:<component>").
func (c *LocalCluster) ProcessKinds(topology string) (map[int]string, error) {
	sched, err := c.SchedulerPID(topology)
	if err != nil {
		return nil, err
	}
	kinds := map[int]string{sched: "scheduler"}
	dirs, err := c.containerDirs(topology)
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		var pf executor.PidFile
		b, err := os.ReadFile(filepath.Join(dir, "pids.json"))
		if err != nil {
			return nil, fmt.Errorf("pids of %s: %w", filepath.Base(dir), err)
		}
		if err := json.Unmarshal(b, &pf); err != nil {
			return nil, fmt.Errorf("pids of %s: %w", filepath.Base(dir), err)
		}
		kinds[pf.Executor] = "executor"
		for name, pid := range pf.Processes {
			kinds[pid] = ProcessKind(name)
		}
	}
	return kinds, nil
}

// ProcessKind turns an executor process name into a kind:
// "instance-<component>-<task>" → "instance:<component>".
func ProcessKind(name string) string {
	if rest, ok := strings.CutPrefix(name, "instance-"); ok {
		if i := strings.LastIndexByte(rest, '-'); i > 0 {
			return "instance:" + rest[:i]
		}
		return "instance"
	}
	return name
}

// packingPlan reads the topology's packing plan from the state manager.
func (c *LocalCluster) packingPlan(ctx context.Context, topology string) (*plan.PackingPlan, error) {
	sm, err := localfs.Open(localfs.Options{Root: filepath.Join(c.home, "state", ClusterName)})
	if err != nil {
		return nil, fmt.Errorf("open the state manager: %w", err)
	}
	defer sm.Close()
	pp, _, err := state.New(sm).PackingPlan(ctx, topology)
	if err != nil {
		return nil, fmt.Errorf("read the packing plan of %s: %w", topology, err)
	}
	return pp, nil
}

// Kill kills the topology and waits until none of its processes is left;
// processes still there after the grace period are killed by pid.
func (c *LocalCluster) Kill(ctx context.Context, topology string, pids []int) error {
	return c.KillWhile(ctx, topology, func() []int {
		var alive []int
		for _, p := range pids {
			if ProcessAlive(p) {
				alive = append(alive, p)
			}
		}
		return alive
	})
}

// KillWhile kills the topology with egret kill and waits until alive
// (the caller's view of the topology's processes still running) is
// empty; those still there after 30s are killed by pid.
func (c *LocalCluster) KillWhile(ctx context.Context, topology string, alive func() []int) error {
	_, kerr := c.CLI(ctx, "kill", ClusterName, topology)
	deadline := time.Now().Add(30 * time.Second)
	for {
		alive := alive()
		if len(alive) == 0 {
			return kerr
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			sort.Ints(alive)
			return errors.Join(kerr, fmt.Errorf("processes %v outlived egret kill by 30s and were killed", alive))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Remove deletes the cluster's EGRET_HOME.
func (c *LocalCluster) Remove() error { return os.RemoveAll(c.home) }

// ProcessAlive reports whether pid runs and is not a zombie.
func ProcessAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// saveWorkDir copies the topology's working directory (logs, metrics
// files, pids; not the extracted packages or sockets) to dst, because
// egret kill removes it.
func (c *LocalCluster) saveWorkDir(topology, dst string) error {
	src := c.WorkDir(topology)
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "package" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}
