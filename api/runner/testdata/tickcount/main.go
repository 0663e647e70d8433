// Command tickcount is a topology binary for the tests of the local-mode
// drain (run_test.go): its counting bolts emit only on ticks, every hour,
// so only the drain's final ticks flush them.
//
// Spout "words" emits the words alpha..epsilon in turn (msg id: its
// sequence number with at-least-once). Bolt "count" (2 tasks, fields
// grouping) counts them and, on a tick, emits the counts since the last
// tick; with at-least-once it holds its inputs and acks them on the tick.
// Bolt "total" (global grouping) sums the counts and, on a tick, emits
// the totals. Bolt "sink" keeps the last total of each word.
//
// Environment: TICKCOUNT_DIR (required) receives words.json (written by
// the spout's Close) and sink.json (the sink's Cleanup); the spout also
// creates the file "emitting" once it emitted 100 words.
// TICKCOUNT_ACKING=1 runs at-least-once; TICKCOUNT_NOACK=1 makes "count"
// never ack (a drain cannot complete).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/topology"
)

var words = []string{"alpha", "beta", "gamma", "delta", "epsilon"}

// SpoutReport is what words.json holds.
type SpoutReport struct {
	Emitted map[string]int64 `json:"emitted"`
	Roots   int64            `json:"roots"`
	Acked   int64            `json:"acked"`
	Failed  int64            `json:"failed"`
}

type wordSpout struct {
	dir     string
	acking  bool
	out     api.SpoutCollector
	next    int64
	report  SpoutReport
	started bool
}

func (s *wordSpout) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	s.report.Emitted = map[string]int64{}
	return nil
}

func (s *wordSpout) NextTuple() {
	for range 32 {
		w := words[s.next%int64(len(words))]
		if s.acking {
			s.out.Emit(api.Values{w}, s.next)
			s.report.Roots++
		} else {
			s.out.Emit(api.Values{w}, nil)
		}
		s.report.Emitted[w]++
		s.next++
	}
	if !s.started && s.next >= 100 {
		s.started = true
		if err := os.WriteFile(filepath.Join(s.dir, "emitting"), nil, 0o644); err != nil {
			panic(fmt.Sprintf("tickcount: %v", err))
		}
	}
	time.Sleep(time.Millisecond) // about 30,000 words a second
}

func (s *wordSpout) Ack(any)     { s.report.Acked++ }
func (s *wordSpout) Fail(any)    { s.report.Failed++ }
func (s *wordSpout) Activate()   {}
func (s *wordSpout) Deactivate() {}
func (s *wordSpout) Close()      { writeJSON(filepath.Join(s.dir, "words.json"), s.report) }
func (s *wordSpout) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare("word")
}

type countBolt struct {
	acking, noack bool
	out           api.BoltCollector
	counts        map[string]int64
	held          []api.Tuple
}

func (b *countBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out, b.counts = out, map[string]int64{}
	return nil
}

func (b *countBolt) Execute(t api.Tuple) {
	if !t.IsTick() {
		b.counts[t.String(0)]++
		if b.acking {
			b.held = append(b.held, t)
		}
		return
	}
	for w, n := range b.counts {
		b.out.Emit(api.Values{w, n})
	}
	clear(b.counts)
	if !b.noack {
		for _, h := range b.held {
			b.out.Ack(h)
		}
	}
	b.held = b.held[:0]
}

func (b *countBolt) Cleanup() {}
func (b *countBolt) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare("word", "count")
}

type totalBolt struct {
	out    api.BoltCollector
	totals map[string]int64
}

func (b *totalBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out, b.totals = out, map[string]int64{}
	return nil
}

func (b *totalBolt) Execute(t api.Tuple) {
	if !t.IsTick() {
		b.totals[t.String(0)] += t.Int64(1)
		b.out.Ack(t)
		return
	}
	for w, n := range b.totals {
		b.out.Emit(api.Values{w, n})
	}
}

func (b *totalBolt) Cleanup() {}
func (b *totalBolt) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare("word", "total")
}

type sinkBolt struct {
	dir    string
	out    api.BoltCollector
	totals map[string]int64
}

func (b *sinkBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out, b.totals = out, map[string]int64{}
	return nil
}

func (b *sinkBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		return
	}
	b.totals[t.String(0)] = t.Int64(1)
	b.out.Ack(t)
}

func (b *sinkBolt) Cleanup()                               { writeJSON(filepath.Join(b.dir, "sink.json"), b.totals) }
func (b *sinkBolt) DeclareOutputFields(api.OutputDeclarer) {}

func writeJSON(path string, v any) {
	data, err := json.Marshal(v)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tickcount: write %s: %v\n", path, err)
	}
}

func main() {
	dir := os.Getenv("TICKCOUNT_DIR")
	acking := os.Getenv("TICKCOUNT_ACKING") == "1"
	noack := os.Getenv("TICKCOUNT_NOACK") == "1"
	b := api.NewTopologyBuilder("tickcount")
	if acking {
		b.SetDeliveryMode(topology.AtLeastOnce).SetMaxSpoutPending(2000).SetMessageTimeout(10 * time.Minute)
	}
	b.SetSpout("words", func() api.Spout { return &wordSpout{dir: dir, acking: acking} }, 1)
	b.SetBolt("count", func() api.Bolt { return &countBolt{acking: acking, noack: noack} }, 2).
		FieldsGrouping("words", "word").SetTickFrequency(time.Hour)
	b.SetBolt("total", func() api.Bolt { return &totalBolt{} }, 1).
		GlobalGrouping("count").SetTickFrequency(time.Hour)
	b.SetBolt("sink", func() api.Bolt { return &sinkBolt{dir: dir} }, 1).GlobalGrouping("total")
	runner.Main(b)
}
