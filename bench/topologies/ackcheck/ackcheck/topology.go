package ackcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// Component names.
const (
	Source = "source"
	Fanout = "fanout"
	Relay  = "relay"
	Sink   = "sink"
)

// Topology config keys: the options reach the instances of a cluster
// through the topology definition.
const (
	KeyMessages = "ackcheck.messages"
	KeyStateDir = "ackcheck.state.dir"
	KeyRate     = "ackcheck.rate"
	KeyCopies   = "ackcheck.copies"
	KeySinkLog  = "ackcheck.sink.log"
)

// User counters of the components (published as "user.<name>").
const (
	CounterEmitted  = "emitted"  // spout: roots emitted (fresh and replayed)
	CounterReplayed = "replayed" // spout: emits of an id emitted before
	CounterAcked    = "acked"    // spout: Ack calls
	CounterFailed   = "failed"   // spout: Fail calls (failed or timed out)
	CounterRecorded = "recorded" // sink: tuples recorded
)

// Options describe the topology.
type Options struct {
	// Name is the topology name (default "ackcheck").
	Name string
	// Messages is N, the number of message ids (0: unbounded).
	Messages int64
	// StateDir holds the spouts' logs and the sinks' records; required.
	StateDir string
	// Rate limits the spouts to this many emits per second in total (0:
	// as fast as max.spout.pending allows).
	Rate int
	// MaxSpoutPending per spout task (default 1000).
	MaxSpoutPending int
	// MessageTimeout (default 10s).
	MessageTimeout time.Duration
	// Containers (default 2).
	Containers int
	// Copies the fanout bolt emits per input (default 3).
	Copies int
	// Spouts and Bolts are the parallelisms of the spout and of each bolt
	// (default 2).
	Spouts, Bolts int
	// NoSinkLog makes the sink ack without writing its records (for
	// benchmarks that only need throughput).
	NoSinkLog bool
	// ShellSource and ShellRelay, when set, are the command and
	// arguments of a multilang subprocess that replaces the source spout
	// or the relay bolt (docs/multilang.md); it must behave like the Go
	// component (test/e2e/testdata/multilang/resources has Python ones).
	// A binary's instances build the topology without its arguments, so
	// these are fixed in a binary's main (see testdata/multilang/ackcheckpy).
	ShellSource, ShellRelay []string
	// Settings are extra topology settings.
	Settings map[string]string
}

func (o *Options) defaults() error {
	if o.Name == "" {
		o.Name = "ackcheck"
	}
	if o.StateDir != "" {
		abs, err := filepath.Abs(o.StateDir)
		if err != nil {
			return fmt.Errorf("state directory %q: %w", o.StateDir, err)
		}
		o.StateDir = abs
	}
	if o.MaxSpoutPending == 0 {
		o.MaxSpoutPending = 1000
	}
	if o.MessageTimeout == 0 {
		o.MessageTimeout = 10 * time.Second
	}
	if o.Containers == 0 {
		o.Containers = 2
	}
	if o.Copies == 0 {
		o.Copies = 3
	}
	if o.Spouts == 0 {
		o.Spouts = 2
	}
	if o.Bolts == 0 {
		o.Bolts = 2
	}
	switch {
	case o.Messages < 0:
		return fmt.Errorf("messages %d: must be ≥ 0 (0: unbounded)", o.Messages)
	case o.Rate < 0:
		return fmt.Errorf("rate %d: must be ≥ 0 (0: unlimited)", o.Rate)
	case o.MaxSpoutPending < 0:
		return fmt.Errorf("max spout pending %d: must be ≥ 0", o.MaxSpoutPending)
	case o.MessageTimeout < 0:
		return fmt.Errorf("message timeout %s: must be positive", o.MessageTimeout)
	case o.Containers < 1 || o.Copies < 1 || o.Spouts < 1 || o.Bolts < 1:
		return fmt.Errorf("containers (%d), copies (%d), spouts (%d) and bolts (%d) must be ≥ 1", o.Containers, o.Copies, o.Spouts, o.Bolts)
	}
	return nil
}

// Builder returns the topology and creates the state directory. An empty
// StateDir is allowed only where the topology's config comes from
// elsewhere (an instance of a cluster reads the submitted definition); the
// spout and the sink refuse to open without one.
func Builder(o Options) (*api.TopologyBuilder, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.StateDir != "" {
		if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
			return nil, fmt.Errorf("create the state directory: %w", err)
		}
	}
	b := api.NewTopologyBuilder(o.Name)
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetContainers(o.Containers)
	b.SetMaxSpoutPending(o.MaxSpoutPending)
	b.SetMessageTimeout(o.MessageTimeout)
	b.SetConfig(KeyMessages, strconv.FormatInt(o.Messages, 10))
	if o.StateDir != "" {
		b.SetConfig(KeyStateDir, o.StateDir)
	}
	b.SetConfig(KeyRate, strconv.Itoa(o.Rate))
	b.SetConfig(KeyCopies, strconv.Itoa(o.Copies))
	b.SetConfig(KeySinkLog, strconv.FormatBool(!o.NoSinkLog))
	for k, v := range o.Settings {
		b.SetConfig(k, v)
	}
	if len(o.ShellSource) > 0 {
		b.SetShellSpout(Source, api.ShellSpout(o.ShellSource[0], o.ShellSource[1:]...).Declare("id"), o.Spouts)
	} else {
		b.SetSpout(Source, func() api.Spout { return &SourceSpout{} }, o.Spouts)
	}
	b.SetBolt(Fanout, func() api.Bolt { return &FanoutBolt{} }, o.Bolts).ShuffleGrouping(Source)
	if len(o.ShellRelay) > 0 {
		b.SetShellBolt(Relay, api.ShellBolt(o.ShellRelay[0], o.ShellRelay[1:]...).Declare("id", "copy"), o.Bolts).FieldsGrouping(Fanout, "id")
	} else {
		b.SetBolt(Relay, func() api.Bolt { return &RelayBolt{} }, o.Bolts).FieldsGrouping(Fanout, "id")
	}
	b.SetBolt(Sink, func() api.Bolt { return &SinkBolt{} }, o.Bolts).FieldsGrouping(Relay, "id")
	return b, nil
}

