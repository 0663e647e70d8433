package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/executor"
	"github.com/egret-stream/egret/statemgr/localfs"
	"github.com/egret-stream/egret/statemgr/zookeeper"
)

// store opens a session on the cluster's state manager: localfs under
// EGRET_HOME for local, the ZooKeeper server given in the properties for
// localzk.
func (c *cluster) store() *state.Store {
	c.t.Helper()
	sm := c.stateManager()
	c.t.Cleanup(func() { sm.Close() })
	return state.New(sm)
}

// stateManager opens a session on the cluster's state manager; the caller
// closes it.
func (c *cluster) stateManager() spi.StateManager {
	c.t.Helper()
	var sm spi.StateManager
	var err error
	if c.zk != "" {
		sm, err = zookeeper.Open(context.Background(), zookeeper.Options{Servers: []string{c.zk}, Root: "/egret", SessionTimeout: 5 * time.Second})
	} else {
		sm, err = localfs.Open(localfs.Options{Root: filepath.Join(c.home, "state", c.name)})
	}
	if err != nil {
		c.t.Fatalf("open the state manager: %v", err)
	}
	return sm
}

// workDir is the local scheduler's working directory of a topology.
func (c *cluster) workDir(topology string) string {
	return filepath.Join(c.home, "topologies", c.name, "root", topology)
}

// pids returns the processes of one container as the executor recorded
// them: process name → pid, plus "executor". The pid file is in the
// container's working directory: below the local scheduler's directory of
// the topology, or wherever the cluster's resource manager runs the
// container's executor (executorWorkDir), or in a pod (podProcs.pids).
func (c *cluster) pids(topology string, container int) map[string]int {
	if c.pods != nil {
		return c.pods.pids(topology, container)
	}
	var pf executor.PidFile
	wd := filepath.Join(c.workDir(topology), fmt.Sprintf("container-%d", container))
	if len(c.roots) > 0 || c.leftovers != nil {
		wd = c.executorWorkDir(topology, container)
	}
	b, err := os.ReadFile(filepath.Join(wd, "pids.json"))
	if err != nil || json.Unmarshal(b, &pf) != nil {
		return nil
	}
	out := map[string]int{"executor": pf.Executor}
	for k, v := range pf.Processes {
		out[k] = v
	}
	return out
}

// stats reads the topology manager's /stats: component → summed metrics.
func (c *cluster) stats(topology string) (map[string]map[string]float64, error) {
	var s struct {
		Components map[string]struct {
			Sums map[string]float64 `json:"sums"`
		} `json:"components"`
	}
	if err := c.tmanagerGet(c.store(), topology, "stats", &s); err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	for name, comp := range s.Components {
		out[name] = comp.Sums
	}
	return out, nil
}

// tmanagerGet reads path of the HTTP API of topology's manager, found in
// the state manager (reached at its pod's address in pods), into v.
func (c *cluster) tmanagerGet(st *state.Store, topology, path string, v any) error {
	loc, err := st.TManagerLocation(context.Background(), topology)
	if err != nil {
		return err
	}
	host := loc.GetHost()
	if c.pods != nil {
		host = c.pods.addr(host)
	}
	return getJSON(fmt.Sprintf("http://%s/%s", net.JoinHostPort(host, strconv.Itoa(int(loc.GetHttpPort()))), path), v)
}

// metric returns one summed metric of a component, or -1 if unknown yet.
func (c *cluster) metric(topology, component, name string) float64 {
	s, err := c.stats(topology)
	if err != nil {
		return -1
	}
	v, ok := s[component][name]
	if !ok {
		return -1
	}
	return v
}

// waitGone waits until none of this cluster's processes is left.
func (c *cluster) waitGone(t *testing.T) {
	t.Helper()
	waitFor(t, "no process left behind", 2*time.Minute, func() bool { return len(c.processes()) == 0 })
}

// executorWorkDir finds the running executor of a container of topology
// among this cluster's processes and returns its working directory
// (--work-dir, else its current directory); "" when none runs.
func (c *cluster) executorWorkDir(topology string, container int) string {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !isEgretProcess(raw) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) < 2 || args[1] != "executor" || flagValue(args, "--topology") != topology || flagValue(args, "--container") != strconv.Itoa(container) {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if !c.under(raw, cwd, append([]string{c.home}, c.roots...)) {
			continue
		}
		wd := flagValue(args, "--work-dir")
		if wd == "" {
			return cwd
		}
		if !filepath.IsAbs(wd) {
			wd = filepath.Join(cwd, wd)
		}
		return wd
	}
	return ""
}

// flagValue returns the value of flag in args (--flag v or --flag=v).
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}
