package backpressure

// Minimal copies of unexported bench/harness helpers (harness is owned
// elsewhere and exports none of these): the local cluster's CLI runner
// (harness.localCluster.cli, newLocalCluster, workDir), the per-process
// kinds from pids.json (processKinds, processKind, without the scheduler
// lookup's error path), VmRSS parsing (parseStatus, VmRSS only) and
// processAlive.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/daemons/executor"
)

const clusterName = "local"

type localCluster struct {
	egret string
	home  string
	props []string
}

func newLocalCluster(egret string, props []string) (*localCluster, error) {
	home, err := os.MkdirTemp("", "egret-t4-")
	if err != nil {
		return nil, fmt.Errorf("create EGRET_HOME: %w", err)
	}
	props = append([]string{"egret.scheduler.local.egret.binary=" + egret}, props...)
	return &localCluster{egret: egret, home: home, props: props}, nil
}

func (c *localCluster) cli(ctx context.Context, args ...string) (string, error) {
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

func (c *localCluster) workDir(topology string) string {
	return filepath.Join(c.home, "topologies", clusterName, "root", topology)
}

// processKinds maps the pid of every engine process to its kind:
// "scheduler", "executor", "tmanager", "stmgr", "metricsmgr",
// "instance:<component>".
func (c *localCluster) processKinds(topology string) map[int]string {
	kinds := map[int]string{}
	var ep struct {
		PID int `json:"pid"`
	}
	if b, err := os.ReadFile(filepath.Join(c.workDir(topology), "scheduler.json")); err == nil && json.Unmarshal(b, &ep) == nil && ep.PID > 0 {
		kinds[ep.PID] = "scheduler"
	}
	dirs, _ := filepath.Glob(filepath.Join(c.workDir(topology), "container-*"))
	for _, dir := range dirs {
		var pf executor.PidFile
		b, err := os.ReadFile(filepath.Join(dir, "pids.json"))
		if err != nil || json.Unmarshal(b, &pf) != nil {
			continue
		}
		kinds[pf.Executor] = "executor"
		for name, pid := range pf.Processes {
			kinds[pid] = processKind(name)
		}
	}
	return kinds
}

// processKind turns "instance-<component>-<task>" into
// "instance:<component>"; other names are kinds already.
func processKind(name string) string {
	if rest, ok := strings.CutPrefix(name, "instance-"); ok {
		if i := strings.LastIndexByte(rest, '-'); i > 0 {
			return "instance:" + rest[:i]
		}
		return "instance"
	}
	return name
}

// vmRSS reads VmRSS of pid, in bytes.
func vmRSS(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			if f := strings.Fields(rest); len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err == nil
			}
		}
	}
	return 0, false
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// kill kills the topology and waits until none of pids is left; the
// survivors after 30s are killed by pid.
func (c *localCluster) kill(ctx context.Context, topology string, pids []int) error {
	_, kerr := c.cli(ctx, "kill", clusterName, topology)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var alive []int
		for _, p := range pids {
			if processAlive(p) {
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
			return fmt.Errorf("processes %v outlived egret kill by 30s and were killed (kill: %v)", alive, kerr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
