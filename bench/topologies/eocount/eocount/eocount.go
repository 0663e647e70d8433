// Package eocount is the effectively-once verification topology: a
// stateful word count whose result is known in advance.
//
// The spout emits the sentences 0..N-1 (sentence i goes to spout task
// i mod spouts), each a fixed function of i, keeping its position in
// checkpointed state; a stateless bolt splits them into words; a stateful
// bolt counts the words (fields grouping) and rewrites a report file of
// its counts at every tick. Under effectively-once the reported counts of
// every word reach exactly what the N sentences hold, whatever process
// dies meanwhile, and never pass it: a count above is a tuple applied
// twice, one that stays below is a tuple lost.
//
// With Options.Keys the sentences draw their words from that many keys,
// and the count bolt keeps each word's count in keyed state (a value
// state of the word, current from the fields grouping) in the topology's
// state backend (topology.state.backend), with the set of its words in
// operator state so that a restored task reads every count back. With
// Options.ValueBytes each count is stored with that many random bytes (a
// keyed state far larger than the words: the state that outgrows a task's
// memory on the pebble backend; the counts are then also kept in operator
// state, from which a restored task reads them back, and every count read
// from keyed state is checked against it), and Options.CountRAM gives the count
// tasks a ram (the executor derives their GOMEMLIMIT and memory limit from
// it).
package eocount

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/topology"
)

// Component names.
const (
	Source = "sentences"
	Split  = "split"
	Count  = "count"
)

// Topology config keys (the options reach the instances through the
// submitted definition).
const (
	KeySentences = "eocount.sentences"
	KeyStateDir  = "eocount.state.dir"
	KeyRate      = "eocount.rate"
	KeyKeys      = "eocount.keys"
	KeyValueSize = "eocount.value.bytes"
)

// Options describe the topology.
type Options struct {
	Name      string
	Sentences int64
	StateDir  string
	Rate      int // sentences per second over all spout tasks (0: unlimited)
	// Keys, when > 0, is the number of distinct words (the sentences
	// use SentenceOf(i, Keys)), and the counts are keyed state.
	Keys int64
	// ValueBytes, with Keys, pads every stored count to that many bytes
	// of random data; CountRAM (bytes, 0: the default) is the count
	// bolt's ram.
	ValueBytes int
	CountRAM   int64
	Containers int
	Spouts     int
	Bolts      int
	// Interval is the checkpoint interval (0: the default).
	Interval time.Duration
	// ReportEvery is the count bolts' report interval (default 300ms).
	ReportEvery time.Duration
	Settings    map[string]string
	// ShellSplit runs the split bolt as a shell bolt ("python3 split.py",
	// a pystorm subprocess, which cannot be checkpointed); its main must
	// set it (test/e2e/testdata/eoshell), since instances start without
	// the topology's flags. StatelessSplit marks the split bolt stateless.
	ShellSplit, StatelessSplit bool
}

// ParseArgs parses the topology's own flags out of args and returns the
// options and the arguments left for Egret.
func ParseArgs(name string, args []string) (Options, []string, error) {
	o := Options{Settings: map[string]string{}}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.Name, "name", name, "topology name")
	fs.Int64Var(&o.Sentences, "sentences", 20000, "sentences 0..N-1")
	fs.StringVar(&o.StateDir, "state", "", "directory of the count bolts' reports (required)")
	fs.IntVar(&o.Rate, "rate", 0, "sentences per second over all spout tasks (0: unlimited)")
	fs.Int64Var(&o.Keys, "keys", 0, "distinct words, counted in keyed state (0: the fixed sentences, counted in operator state)")
	fs.IntVar(&o.ValueBytes, "value-bytes", 0, "with --keys, store every count padded to this many random bytes")
	fs.Int64Var(&o.CountRAM, "count-ram", 0, "ram of each count task, bytes (0: the default)")
	fs.IntVar(&o.Containers, "containers", 2, "containers in a cluster")
	fs.IntVar(&o.Spouts, "spouts", 2, "spout parallelism")
	fs.IntVar(&o.Bolts, "bolts", 2, "parallelism of each bolt")
	fs.DurationVar(&o.Interval, "interval", time.Second, "checkpoint interval")
	fs.DurationVar(&o.ReportEvery, "report-every", 300*time.Millisecond, "how often the count bolts rewrite their reports")
	fs.BoolVar(&o.StatelessSplit, "stateless-split", false, "mark the split bolt stateless")
	fs.Func("set", "a topology setting KEY=VALUE (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.Settings[k] = val
		return nil
	})
	own, rest := runner.SplitArgs(args, fs)
	if err := fs.Parse(own); err != nil {
		return o, nil, err
	}
	return o, rest, nil
}

