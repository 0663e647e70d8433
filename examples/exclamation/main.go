// Command exclamation is the Storm exclamation example: a spout emits words,
// two chained bolts append "!!!" to them, and the last bolt counts what it
// received in the user counter "received".
//
//	go run ./examples/exclamation --local --duration 5s
package main

import (
	"math/rand/v2"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
)

var words = []string{"nathan", "mike", "jackson", "golda", "bertels"}

// WordSpout emits random words.
type WordSpout struct {
	api.BaseSpout
	out api.SpoutCollector
}

// Open implements api.Spout.
func (s *WordSpout) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	return nil
}

// NextTuple implements api.Spout.
func (s *WordSpout) NextTuple() { s.out.Emit(api.Values{words[rand.IntN(len(words))]}, nil) }

// DeclareOutputFields implements api.Spout.
func (s *WordSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word") }

// ExclamationBolt appends "!!!" to each word; with Last set it only counts.
type ExclamationBolt struct {
	api.BaseBolt
	Last     bool
	out      api.BoltCollector
	received *api.Counter
}

// Prepare implements api.Bolt.
func (b *ExclamationBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.received = ctx.Counter("received")
	return nil
}

// Execute implements api.Bolt.
func (b *ExclamationBolt) Execute(t api.Tuple) {
	b.received.Inc()
	if !b.Last {
		b.out.Emit(api.Values{t.String(0) + "!!!"}, t)
	}
	b.out.Ack(t)
}

// DeclareOutputFields implements api.Bolt.
func (b *ExclamationBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word") }

func main() {
	b := api.NewTopologyBuilder("exclamation")
	b.SetSpout("word", func() api.Spout { return &WordSpout{} }, 1)
	b.SetBolt("exclaim1", func() api.Bolt { return &ExclamationBolt{} }, 3).ShuffleGrouping("word")
	b.SetBolt("exclaim2", func() api.Bolt { return &ExclamationBolt{Last: true} }, 2).ShuffleGrouping("exclaim1")
	runner.Main(b)
}
