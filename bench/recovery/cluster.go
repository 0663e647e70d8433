package recovery

import (
	"context"

	"github.com/egret-stream/egret/bench/harness"
)

// cluster is one run's Egret installation (a fresh EGRET_HOME) that
// remembers every engine process it saw, so that none outlives the run
// even when the executor restarted it under a new pid.
type cluster struct {
	*harness.LocalCluster
	// seen are the engine processes observed: pid → start time.
	seen map[int]uint64
}

func newCluster(egret string, props []string) (*cluster, error) {
	lc, err := harness.NewLocalCluster(egret, props)
	if err != nil {
		return nil, err
	}
	return &cluster{LocalCluster: lc, seen: map[int]uint64{}}, nil
}

// pids returns the processes of a container (process name → pid, plus
// "executor") and remembers them.
func (c *cluster) pids(topology string, container int) (map[string]int, error) {
	out, err := c.Pids(topology, container)
	for _, p := range out {
		c.see(p)
	}
	return out, err
}

// remember records the scheduler and every container's processes.
func (c *cluster) remember(topology string, containers int) {
	if p, err := c.SchedulerPID(topology); err == nil {
		c.see(p)
	}
	for id := 0; id <= containers; id++ {
		_, _ = c.pids(topology, id)
	}
}

// kill kills the topology and waits until no process seen is left;
// processes still there after 30s are killed by pid.
func (c *cluster) kill(ctx context.Context, topology string) error {
	return c.KillWhile(ctx, topology, func() []int {
		var alive []int
		for p, start := range c.seen {
			if s, ok := harness.ProcStart(p); ok && s == start {
				alive = append(alive, p)
			}
		}
		return alive
	})
}

// see remembers a running process.
func (c *cluster) see(pid int) {
	if start, ok := harness.ProcStart(pid); ok {
		c.seen[pid] = start
	}
}