// Builder returns the topology.
func Builder(o Options) (*api.TopologyBuilder, error) {
	if o.Name == "" {
		o.Name = "eocount"
	}
	if o.Sentences < 1 || o.Rate < 0 || o.Keys < 0 || o.Containers < 1 || o.Spouts < 1 || o.Bolts < 1 || o.ValueBytes < 0 || o.CountRAM < 0 {
		return nil, fmt.Errorf("sentences (%d), containers (%d), spouts (%d) and bolts (%d) must be ≥ 1 and rate (%d), value bytes (%d) and count ram (%d) ≥ 0",
			o.Sentences, o.Containers, o.Spouts, o.Bolts, o.Rate, o.ValueBytes, o.CountRAM)
	}
	if o.ValueBytes > 0 && (o.Keys == 0 || o.ValueBytes < 8) {
		return nil, fmt.Errorf("--value-bytes %d needs --keys and at least 8 bytes (the count)", o.ValueBytes)
	}
	b := api.NewTopologyBuilder(o.Name)
	b.SetDeliveryMode(topology.EffectivelyOnce)
	b.SetContainers(o.Containers)
	b.SetConfig(KeySentences, strconv.FormatInt(o.Sentences, 10))
	b.SetConfig(KeyRate, strconv.Itoa(o.Rate))
	b.SetConfig(KeyKeys, strconv.FormatInt(o.Keys, 10))
	b.SetConfig(KeyValueSize, strconv.Itoa(o.ValueBytes))
	if o.StateDir != "" {
		abs, err := filepath.Abs(o.StateDir)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, fmt.Errorf("create the state directory: %w", err)
		}
		b.SetConfig(KeyStateDir, abs)
	}
	if o.Interval > 0 {
		b.SetConfig(topology.KeyCheckpointInterval, o.Interval.String())
	}
	for k, v := range o.Settings {
		b.SetConfig(k, v)
	}
	b.SetSpout(Source, func() api.Spout { return &SentenceSpout{} }, o.Spouts)
	var split *api.BoltDeclarer
	if o.ShellSplit {
		split = b.SetShellBolt(Split, api.ShellBolt("python3", "split.py").Declare("word"), o.Bolts)
	} else {
		split = b.SetBolt(Split, func() api.Bolt { return &SplitBolt{} }, o.Bolts)
	}
	split.ShuffleGrouping(Source)
	if o.StatelessSplit {
		split.SetStateless()
	}
	if o.ReportEvery <= 0 {
		o.ReportEvery = 300 * time.Millisecond
	}
	count := b.SetBolt(Count, func() api.Bolt { return &CountBolt{} }, o.Bolts).FieldsGrouping(Split, "word").
		SetConfig(topology.KeyTickFrequency, o.ReportEvery.String())
	if o.CountRAM > 0 {
		count.SetResources(0, o.CountRAM, 0)
	}
	return b, nil
}

// Sentence is sentence i: three words, a fixed function of i.
func Sentence(i int64) string {
	return fmt.Sprintf("w%d w%d w%d", i%101, (i*7)%53, (i*13)%29)
}

// SentenceOf is sentence i with words drawn from keys distinct ones
// (Sentence when keys is 0).
func SentenceOf(i, keys int64) string {
	if keys <= 0 {
		return Sentence(i)
	}
	return fmt.Sprintf("w%d w%d w%d", i%keys, (i*7+1)%keys, (i*13+2)%keys)
}

