// Package sentencewc holds the components of the sentence word count
// benchmark topology (T3, after storm-loadgen's ThroughputVsLatency): a
// sentence spout, a split bolt (local-or-shuffle) and a count bolt
// fields-grouped on the word, at-least-once.
//
// At a fixed offered rate (latency.KeyRate) the spout follows a
// latency.Pacer and stamps every sentence with its scheduled emit time;
// the split bolt copies the stamp into every word, and the count bolt
// records now − scheduled (latency.Recorder, flushed on a 1-s tick). With
// acking the spout also records the complete latency (scheduled time to
// its Ack). Unthrottled, nothing is stamped or recorded.
package sentencewc

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/bench/topologies/constnull/constnull"
	"github.com/egret-stream/egret/bench/topologies/latency"
	"github.com/egret-stream/egret/core/topology"
)

// Name is the topology's name.
const Name = "sentencewc"

// Component names.
const (
	SpoutName = "sentence"
	SplitName = "split"
	CountName = "count"
)

// Recorder names: the count bolt's latency and the spout's complete
// latency (latency.Merge selects them by these names).
const (
	SinkLatency     = "count"
	CompleteLatency = "sentence.complete"
)

// AckedCounter is the spout's user counter of acked sentences.
const AckedCounter = "acked"

// Sentences are TVL's five sentences (6.4 words on average).
var Sentences = []string{
	"the cow jumped over the moon",
	"an apple a day keeps the doctor away",
	"four score and seven years ago",
	"snow white and the seven dwarfs",
	"i am at two with nature",
}

// maxBurst bounds the overdue sentences one NextTuple call emits.
const maxBurst = 64

// flushEvery is the length of a latency interval.
const flushEvery = time.Second

// Options tune the topology.
type Options struct {
	// Spouts, Splits and Counts are the parallelism of each component
	// (default 1 each); Containers the number of containers (default 1).
	Spouts, Splits, Counts, Containers int
	// ContainerMode, when set, is topology.container.mode.
	ContainerMode string
	// Acking makes the topology at-least-once (the default of the T3
	// benchmark is on) with MaxPending as topology.max.spout.pending (0:
	// the runtime's default).
	Acking     bool
	MaxPending int
	// CheckpointInterval > 0 makes the topology effectively-once with
	// that checkpoint interval (instead of Acking): the spout keeps its
	// sequence and the count bolt its counts in checkpointed state.
	CheckpointInterval time.Duration
	// Rate is the offered rate in sentences per second of all spout
	// tasks together (0: unthrottled).
	Rate float64
	// LatencyDir, when set, receives the latency recorders' files.
	LatencyDir string
	// Name is the topology's name (default Name).
	Name string
	// ShellSplit, when set, is the command and arguments of a multilang
	// subprocess that replaces the Go split bolt (it must emit (word,
	// scheduled) per word, anchored, and ack its input), with PythonPath
	// as topology.multilang.path. A binary's instances build the topology
	// without its arguments, so ShellSplit is fixed in a binary's main
	// (bench/topologies/sentencewcpy).
	ShellSplit []string
	PythonPath string
}

