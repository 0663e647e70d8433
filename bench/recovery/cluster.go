package recovery

// The local-cluster plumbing below mirrors the unexported localCluster of
// bench/harness (cluster.go), reduced to what this benchmark needs.

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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/daemons/executor"
)

// clusterName is the cluster the benchmark submits to.
const clusterName = "local"

// cluster is one run's Egret installation: a fresh EGRET_HOME.
type cluster struct {
	egret string
	home  string
	props []string
	// seen are the engine processes observed (pid → start time), so that
	// none outlives the run.
	seen map[int]uint64
}

func newCluster(egret string, props []string) (*cluster, error) {
	home, err := os.MkdirTemp("", "egret-recovery-")
	if err != nil {
		return nil, fmt.Errorf("create EGRET_HOME: %w", err)
	}
	props = append([]string{"egret.scheduler.local.egret.binary=" + egret}, props...)
	return &cluster{egret: egret, home: home, props: props, seen: map[int]uint64{}}, nil
}

// cli runs the egret CLI with the cluster's properties.
func (c *cluster) cli(ctx context.Context, args ...string) (string, error) {
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

// workDir is the local scheduler's working directory of a topology.
func (c *cluster) workDir(topology string) string {
	return filepath.Join(c.home, "topologies", clusterName, "root", topology)
}

// pids returns the processes of a container as its executor recorded
// them (process name → pid, plus "executor"); it also remembers them.
func (c *cluster) pids(topology string, container int) (map[string]int, error) {
	var pf executor.PidFile
	path := filepath.Join(c.workDir(topology), fmt.Sprintf("container-%d", container), "pids.json")
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
	for _, p := range out {
		c.see(p)
	}
	return out, nil
}

// schedulerPID returns the pid of the topology's scheduler service.
func (c *cluster) schedulerPID(topology string) (int, error) {
	var ep struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(c.workDir(topology), "scheduler.json"))
	if err != nil {
		return 0, fmt.Errorf("the scheduler service's endpoint: %w", err)
	}
	if err := json.Unmarshal(b, &ep); err != nil || ep.PID <= 0 {
		return 0, fmt.Errorf("scheduler.json of %s is not usable (%v)", topology, err)
	}
	return ep.PID, nil
}

// remember records the scheduler and every container's processes.
func (c *cluster) remember(topology string, containers int) {
	if p, err := c.schedulerPID(topology); err == nil {
		c.see(p)
	}
	for id := 0; id <= containers; id++ {
		_, _ = c.pids(topology, id)
	}
}

// kill kills the topology and waits until no process seen is left;
// processes still there after 30s are killed by pid.
func (c *cluster) kill(ctx context.Context, topology string) error {
	_, kerr := c.cli(ctx, "kill", clusterName, topology)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var alive []int
		for p, start := range c.seen {
			if s, ok := procStart(p); ok && s == start {
				alive = append(alive, p)
			}
		}
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

// remove deletes the cluster's EGRET_HOME.
func (c *cluster) remove() error { return os.RemoveAll(c.home) }

// see remembers a running process.
func (c *cluster) see(pid int) {
	if start, ok := procStart(pid); ok {
		c.seen[pid] = start
	}
}

// procStart returns the start time (clock ticks after boot) of a running,
// non-zombie process: with the pid, it names the process across pid reuse.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// After the command name in parentheses: state is the first field,
	// starttime the 20th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, err == nil
}