// FanoutBolt emits Copies tuples (id, copy) per input, anchored on it.
type FanoutBolt struct {
	api.BaseBolt
	out    api.BoltCollector
	copies int
}

// Prepare implements api.Bolt.
func (b *FanoutBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	n, err := strconv.Atoi(ctx.Config(KeyCopies))
	if err != nil || n < 1 {
		return fmt.Errorf("%s: %q is not a number of copies", KeyCopies, ctx.Config(KeyCopies))
	}
	b.copies = n
	return nil
}

// Execute implements api.Bolt.
func (b *FanoutBolt) Execute(t api.Tuple) {
	id := t.Int64(0)
	for c := 0; c < b.copies; c++ {
		b.out.Emit(api.Values{id, int64(c)}, t)
	}
	b.out.Ack(t)
}

// DeclareOutputFields implements api.Bolt.
func (b *FanoutBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id", "copy") }

// RelayBolt passes (id, copy) on, anchored on its input.
type RelayBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

// Prepare implements api.Bolt.
func (b *RelayBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out = out
	return nil
}

// Execute implements api.Bolt.
func (b *RelayBolt) Execute(t api.Tuple) {
	b.out.Emit(api.Values{t.Int64(0), t.Int64(1)}, t)
	b.out.Ack(t)
}

// DeclareOutputFields implements api.Bolt.
func (b *RelayBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id", "copy") }

// SinkBolt appends "<id> <copy>" to sink-<task>.log for every tuple, then
// acks it: a tuple is acked only once its record is in the file.
// Tag, when set at build time (go build -ldflags "-X
// github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck.Tag=v2"),
// makes the sink record "<id> <copy> <tag> <unix ms>": which build of the
// topology recorded each tuple, and when (the upgrade tests). The tag
// "broken" makes every sink task fail to start.
var Tag string

// TagSetting, when set at build time like Tag, makes a tagged sink record
// "<Tag>@<value>" as its tag, the value being the one this sink process
// read for the setting TagSetting when it started ("-" when unset): which
// settings each process ran with (egret update --restart tests).
var TagSetting string

type SinkBolt struct {
	api.BaseBolt
	tag      string
	out      api.BoltCollector
	f        *os.File
	line     []byte
	recorded *api.Counter
	log      func(error)
	failed   bool
}

// Prepare implements api.Bolt.
func (b *SinkBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.recorded = ctx.Counter(CounterRecorded)
	b.log = out.ReportError
	if Tag == "broken" {
		return fmt.Errorf("this build of the sink is broken on purpose (ackcheck.Tag=%s)", Tag)
	}
	b.tag = Tag
	if Tag != "" && TagSetting != "" {
		v := ctx.Config(TagSetting)
		if v == "" {
			v = "-"
		}
		b.tag = Tag + "@" + v
	}
	if ctx.Config(KeySinkLog) == "false" {
		return nil
	}
	dir := ctx.Config(KeyStateDir)
	if dir == "" {
		return fmt.Errorf("%s is not set: build the topology with a state directory (--state DIR)", KeyStateDir)
	}
	f, err := openLog(filepath.Join(dir, SinkLog(ctx.TaskID())))
	if err != nil {
		return err
	}
	b.f = f
	return nil
}

// Execute implements api.Bolt.
func (b *SinkBolt) Execute(t api.Tuple) {
	if b.f != nil {
		b.line = strconv.AppendInt(b.line[:0], t.Int64(0), 10)
		b.line = append(b.line, ' ')
		b.line = strconv.AppendInt(b.line, t.Int64(1), 10)
		if b.tag != "" {
			b.line = append(b.line, ' ')
			b.line = append(b.line, b.tag...)
			b.line = append(b.line, ' ')
			b.line = strconv.AppendInt(b.line, time.Now().UnixMilli(), 10)
		}
		b.line = append(b.line, '\n')
		if _, err := b.f.Write(b.line); err != nil {
			// Not recorded: fail the tuple so that the spout replays it.
			if !b.failed {
				b.failed = true
				b.log(fmt.Errorf("record a tuple: %w", err))
			}
			b.out.Fail(t)
			return
		}
	}
	b.recorded.Inc()
	b.out.Ack(t)
}

// Cleanup implements api.Bolt.
func (b *SinkBolt) Cleanup() {
	if b.f != nil {
		_ = b.f.Close()
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *SinkBolt) DeclareOutputFields(api.OutputDeclarer) {}

// openLog opens an append-only log, first cutting a torn last line (a
// record without its newline, left by a failed write) so that the next
// record starts on a line of its own.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := cutTornLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}

// cutTornLine truncates f after its last newline.
func cutTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	buf := make([]byte, 4096)
	for pos := end; pos > 0; {
		n := int64(len(buf))
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				if keep := pos + i + 1; keep < end {
					return f.Truncate(keep)
				}
				return nil
			}
		}
	}
	if end > 0 {
		return f.Truncate(0)
	}
	return nil
}
