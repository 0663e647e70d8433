package slurm

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// partitionInfo is what preflight needs of a partition.
type partitionInfo struct {
	name  string
	state string
}

// nodeInfo is the size of a node of the partition.
type nodeInfo struct {
	name     string
	cpus     int64
	memoryMB int64
	usable   bool
}

// partition returns the configured partition, or the cluster's default
// one, and fails with the list of partitions when it does not exist.
func (sc *Scheduler) partition(ctx context.Context) (partitionInfo, error) {
	out, err := sc.r.run(ctx, sc.s.scontrol, "", "show", "partition", "-o")
	if err != nil {
		return partitionInfo{}, sc.fail(ctx, "read the partitions", err)
	}
	var all []string
	var def *partitionInfo
	for _, l := range strings.Split(out, "\n") {
		name := field(l, "PartitionName")
		if name == "" {
			continue
		}
		all = append(all, name)
		p := partitionInfo{name: name, state: field(l, "State")}
		if name == sc.s.partition {
			return check(p)
		}
		if field(l, "Default") == "YES" && def == nil {
			def = &p
		}
	}
	slices.Sort(all)
	if sc.s.partition != "" {
		return partitionInfo{}, fmt.Errorf("slurm scheduler: partition %q does not exist (partitions: %s); set %s", sc.s.partition, strings.Join(all, ", "), KeyPartition)
	}
	if def == nil {
		return partitionInfo{}, fmt.Errorf("slurm scheduler: the cluster has no default partition (partitions: %s); set %s", strings.Join(all, ", "), KeyPartition)
	}
	return check(*def)
}

func check(p partitionInfo) (partitionInfo, error) {
	if p.state != "UP" {
		return p, fmt.Errorf("slurm scheduler: partition %q is %s and starts no jobs; set %s to a partition that is UP", p.name, p.state, KeyPartition)
	}
	return p, nil
}

// nodes returns the nodes of partition p.
func (sc *Scheduler) nodes(ctx context.Context, p string) ([]nodeInfo, error) {
	out, err := sc.r.run(ctx, sc.s.scontrol, "", "show", "nodes", "-o")
	if err != nil {
		return nil, sc.fail(ctx, "read the nodes", err)
	}
	var nodes []nodeInfo
	for _, l := range strings.Split(out, "\n") {
		name := field(l, "NodeName")
		if name == "" || !slices.Contains(strings.Split(field(l, "Partitions"), ","), p) {
			continue
		}
		n := nodeInfo{name: name, cpus: fieldInt(l, "CPUEfctv"), memoryMB: fieldInt(l, "RealMemory")}
		if n.cpus == 0 {
			n.cpus = fieldInt(l, "CPUTot")
		}
		st := field(l, "State")
		n.usable = !strings.Contains(st, "DOWN") && !strings.Contains(st, "DRAIN") && !strings.Contains(st, "FAIL")
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// preflight checks what Slurm would accept and then never start (a job
// that pends forever with reason PartitionConfig): the partition must
// exist and be up, one task must fit a node, and the partition's usable
// nodes must hold every task.
func (sc *Scheduler) preflight(ctx context.Context, b *batch) error {
	p, err := sc.partition(ctx)
	if err != nil {
		return err
	}
	nodes, err := sc.nodes(ctx, p.name)
	if err != nil {
		return err
	}
	var largest taskSize
	var room int64
	usable := 0
	// With --ntasks, --ntasks-per-node is a maximum.
	perNode := int64(min(sc.s.tasksPerNode, b.tasks))
	for _, n := range nodes {
		if !n.usable {
			continue
		}
		usable++
		largest.cpus = max(largest.cpus, int(n.cpus))
		largest.memoryMB = max(largest.memoryMB, n.memoryMB)
		fit := min(n.cpus/int64(b.size.cpus), n.memoryMB/(b.size.memPerCPU()*int64(b.size.cpus)))
		if perNode > 0 {
			room += min(fit, perNode)
		} else {
			room += fit
		}
	}
	switch {
	case usable == 0:
		return fmt.Errorf("slurm scheduler: partition %q has no node up (%d nodes, all down or drained)", p.name, len(nodes))
	case int64(b.size.cpus) > int64(largest.cpus) || b.size.memPerCPU()*int64(b.size.cpus) > largest.memoryMB:
		return fmt.Errorf("slurm scheduler: each container needs %s, more than the largest node of partition %q has (%s); lower the topology's resources", b.size, p.name, largest)
	case room < int64(b.tasks):
		per := ""
		if sc.s.tasksPerNode > 0 {
			per = fmt.Sprintf(", %d per node (%s)", sc.s.tasksPerNode, KeyTasksPerNode)
		}
		return fmt.Errorf("slurm scheduler: the topology needs %d containers of %s%s; the %d usable nodes of partition %q hold only %d", b.tasks, b.size, per, usable, p.name, room)
	}
	return nil
}