// Builder returns the topology.
func Builder(o Options) (*api.TopologyBuilder, error) {
	for _, f := range []struct {
		name string
		v    *int
	}{{"spouts", &o.Spouts}, {"splits", &o.Splits}, {"counts", &o.Counts}, {"containers", &o.Containers}} {
		if *f.v < 0 {
			return nil, fmt.Errorf("--%s must be at least 1, got %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = 1
		}
	}
	if o.CheckpointInterval > 0 && o.Acking {
		return nil, fmt.Errorf("--checkpoint-interval (effectively-once) and --acking (at-least-once) exclude each other")
	}
	if o.MaxPending < 0 || o.Rate < 0 || o.CheckpointInterval < 0 {
		return nil, fmt.Errorf("--max-pending and --rate cannot be negative (got %d, %v)", o.MaxPending, o.Rate)
	}
	if o.Name == "" {
		o.Name = Name
	}
	b := api.NewTopologyBuilder(o.Name)
	if o.PythonPath != "" {
		b.SetConfig(topology.KeyMultilangPath, o.PythonPath)
	}
	b.SetContainers(o.Containers)
	if o.ContainerMode != "" {
		b.SetContainerMode(topology.ContainerMode(o.ContainerMode))
	}
	if o.CheckpointInterval > 0 {
		b.SetDeliveryMode(topology.EffectivelyOnce)
		b.SetConfig(topology.KeyCheckpointInterval, o.CheckpointInterval.String())
	}
	if o.Acking {
		b.SetDeliveryMode(topology.AtLeastOnce)
		if o.MaxPending > 0 {
			b.SetMaxSpoutPending(o.MaxPending)
		}
	}
	if o.Rate > 0 {
		b.SetConfig(latency.KeyRate, strconv.FormatFloat(o.Rate, 'f', -1, 64))
	}
	if o.LatencyDir != "" {
		b.SetConfig(latency.KeyDir, o.LatencyDir)
	}
	b.SetSpout(SpoutName, func() api.Spout { return &SentenceSpout{} }, o.Spouts)
	if len(o.ShellSplit) > 0 {
		b.SetShellBolt(SplitName, api.ShellBolt(o.ShellSplit[0], o.ShellSplit[1:]...).Declare("word", "scheduled"), o.Splits).
			SetStateless(). // a splitter: nothing to checkpoint
			LocalOrShuffleGrouping(SpoutName)
	} else {
		b.SetBolt(SplitName, func() api.Bolt { return &SplitBolt{} }, o.Splits).LocalOrShuffleGrouping(SpoutName)
	}
	b.SetBolt(CountName, func() api.Bolt { return &CountBolt{} }, o.Counts).
		FieldsGrouping(SplitName, "word").
		SetTickFrequency(flushEvery)
	return b, nil
}

// settings reads the rate of one task and the latency directory.
func settings(ctx api.Context) (rate float64, dir string, err error) {
	if v := ctx.Config(latency.KeyRate); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 {
			return 0, "", fmt.Errorf("%s: %q is not a rate in tuples per second", latency.KeyRate, v)
		}
		if n := len(ctx.ComponentTasks(SpoutName)); n > 0 {
			rate = r / float64(n)
		}
	}
	dir = ctx.Config(latency.KeyDir)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, "", fmt.Errorf("%s: %w", latency.KeyDir, err)
		}
	}
	return rate, dir, nil
}

// SentenceSpout emits (sentence, scheduled Unix nanoseconds): unthrottled
// one sentence per NextTuple with scheduled 0, or at its share of the
// offered rate following a Pacer. With Acking the message id is the
// scheduled time (unthrottled: a sequence number).
type SentenceSpout struct {
	api.BaseSpout
	// Acking is set by Open from the topology's delivery mode (see
	// constnull.AtLeastOnce).
	Acking    bool
	out       api.SpoutCollector
	rng       *rand.Rand
	pacer     *latency.Pacer
	rec       *latency.Recorder
	lastFlush time.Time
	seq       int64
	acked     *api.Counter
	// vals is reused for every emit (the collector keeps no slice).
	vals api.Values
	// pos holds seq in effectively-once mode (api.Stateful).
	pos *api.State[string, int64]
}

// InitState implements api.Stateful (effectively-once): the sequence
// goes back to the checkpoint's.
func (s *SentenceSpout) InitState(st *api.States) (err error) {
	if s.pos, err = api.NewState[string, int64](st, "pos"); err == nil {
		s.seq, _ = s.pos.Get("seq")
	}
	return err
}

// PreSave implements api.Stateful.
func (s *SentenceSpout) PreSave(int64) error {
	s.pos.Put("seq", s.seq)
	return nil
}

// Open implements api.Spout.
func (s *SentenceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out, s.vals = out, make(api.Values, 2)
	s.rng = rand.New(rand.NewPCG(7, uint64(ctx.TaskID())))
	s.acked = ctx.Counter(AckedCounter)
	s.Acking = constnull.AtLeastOnce(ctx)
	rate, dir, err := settings(ctx)
	if err != nil {
		return err
	}
	if rate > 0 {
		if s.pacer, err = latency.NewPacer(time.Now(), rate); err != nil {
			return err
		}
		if dir != "" && s.Acking {
			s.rec = latency.NewRecorder(dir, CompleteLatency, ctx.TaskID())
			s.lastFlush = time.Now()
		}
	}
	return nil
}

// NextTuple implements api.Spout.
func (s *SentenceSpout) NextTuple() {
	if s.pacer == nil {
		s.seq++
		s.emit(0, s.seq)
		return
	}
	now := time.Now()
	s.maybeFlush(now)
	first, n := s.pacer.Due(now, maxBurst)
	for i := range n {
		at := s.pacer.Scheduled(first + int64(i))
		s.seq++
		s.emit(at, at)
	}
	s.pacer.Advance(n)
}

func (s *SentenceSpout) emit(scheduled, id int64) {
	s.vals[0], s.vals[1] = Sentences[s.rng.IntN(len(Sentences))], scheduled
	if s.Acking {
		s.out.Emit(s.vals, id)
		return
	}
	s.out.Emit(s.vals, nil)
}