// Expected returns the word counts of sentences 0..n-1.
func Expected(n int64) map[string]int64 { return ExpectedOf(n, 0) }

// ExpectedOf returns the word counts of sentences 0..n-1 of SentenceOf(i,
// keys).
func ExpectedOf(n, keys int64) map[string]int64 {
	out := map[string]int64{}
	for i := int64(0); i < n; i++ {
		for _, w := range strings.Fields(SentenceOf(i, keys)) {
			out[w]++
		}
	}
	return out
}

// SentenceSpout emits its share of the sentences, its position in state.
type SentenceSpout struct {
	api.BaseSpout
	out        api.SpoutCollector
	index, par int64
	n, keys    int64
	pos        *api.State[string, int64]
	next       int64 // next of this task's sentences (the k-th)
	rate       float64
	tokens     float64
	last       time.Time
}

// Open implements api.Spout.
func (s *SentenceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	s.index = int64(ctx.TaskIndex())
	s.par = int64(len(ctx.ComponentTasks(ctx.ComponentName())))
	n, err := strconv.ParseInt(ctx.Config(KeySentences), 10, 64)
	if err != nil || n < 1 {
		return fmt.Errorf("%s: %q is not a number of sentences", KeySentences, ctx.Config(KeySentences))
	}
	s.n = n
	s.keys, _ = strconv.ParseInt(ctx.Config(KeyKeys), 10, 64)
	if r, _ := strconv.Atoi(ctx.Config(KeyRate)); r > 0 {
		s.rate = float64(r) / float64(s.par)
	}
	s.last = time.Now()
	return nil
}

// InitState implements api.Stateful: rewind to the saved position.
func (s *SentenceSpout) InitState(st *api.States) error {
	pos, err := api.NewState[string, int64](st, "pos")
	if err != nil {
		return err
	}
	s.pos = pos
	s.next, _ = pos.Get("next")
	return nil
}

// PreSave implements api.Stateful.
func (s *SentenceSpout) PreSave(int64) error {
	s.pos.Put("next", s.next)
	return nil
}

// NextTuple implements api.Spout.
func (s *SentenceSpout) NextTuple() {
	burst := 64.0
	if s.rate > 0 {
		now := time.Now()
		s.tokens = math.Min(math.Max(2, s.rate/50), s.tokens+now.Sub(s.last).Seconds()*s.rate)
		s.last = now
		burst = math.Floor(s.tokens)
	}
	for k := 0; k < int(burst); k++ {
		i := s.next*s.par + s.index
		if i >= s.n {
			return
		}
		s.out.Emit(api.Values{SentenceOf(i, s.keys)}, nil)
		s.next++
		s.tokens--
	}
}

// DeclareOutputFields implements api.Spout.
func (s *SentenceSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("sentence") }

// SplitBolt splits sentences into words (stateless).
type SplitBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

// Prepare implements api.Bolt.
func (b *SplitBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }

