// Package kafkawordcount holds the components of the Kafka word count
// example: sentences are read from a topic by the Kafka spout, split into
// words, counted in the count bolt's api.State (so counts survive a
// rollback under effectively-once delivery), and every new count is
// written as a "word count" record (key: the word) to another topic by
// the Kafka sink.
package kafkawordcount

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/connectors/kafka"
	"github.com/egret-stream/egret/core/topology"
)

// Options tune the topology.
type Options struct {
	// Brokers is the bootstrap list (host:port,...); stored in the
	// topology config (kafka.brokers), so it reaches every instance.
	Brokers string
	// Input and Output are the topics (default "sentences" and "counts").
	Input, Output string
	// Group is the spout's consumer group outside effectively-once mode
	// (default "kafkawordcount").
	Group string
	// Mode is the delivery mode (default effectively-once).
	Mode topology.DeliveryMode
	// Spouts, Splits, Counts and Sinks are parallelisms (default 1, 2, 2, 1).
	Spouts, Splits, Counts, Sinks int
	// Containers is the number of containers (default 1).
	Containers int
	// CheckpointInterval is topology.stateful.checkpoint.interval (0: the
	// default).
	CheckpointInterval time.Duration
}

// CountsState is the count bolt's state: word → count.
const CountsState = "counts"

// Builder returns the topology.
func Builder(o Options) *api.TopologyBuilder {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Spouts, 1)
	def(&o.Splits, 2)
	def(&o.Counts, 2)
	def(&o.Sinks, 1)
	if o.Input == "" {
		o.Input = "sentences"
	}
	if o.Output == "" {
		o.Output = "counts"
	}
	if o.Group == "" {
		o.Group = "kafkawordcount"
	}
	if o.Mode == "" {
		o.Mode = topology.EffectivelyOnce
	}
	b := api.NewTopologyBuilder("kafkawordcount")
	b.SetDeliveryMode(o.Mode)
	if o.Containers > 0 {
		b.SetContainers(o.Containers)
	}
	if o.CheckpointInterval > 0 {
		b.SetConfig(topology.KeyCheckpointInterval, o.CheckpointInterval.String())
	}
	if o.Brokers != "" {
		b.SetConfig(kafka.KeyBrokers, o.Brokers)
	}
	b.SetConfig(kafka.KeyTopics, o.Input)
	b.SetConfig(kafka.KeyGroup, o.Group)
	b.SetConfig(kafka.KeyTopic, o.Output)
	b.SetSpout("sentences", kafka.NewSpout(kafka.SpoutConfig{}), o.Spouts)
	b.SetBolt("split", func() api.Bolt { return &SplitBolt{} }, o.Splits).ShuffleGrouping("sentences")
	b.SetBolt("count", func() api.Bolt { return &CountBolt{} }, o.Counts).FieldsGrouping("split", "word")
	b.SetBolt("sink", kafka.NewSink(kafka.SinkConfig{}), o.Sinks).ShuffleGrouping("count")
	return b
}

// SplitBolt splits the value of a Kafka record into words.
type SplitBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

// Prepare implements api.Bolt.
func (b *SplitBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out = out
	return nil
}

// Execute implements api.Bolt.
func (b *SplitBolt) Execute(t api.Tuple) {
	for _, w := range strings.Fields(string(t.Bytes(t.FieldIndex(kafka.FieldValue)))) {
		b.out.Emit(api.Values{strings.ToLower(w)}, t)
	}
	b.out.Ack(t)
}

// DeclareOutputFields implements api.Bolt.
func (b *SplitBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word") }

// CountBolt counts words in its state and emits (key: word, value: "word
// count") for every word it receives.
type CountBolt struct {
	api.BaseBolt
	out    api.BoltCollector
	counts *api.State[string, int64]
}

// Prepare implements api.Bolt. Outside effectively-once mode the runtime
// calls no InitState: the counts then live in a state nobody saves.
func (b *CountBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out = out
	return b.InitState(api.NewStates())
}

// InitState implements api.Stateful.
func (b *CountBolt) InitState(states *api.States) error {
	st, err := api.NewState[string, int64](states, CountsState)
	if err != nil {
		return fmt.Errorf("kafkawordcount: %w", err)
	}
	b.counts = st
	return nil
}

// PreSave implements api.Stateful: the counts are always in the state.
func (b *CountBolt) PreSave(int64) error { return nil }

// Execute implements api.Bolt.
func (b *CountBolt) Execute(t api.Tuple) {
	w := t.String(0)
	n, _ := b.counts.Get(w)
	n++
	b.counts.Put(w, n)
	b.out.Emit(api.Values{w, w + " " + strconv.FormatInt(n, 10)}, t)
	b.out.Ack(t)
}

// Count returns the count of w (for tests).
func (b *CountBolt) Count(w string) int64 {
	n, _ := b.counts.Get(w)
	return n
}

// DeclareOutputFields implements api.Bolt: the sink's key and value.
func (b *CountBolt) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare(kafka.FieldKey, kafka.FieldValue)
}
