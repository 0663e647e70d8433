// Package heronwc holds the components of the Heron word count benchmark
// topology (T2, after Heron's WordCountTopology): a spout picks random
// words from a dictionary of 128×1024 random 20-character words, and a
// count bolt, fields-grouped on the word, counts them in a map.
package heronwc

import (
	"fmt"
	"math/rand/v2"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/bench/topologies/constnull/constnull"
	"github.com/egret-stream/egret/core/topology"
)

// Name is the topology's name.
const Name = "heronwc"

// Component names.
const (
	SpoutName = "word"
	BoltName  = "count"
)

// Dictionary shape: DictionaryWords words of WordLength characters from
// Alphabet.
const (
	DictionaryWords = 128 * 1024
	WordLength      = 20
	Alphabet        = "0123456789abcdefghijklmnopqrstuvwxyz"
)

// AckedCounter is the spout's user counter of acked words (published as
// "user.acked").
const AckedCounter = "acked"

// Options tune the topology.
type Options struct {
	// Parallelism is the number of spout tasks and of count tasks
	// (default 1); Containers the number of containers (default
	// Parallelism, one stream manager per spout/count pair as in Heron's
	// benchmark).
	Parallelism, Containers int
	// Acking makes the topology at-least-once with MaxPending as
	// topology.max.spout.pending (0: the runtime's default).
	Acking     bool
	MaxPending int
}

// Builder returns the topology.
func Builder(o Options) (*api.TopologyBuilder, error) {
	if o.Parallelism < 0 || o.Containers < 0 || o.MaxPending < 0 {
		return nil, fmt.Errorf("--parallelism, --containers and --max-pending cannot be negative (got %d, %d, %d)", o.Parallelism, o.Containers, o.MaxPending)
	}
	if o.Parallelism == 0 {
		o.Parallelism = 1
	}
	if o.Containers == 0 {
		o.Containers = o.Parallelism
	}
	b := api.NewTopologyBuilder(Name)
	b.SetContainers(o.Containers)
	if o.Acking {
		b.SetDeliveryMode(topology.AtLeastOnce)
		if o.MaxPending > 0 {
			b.SetMaxSpoutPending(o.MaxPending)
		}
	}
	b.SetSpout(SpoutName, func() api.Spout { return &WordSpout{} }, o.Parallelism)
	b.SetBolt(BoltName, func() api.Bolt { return &CountBolt{} }, o.Parallelism).FieldsGrouping(SpoutName, "word")
	return b, nil
}

// Dictionary returns the benchmark's words: DictionaryWords random words
// of WordLength characters of Alphabet, the same for a given seed.
func Dictionary(seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, seed))
	words := make([]string, DictionaryWords)
	buf := make([]byte, WordLength)
	for i := range words {
		for j := range buf {
			buf[j] = Alphabet[rng.IntN(len(Alphabet))]
		}
		words[i] = string(buf)
	}
	return words
}

// WordSpout emits one uniformly chosen dictionary word per NextTuple; with
// Acking the tuple is tracked (its message id is a sequence number) and
// the acks are counted in the user counter "acked".
type WordSpout struct {
	api.BaseSpout
	// Acking is set by Open from the topology's delivery mode (see
	// constnull.AtLeastOnce).
	Acking bool
	out    api.SpoutCollector
	words  []string
	rng    *rand.Rand
	seq    int64
	acked  *api.Counter
}

// Open implements api.Spout.
func (s *WordSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	// The dictionary's seed is fixed (Heron's uses Random(31)); the choice
	// of words differs per task.
	s.words = Dictionary(31)
	s.rng = rand.New(rand.NewPCG(31, uint64(ctx.TaskID())))
	s.acked = ctx.Counter(AckedCounter)
	s.Acking = constnull.AtLeastOnce(ctx)
	return nil
}

// NextTuple implements api.Spout.
func (s *WordSpout) NextTuple() {
	w := s.words[s.rng.IntN(len(s.words))]
	if s.Acking {
		s.seq++
		s.out.Emit(api.Values{w}, s.seq)
		return
	}
	s.out.Emit(api.Values{w}, nil)
}

// Ack implements api.Spout.
func (s *WordSpout) Ack(any) { s.acked.Add(1) }

// DeclareOutputFields implements api.Spout.
func (s *WordSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word") }

// CountBolt counts words in a map; with Acking it acks every tuple.
type CountBolt struct {
	api.BaseBolt
	// Acking is set by Prepare from the topology's delivery mode.
	Acking bool
	// Counts is the count of every word seen.
	Counts map[string]int64
	out    api.BoltCollector
}

// Prepare implements api.Bolt.
func (b *CountBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.Acking = constnull.AtLeastOnce(ctx)
	b.Counts = make(map[string]int64, DictionaryWords)
	return nil
}

// Execute implements api.Bolt.
func (b *CountBolt) Execute(t api.Tuple) {
	b.Counts[t.String(0)]++
	if b.Acking {
		b.out.Ack(t)
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *CountBolt) DeclareOutputFields(api.OutputDeclarer) {}