// Execute implements api.Bolt.
func (b *SplitBolt) Execute(t api.Tuple) {
	for _, w := range strings.Fields(t.String(0)) {
		b.out.Emit(api.Values{w}, t)
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *SplitBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word") }

// CountBolt counts words in checkpointed state and reports them at ticks:
// in an operator state (a map), or with eocount.keys in keyed state.
type CountBolt struct {
	api.BaseBolt
	counts *api.State[string, int64]
	task   int
	tasks  int
	report string
	// Keyed counting: the count of the current word, the words of the
	// task (operator state), and the counts last seen (the report).
	keyed  bool
	states *api.States
	count  *api.ValueState[int64]
	words  *api.State[string, bool]
	// With eocount.value.bytes the counts are padded: the first 8 bytes
	// of padded's value are the count (big endian), random bytes follow.
	padded *api.ValueState[[]byte]
	vbuf   []byte
	// paddedCounts holds every word's count in operator state too: a
	// restore reads the counts back from it, not the whole keyed state
	// (the restore would read the state from disk), and every count read
	// from keyed state is checked against it.
	paddedCounts *api.State[string, int64]
	seen         map[string]int64
	err          error
}

// Report is what a count task writes.
type Report struct {
	Task int `json:"task"`
	// Tasks is the parallelism of the count bolt the task runs in.
	Tasks  int              `json:"tasks"`
	Counts map[string]int64 `json:"counts"`
	// Error is what keyed state refused (the counts are not reported).
	Error string `json:"error,omitempty"`
}

// Prepare implements api.Bolt.
func (b *CountBolt) Prepare(ctx api.Context, _ api.BoltCollector) error {
	dir := ctx.Config(KeyStateDir)
	if dir == "" {
		return errors.New(KeyStateDir + " is not set")
	}
	b.task = ctx.TaskID()
	b.tasks = len(ctx.ComponentTasks(ctx.ComponentName()))
	b.report = filepath.Join(dir, fmt.Sprintf("count-%d.json", b.task))
	keys, _ := strconv.ParseInt(ctx.Config(KeyKeys), 10, 64)
	b.keyed = keys > 0
	if n, _ := strconv.Atoi(ctx.Config(KeyValueSize)); n > 0 {
		b.vbuf = make([]byte, n)
	}
	return nil
}

// InitState implements api.Stateful.
func (b *CountBolt) InitState(st *api.States) (err error) {
	if !b.keyed {
		b.counts, err = api.NewState[string, int64](st, "counts")
		return err
	}
	b.states = st
	if b.vbuf != nil {
		b.padded, err = api.NewValueState[[]byte](st, "count-padded")
	} else {
		b.count, err = api.NewValueState[int64](st, "count")
	}
	if err != nil {
		return err
	}
	b.seen = map[string]int64{}
	if b.vbuf != nil {
		if b.paddedCounts, err = api.NewState[string, int64](st, "padded-counts", api.WithRestoreMode(api.UnionRestore)); err != nil {
			return err
		}
		var foreign []string
		b.paddedCounts.Range(func(w string, n int64) bool {
			if st.SetCurrentKey(w) != nil {
				foreign = append(foreign, w) // its key group is another task's
			} else {
				b.seen[w] = n
			}
			return true
		})
		st.ClearCurrentKey()
		for _, w := range foreign {
			b.paddedCounts.Delete(w)
		}
		return nil
	}
	// After a rescale every task gets the words of every old task
	// (UnionRestore) and keeps those of its key groups.
	if b.words, err = api.NewState[string, bool](st, "words", api.WithRestoreMode(api.UnionRestore)); err != nil {
		return err
	}
	// Read every word's restored count back from the keyed state.
	var foreign []string
	b.words.Range(func(w string, _ bool) bool {
		if st.SetCurrentKey(w) != nil {
			foreign = append(foreign, w) // its key group is another task's
			return true
		}
		var n int64
		n, err = b.value()
		b.seen[w] = n
		return err == nil
	})
	st.ClearCurrentKey()
	for _, w := range foreign {
		b.words.Delete(w)
	}
	return err
}

// PreSave implements api.Stateful.
func (b *CountBolt) PreSave(int64) error { return nil }

// Execute implements api.Bolt.
func (b *CountBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		b.write()
		return
	}
	w := t.String(0)
	if !b.keyed {
		n, _ := b.counts.Get(w)
		b.counts.Put(w, n+1)
		return
	}
	// The runtime made the word (the grouping field) the current key.
	n, err := b.value()
	if err == nil && b.paddedCounts != nil && n != b.seen[w] {
		err = fmt.Errorf("word %s: keyed state holds the count %d, the operator state %d", w, n, b.seen[w])
	}
	if err == nil {
		err = b.update(n + 1)
	}
	if err != nil {
		b.err = err // reported instead of counts: the test fails
		return
	}
	b.seen[w] = n + 1
	if b.paddedCounts != nil {
		b.paddedCounts.Put(w, n+1)
		return
	}
	b.words.Put(w, true)
}

// value reads the count of the current word.
func (b *CountBolt) value() (int64, error) {
	if b.padded == nil {
		n, _, err := b.count.Value()
		return n, err
	}
	v, ok, err := b.padded.Value()
	switch {
	case err != nil || !ok:
		return 0, err
	case len(v) != len(b.vbuf):
		return 0, fmt.Errorf("a padded count of %d bytes, want %d", len(v), len(b.vbuf))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// update sets the count of the current word.
func (b *CountBolt) update(n int64) error {
	if b.padded == nil {
		return b.count.Update(n)
	}
	binary.BigEndian.PutUint64(b.vbuf, uint64(n))
	fillRandom(b.vbuf[8:])
	return b.padded.Update(b.vbuf)
}

// fillRandom fills p with pseudo-random bytes (incompressible, so the
// state on disk is as large as its values).
func fillRandom(p []byte) {
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, rand.Uint64())
		p = p[8:]
	}
	for i := range p {
		p[i] = byte(rand.Uint32())
	}
}

func (b *CountBolt) write() {
	r := Report{Task: b.task, Tasks: b.tasks, Counts: map[string]int64{}}
	switch {
	case b.err != nil:
		r.Error = b.err.Error()
	case b.keyed:
		r.Counts = b.seen
	default:
		b.counts.Range(func(k string, v int64) bool { r.Counts[k] = v; return true })
	}
	data, _ := json.Marshal(r)
	tmp := b.report + ".tmp"
	if os.WriteFile(tmp, data, 0o644) == nil {
		_ = os.Rename(tmp, b.report)
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *CountBolt) DeclareOutputFields(api.OutputDeclarer) {}

// Result compares the reported counts with the expected ones.
type Result struct {
	Expected, Counted int64
	Over, Under       []string // words counted more, fewer times than expected
	Reports           int
}

// Exact reports whether every word has exactly its expected count.
func (r *Result) Exact() bool {
	return len(r.Over) == 0 && len(r.Under) == 0 && r.Counted == r.Expected
}

func (r *Result) String() string {
	return fmt.Sprintf("%d of %d words counted (%d reports); %d words over (%s), %d under", r.Counted, r.Expected, r.Reports,
		len(r.Over), strings.Join(r.Over[:min(len(r.Over), 5)], " "), len(r.Under))
}

// Counted returns the words counted in the reports in dir.
func Counted(dir string) (float64, error) {
	r, err := Check(dir, nil)
	if err != nil {
		return 0, err
	}
	return float64(r.Counted), nil
}

// Check reads the reports in dir against the expected counts.
func Check(dir string, expected map[string]int64) (*Result, error) {
	return CheckReports(dir, expected, nil)
}

// CheckReports is Check over the reports keep accepts (nil: all): after
// a rescale, those of the current count tasks written with the current
// parallelism.
func CheckReports(dir string, expected map[string]int64, keep func(Report) bool) (*Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "count-*.json"))
	if err != nil {
		return nil, err
	}
	got := map[string]int64{}
	r := &Result{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var rep Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if keep != nil && !keep(rep) {
			continue
		}
		r.Reports++
		if rep.Error != "" {
			return nil, fmt.Errorf("count task %d: %s", rep.Task, rep.Error)
		}
		for w, n := range rep.Counts {
			got[w] += n
		}
	}
	for w, want := range expected {
		r.Expected += want
		g := got[w]
		r.Counted += g
		switch {
		case g > want:
			r.Over = append(r.Over, fmt.Sprintf("%s=%d/%d", w, g, want))
		case g < want:
			r.Under = append(r.Under, w)
		}
	}
	for w, g := range got {
		if _, ok := expected[w]; !ok {
			r.Over = append(r.Over, fmt.Sprintf("%s=%d/0", w, g))
			r.Counted += g
		}
	}
	sort.Strings(r.Over)
	sort.Strings(r.Under)
	return r, nil
}
