// Package constnull holds the components of the ConstSpoutNullBolt
// benchmark topology, so the harness and tests can build it too.
package constnull

import (
	"fmt"

	"github.com/egret-stream/egret/api"
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

// Options tune the topology.
type Options struct {
	// Containers is the number of containers (default 2).
	Containers int
	// Spouts and Bolts are the parallelism of each component (default 1).
	Spouts, Bolts int
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
	b := api.NewTopologyBuilder(Name)
	b.SetContainers(o.Containers)
	b.SetSpout(SpoutName, func() api.Spout { return &ConstSpout{} }, o.Spouts)
	b.SetBolt(BoltName, func() api.Bolt { return &NullBolt{} }, o.Bolts).ShuffleGrouping(SpoutName)
	return b, nil
}

// ConstSpout emits (seq int64, "some data") once per NextTuple call,
// without a message id (untracked).
type ConstSpout struct {
	api.BaseSpout
	out api.SpoutCollector
	seq int64
}

// Open implements api.Spout.
func (s *ConstSpout) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	return nil
}

// NextTuple implements api.Spout.
func (s *ConstSpout) NextTuple() {
	s.seq++
	s.out.Emit(api.Values{s.seq, Value}, nil)
}

// DeclareOutputFields implements api.Spout.
func (s *ConstSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("seq", "value") }

// NullBolt counts the tuples it receives and emits nothing.
type NullBolt struct {
	api.BaseBolt
	// Received is the number of tuples executed so far.
	Received int64
}

// Execute implements api.Bolt.
func (b *NullBolt) Execute(api.Tuple) { b.Received++ }

// DeclareOutputFields implements api.Bolt.
func (b *NullBolt) DeclareOutputFields(api.OutputDeclarer) {}
