// Package constnull holds the components of the ConstSpoutNullBolt
// benchmark topology, so the harness and tests can build it too.
package constnull

import (
	"fmt"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// Name is the topology's name.
const Name = "constnull"

// Component names.
const (
	SpoutName = "const"
	BoltName  = "null"
)

// Value is the constant string every tuple carries (storm-perf's).
const Value = "some data"

// AckedCounter is the spout's user counter of acked tuples (published as
// "user.acked"): the root tuples fully processed, in at-least-once mode.
const AckedCounter = "acked"

// Options tune the topology.
type Options struct {
	// Containers is the number of containers (default 2).
	Containers int
	// Spouts and Bolts are the parallelism of each component (default 1).
	Spouts, Bolts int
	// Acking makes the topology at-least-once: the spout emits every tuple
	// with a message id and the bolt acks it. MaxPending is then
	// topology.max.spout.pending (0: the runtime's default).
	Acking     bool
	MaxPending int
	// ContainerMode, when set, is topology.container.mode.
	ContainerMode string
}

// Builder returns the topology; zero options take their defaults, negative
// ones are an error.
func Builder(o Options) (*api.TopologyBuilder, error) {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"containers", &o.Containers, 2}, {"spouts", &o.Spouts, 1}, {"bolts", &o.Bolts, 1}} {
		if *f.v < 0 {
			return nil, fmt.Errorf("--%s must be at least 1, got %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.MaxPending < 0 {
		return nil, fmt.Errorf("--max-pending must be 0 (the runtime's default) or more, got %d", o.MaxPending)
	}
	b := api.NewTopologyBuilder(Name)
	b.SetContainers(o.Containers)
	if o.ContainerMode != "" {
		b.SetContainerMode(topology.ContainerMode(o.ContainerMode))
	}
	if o.Acking {
		b.SetDeliveryMode(topology.AtLeastOnce)
		if o.MaxPending > 0 {
			b.SetMaxSpoutPending(o.MaxPending)
		}
	}
	b.SetSpout(SpoutName, func() api.Spout { return &ConstSpout{} }, o.Spouts)
	b.SetBolt(BoltName, func() api.Bolt { return &NullBolt{} }, o.Bolts).ShuffleGrouping(SpoutName)
	return b, nil
}

// AtLeastOnce reports whether the running topology is at-least-once. The
// components read it from the topology config in Open and Prepare, not from
// the builder's options: in a cluster an instance process builds the
// topology without the submitter's flags and takes its config from the
// physical plan.
func AtLeastOnce(ctx api.Context) bool {
	return ctx.Config(topology.KeyDeliveryMode) == string(topology.AtLeastOnce)
}

// ConstSpout emits (seq int64, "some data") once per NextTuple call; in
// at-least-once mode the sequence number is the message id (tracked),
// else the tuple is untracked.
type ConstSpout struct {
	api.BaseSpout
	// Acking is set by Open from the topology's delivery mode.
	Acking bool
	out    api.SpoutCollector
	seq    int64
	acked  *api.Counter
	// vals is reused for every emit (the collector keeps no slice).
	vals api.Values
}

// Open implements api.Spout.
func (s *ConstSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out, s.vals = out, make(api.Values, 2)
	s.acked = ctx.Counter(AckedCounter)
	s.Acking = AtLeastOnce(ctx)
	return nil
}

// NextTuple implements api.Spout.
func (s *ConstSpout) NextTuple() {
	s.seq++
	s.vals[0], s.vals[1] = s.seq, Value
	if s.Acking {
		s.out.Emit(s.vals, s.vals[0]) // one boxed seq for both
		return
	}
	s.out.Emit(s.vals, nil)
}

// Ack implements api.Spout: it counts the acked tuple.
func (s *ConstSpout) Ack(any) { s.acked.Add(1) }

// DeclareOutputFields implements api.Spout.
func (s *ConstSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("seq", "value") }

// NullBolt counts the tuples it receives, acks them in at-least-once
// mode, and emits nothing.
type NullBolt struct {
	api.BaseBolt
	// Acking is set by Prepare from the topology's delivery mode.
	Acking bool
	// Received is the number of tuples executed so far.
	Received int64
	out      api.BoltCollector
}

// Prepare implements api.Bolt.
func (b *NullBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.Acking = AtLeastOnce(ctx)
	return nil
}

// Execute implements api.Bolt.
func (b *NullBolt) Execute(t api.Tuple) {
	b.Received++
	if b.Acking {
		b.out.Ack(t)
	}
}

// ReuseTuples implements api.TupleReuser: Execute keeps no tuple.
func (b *NullBolt) ReuseTuples() bool { return true }

// DeclareOutputFields implements api.Bolt.
func (b *NullBolt) DeclareOutputFields(api.OutputDeclarer) {}
