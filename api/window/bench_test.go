package window

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/statebackends/heap"
	"github.com/egret-stream/egret/statebackends/pebble"
)

// The benchmarks drive a window bolt directly (no runtime): a windowed
// word count over 1000 words at 10 000 events per event-time second, with
// a watermark every 100 events trailing by 100 ms, next to a plain count
// of the same stream into a map (what the word count example's count
// bolt does). They report events per CPU-second (one goroutine, so
// wall time is CPU time), the p99 from the watermark that closes a
// window to each of its results being emitted, and, separately, the heap
// per open window × key.

// discard is a collector that keeps nothing; it stamps the emission time
// of final results for the close latency.
type discard struct {
	closeStart time.Time
	lat        []time.Duration
	results    int
}

func (c *discard) Emit(v api.Values, _ ...api.Tuple) {
	c.results++
	if !c.closeStart.IsZero() && len(c.lat) < 1<<20 {
		c.lat = append(c.lat, time.Since(c.closeStart))
	}
}
func (c *discard) EmitStream(string, api.Values, ...api.Tuple)      {}
func (c *discard) EmitDirect(int, string, api.Values, ...api.Tuple) {}
func (c *discard) Ack(api.Tuple)                                    {}
func (c *discard) Fail(api.Tuple)                                   {}
func (c *discard) ReportError(error)                                {}

var benchWords = func() []string {
	w := make([]string, 1000)
	for i := range w {
		w[i] = fmt.Sprintf("word%04d", i)
	}
	return w
}()

func BenchmarkWindowedWordCount(b *testing.B) {
	cases := []struct {
		name string
		a    Assigner
		g    Guarantee
	}{
		{"tumbling-10s", Tumbling(10 * time.Second), AckOnAdd},
		{"tumbling-10s-anchored", Tumbling(10 * time.Second), AnchorResults},
		{"sliding-10s-1s", Sliding(10*time.Second, time.Second), AckOnAdd},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			clk := newClock()
			spec := Spec[string, struct{}, int64, int64]{
				Assigner:   c.a,
				Key:        func(t api.Tuple) string { return t.String(0) },
				Value:      func(api.Tuple) struct{} { return struct{}{} },
				Timestamp:  func(t api.Tuple) time.Time { return t.Time(1) },
				Aggregate:  Count[struct{}](),
				Guarantee:  c.g,
				MaxAnchors: 1 << 22,
				Now:        clk.now,
			}
			bolt, err := NewBolt(spec)
			if err != nil {
				b.Fatal(err)
			}
			out := &discard{}
			if err := bolt.Prepare(newFakeContext(srcInputs, map[string][]int{"src": {1}}), out); err != nil {
				b.Fatal(err)
			}
			// A ring of tuples, reused when inputs are not held.
			ring := make([]api.Tuple, 4096)
			for i := range ring {
				ring[i] = api.NewTuple("src", "default", 1, []string{"word", "ts"}, benchWords[i%len(benchWords)], time.Time{})
			}
			fields := []string{"word", "ts"}
			ts := time.UnixMilli(1_700_000_000_000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%10 == 0 {
					ts = ts.Add(time.Millisecond)
				}
				var t api.Tuple
				if c.g == AnchorResults {
					t = api.NewTuple("src", "default", 1, fields, benchWords[i%len(benchWords)], ts)
				} else {
					bt := ring[i%len(ring)].(*api.BasicTuple)
					bt.Vals[1] = ts
					t = bt
				}
				bolt.Execute(t)
				if i%100 == 99 {
					out.closeStart = time.Now()
					bolt.Execute(watermarkTuple(1, ts.UnixMilli()-100))
					out.closeStart = time.Time{}
				}
			}
			b.StopTimer()
			if s := b.Elapsed().Seconds(); s > 0 {
				b.ReportMetric(float64(b.N)/s, "events/cpu-s")
			}
			if len(out.lat) > 0 {
				slices.Sort(out.lat)
				b.ReportMetric(float64(out.lat[len(out.lat)*99/100].Microseconds()), "p99-close-µs")
			}
			b.ReportMetric(float64(bolt.Stats().Open), "open-windows")
		})
	}
	b.Run("plain-count", func(b *testing.B) {
		counts := map[string]int64{}
		ring := make([]api.Tuple, 4096)
		for i := range ring {
			ring[i] = api.NewTuple("src", "default", 1, []string{"word"}, benchWords[i%len(benchWords)])
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			counts[ring[i%len(ring)].String(0)]++
		}
		b.StopTimer()
		if s := b.Elapsed().Seconds(); s > 0 {
			b.ReportMetric(float64(b.N)/s, "events/cpu-s")
		}
	})
}