func (s *SentenceSpout) maybeFlush(now time.Time) {
	if s.rec != nil && now.Sub(s.lastFlush) >= flushEvery {
		_ = s.rec.Flush(now) // counted in rec.Errors; a benchmark goes on
		s.lastFlush = now
	}
}

// Ack implements api.Spout: it counts the ack and, at a fixed rate,
// records the complete latency.
func (s *SentenceSpout) Ack(id any) {
	s.acked.Add(1)
	if s.rec == nil {
		return
	}
	if at, ok := id.(int64); ok {
		now := time.Now()
		s.rec.Record(now, at)
		s.maybeFlush(now)
	}
}

// Close implements api.Spout: it writes the last interval.
func (s *SentenceSpout) Close() {
	if s.rec != nil {
		_ = s.rec.Flush(time.Now())
	}
}

// DeclareOutputFields implements api.Spout.
func (s *SentenceSpout) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare("sentence", "scheduled")
}

// SplitBolt emits (word, scheduled) for every word of a sentence, anchored
// on it, and acks the sentence with Acking.
type SplitBolt struct {
	api.BaseBolt
	// Acking is set by Prepare from the topology's delivery mode.
	Acking bool
	out    api.BoltCollector
	// vals and anchor are reused for every emit (the collector keeps
	// neither slice).
	vals   api.Values
	anchor [1]api.Tuple
}

// Prepare implements api.Bolt.
func (b *SplitBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out, b.vals = out, make(api.Values, 2)
	b.Acking = constnull.AtLeastOnce(ctx)
	return nil
}

// Execute implements api.Bolt.
func (b *SplitBolt) Execute(t api.Tuple) {
	sentence := t.String(0)
	b.vals[1] = t.Value(1) // scheduled
	b.anchor[0] = t
	for len(sentence) > 0 {
		i := strings.IndexByte(sentence, ' ')
		w := sentence
		if i < 0 {
			sentence = ""
		} else {
			w, sentence = sentence[:i], sentence[i+1:]
		}
		if w == "" {
			continue
		}
		b.vals[0] = w
		if b.Acking {
			b.out.Emit(b.vals, b.anchor[:]...)
		} else {
			b.out.Emit(b.vals)
		}
	}
	b.anchor[0] = nil // the tuple is not kept
	if b.Acking {
		b.out.Ack(t)
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *SplitBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word", "scheduled") }

// ReuseTuples implements api.TupleReuser: Execute acks its tuple and keeps
// nothing of it but values.
func (b *SplitBolt) ReuseTuples() bool { return true }

// ReuseTuples implements api.TupleReuser: Execute acks its tuple and keeps
// only its word, a string.
func (b *CountBolt) ReuseTuples() bool { return true }

// CountBolt counts words in a map, records each word's latency from its
// scheduled time when latencies are recorded, and acks with Acking.
type CountBolt struct {
	api.BaseBolt
	// Acking is set by Prepare from the topology's delivery mode.
	Acking bool
	// Counts is the count of every word seen: checkpointed state in
	// effectively-once mode (api.Stateful).
	Counts *api.State[string, int64]
	out    api.BoltCollector
	rec    *latency.Recorder
}

// Prepare implements api.Bolt.
func (b *CountBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.Acking = constnull.AtLeastOnce(ctx)
	if err := b.InitState(api.NewStates()); err != nil {
		return err
	}
	rate, dir, err := settings(ctx)
	if err != nil {
		return err
	}
	if rate > 0 && dir != "" {
		b.rec = latency.NewRecorder(dir, SinkLatency, ctx.TaskID())
	}
	return nil
}

// Execute implements api.Bolt.
func (b *CountBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		if b.rec != nil {
			_ = b.rec.Flush(time.Now())
		}
		return
	}
	w := t.String(0)
	n, _ := b.Counts.Get(w)
	b.Counts.Put(w, n+1)
	if b.rec != nil {
		if at := t.Int64(1); at > 0 {
			b.rec.Record(time.Now(), at)
		}
	}
	if b.Acking {
		b.out.Ack(t)
	}
}

// InitState implements api.Stateful (effectively-once).
func (b *CountBolt) InitState(st *api.States) (err error) {
	b.Counts, err = api.NewState[string, int64](st, "counts")
	return err
}

// PreSave implements api.Stateful.
func (b *CountBolt) PreSave(int64) error { return nil }

// Cleanup implements api.Bolt: it writes the last interval.
func (b *CountBolt) Cleanup() {
	if b.rec != nil {
		_ = b.rec.Flush(time.Now())
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *CountBolt) DeclareOutputFields(api.OutputDeclarer) {}
