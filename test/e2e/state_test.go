package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// them: process name → pid, plus "executor".
func (c *cluster) pids(topology string, container int) map[string]int {
	var pf executor.PidFile
	b, err := os.ReadFile(filepath.Join(c.workDir(topology), fmt.Sprintf("container-%d", container), "pids.json"))
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
	loc, err := c.store().TManagerLocation(context.Background(), topology)
	if err != nil {
		return nil, err
	}
	var s struct {
		Components map[string]struct {
			Sums map[string]float64 `json:"sums"`
		} `json:"components"`
	}
	if err := getJSON(fmt.Sprintf("http://%s:%d/stats", loc.GetHost(), loc.GetHttpPort()), &s); err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	for name, comp := range s.Components {
		out[name] = comp.Sums
	}
	return out, nil
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
