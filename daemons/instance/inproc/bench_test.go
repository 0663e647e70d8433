package inproc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// benchSpout emits n tuples, each with a msgID, then nothing.
type benchSpout struct {
	api.BaseSpout
	n, sent int
	acked   *atomic.Int64
	out     api.SpoutCollector
}

func (s *benchSpout) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }
func (s *benchSpout) NextTuple() {
	if s.sent < s.n {
		s.out.Emit(api.Values{s.sent}, s.sent)
		s.sent++
	}
}
func (s *benchSpout) Ack(any)                                  { s.acked.Add(1) }
func (s *benchSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

// benchBolt acks every input and counts it.
type benchBolt struct {
	api.BaseBolt
	done *atomic.Int64
	out  api.BoltCollector
}

func (b *benchBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *benchBolt) Execute(t api.Tuple)                                { b.out.Ack(t); b.done.Add(1) }
func (b *benchBolt) DeclareOutputFields(api.OutputDeclarer)             {}

// BenchmarkSpoutToBolt measures tuples per second from one spout to one
// bolt that acks, per delivery mode: at-most-once must not pay for acking.
func BenchmarkSpoutToBolt(b *testing.B) {
	for _, mode := range []topology.DeliveryMode{topology.AtMostOnce, topology.AtLeastOnce} {
		b.Run(string(mode), func(b *testing.B) {
			var done, acked atomic.Int64
			tb := api.NewTopologyBuilder("bench")
			tb.SetDeliveryMode(mode)
			tb.SetSpout("src", func() api.Spout { return &benchSpout{n: b.N, acked: &acked} }, 1).SetMaxSpoutPending(10000)
			tb.SetBolt("sink", func() api.Bolt { return &benchBolt{done: &done} }, 1).ShuffleGrouping("src")
			topo, err := tb.Build()
			if err != nil {
				b.Fatal(err)
			}
			r, err := New(topo, Options{DrainTimeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			b.ResetTimer()
			finished := make(chan struct{})
			go func() { defer close(finished); _, _ = r.Run(ctx) }()
			for done.Load() < int64(b.N) || (mode == topology.AtLeastOnce && acked.Load() < int64(b.N)) {
				time.Sleep(100 * time.Microsecond) // polling interval
			}
			b.StopTimer()
			cancel()
			<-finished
		})
	}
}
