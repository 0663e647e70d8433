package harness

import "fmt"

// EngineCPU returns the CPU time (user+system seconds) of every engine
// process of a running topology: the scheduler service and its
// descendants, as /proc shows them now.
func (c *LocalCluster) EngineCPU(topology string) (float64, error) {
	sched, err := c.SchedulerPID(topology)
	if err != nil {
		return 0, err
	}
	procs, err := descendants("/proc", sched)
	if err != nil {
		return 0, err
	}
	if _, ok := procs[sched]; !ok {
		return 0, fmt.Errorf("the scheduler service (pid %d) is gone", sched)
	}
	var total float64
	for _, p := range procs {
		total += p.CPUSeconds
	}
	return total, nil
}

// CounterSeries returns a counter's samples for every task of component,
// from the metrics files of the topology's containers.
func (c *LocalCluster) CounterSeries(topology, component, metric string) (map[int]Series, error) {
	return c.series(topology, Source{Kind: "instance", Component: component}, metric)
}