// BenchmarkMemoryPerOpenWindow opens 10 windows for each of 10 000 keys
// (100 000 windows × keys, one accumulator each) and reports the heap
// they take per open window, with and without held anchors.
func BenchmarkMemoryPerOpenWindow(b *testing.B) {
	for _, g := range []Guarantee{AckOnAdd, AnchorResults} {
		name := map[Guarantee]string{AckOnAdd: "ack-on-add", AnchorResults: "anchored-1-input-per-window"}[g]
		b.Run(name, func(b *testing.B) {
			keys := make([]string, 10_000)
			for i := range keys {
				keys[i] = fmt.Sprintf("key%05d", i)
			}
			var perWindow float64
			for n := 0; n < b.N; n++ {
				clk := newClock()
				bolt, err := NewBolt(Spec[string, struct{}, int64, int64]{
					Assigner:   Tumbling(time.Second),
					Key:        func(t api.Tuple) string { return t.String(0) },
					Value:      func(api.Tuple) struct{} { return struct{}{} },
					Timestamp:  func(t api.Tuple) time.Time { return t.Time(1) },
					Aggregate:  Count[struct{}](),
					Guarantee:  g,
					MaxAnchors: 1 << 22,
					Now:        clk.now,
				})
				if err != nil {
					b.Fatal(err)
				}
				if err := bolt.Prepare(newFakeContext(srcInputs, map[string][]int{"src": {1}}), &discard{}); err != nil {
					b.Fatal(err)
				}
				var tuples []api.Tuple
				for w := 0; w < 10; w++ {
					for _, k := range keys {
						tuples = append(tuples, api.NewTuple("src", "default", 1, []string{"word", "ts"}, k, time.UnixMilli(int64(w)*1000)))
					}
				}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for _, t := range tuples {
					bolt.Execute(t)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				open := bolt.Stats().Open
				if open != 100_000 {
					b.Fatalf("%d windows open, want 100000", open)
				}
				perWindow = float64(after.HeapAlloc-before.HeapAlloc) / float64(open)
				runtime.KeepAlive(tuples)
			}
			b.ReportMetric(perWindow, "B/open-window")
		})
	}
}

// BenchmarkCheckpointedWordCount is the 10 s tumbling word count under
// effectively-once, its keys in operator state or in keyed state on the
// heap and pebble backends, with a checkpoint (PreSave) every 10 000
// events: what tracking, saving and (in keyed state) reloading the keys
// cost per event, against the same bolt without checkpoints.
func BenchmarkCheckpointedWordCount(b *testing.B) {
	for _, backend := range []string{"none", "operator", heap.Name, pebble.Name} {
		b.Run(backend, func(b *testing.B) {
			clk := newClock()
			bolt, err := NewBolt(Spec[string, struct{}, int64, int64]{
				Assigner:  Tumbling(10 * time.Second),
				Key:       func(t api.Tuple) string { return t.String(0) },
				Value:     func(api.Tuple) struct{} { return struct{}{} },
				Timestamp: func(t api.Tuple) time.Time { return t.Time(1) },
				Aggregate: Count[struct{}](),
				Now:       clk.now,
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := newFakeContext(srcInputs, map[string][]int{"src": {1}})
			ctx.topo.Config = map[string]string{topology.KeyDeliveryMode: string(topology.EffectivelyOnce)}
			if err := bolt.Prepare(ctx, &discard{}); err != nil {
				b.Fatal(err)
			}
			var states *api.States
			switch backend {
			case "none":
			case "operator":
				states = api.NewStates()
			default:
				o := statebackend.Options{Dir: b.TempDir(), MaxParallelism: 128, Groups: keygroup.Range{Start: 0, End: 128}}
				kb, err := statebackend.Open(backend, o)
				if err != nil {
					b.Fatal(err)
				}
				defer kb.Close()
				if states, err = api.OpenStates(kb, o, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			if states != nil {
				if err := bolt.InitState(states); err != nil {
					b.Fatal(err)
				}
			}
			ring := make([]api.Tuple, 4096)
			for i := range ring {
				ring[i] = api.NewTuple("src", "default", 1, []string{"word", "ts"}, benchWords[i%len(benchWords)], time.Time{})
			}
			ts := time.UnixMilli(1_700_000_000_000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%10 == 0 {
					ts = ts.Add(time.Millisecond)
				}
				bt := ring[i%len(ring)].(*api.BasicTuple)
				bt.Vals[1] = ts
				bolt.Execute(bt)
				if i%100 == 99 {
					bolt.Execute(watermarkTuple(1, ts.UnixMilli()-100))
				}
				if states != nil && i%10_000 == 9_999 {
					if err := bolt.PreSave(int64(i)); err != nil {
						b.Fatal(err)
					}
					if _, err := states.MarshalBinary(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if s := b.Elapsed().Seconds(); s > 0 {
				b.ReportMetric(float64(b.N)/s, "events/cpu-s")
			}
		})
	}
}
