package api_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/instance/inproc"
	"github.com/egret-stream/egret/multilang/multilangtest"
)

func TestMain(m *testing.M) {
	multilangtest.Main()
	os.Exit(m.Run())
}

// numbers emits 0..n-1 with the number as message id and counts acks and
// fails.
type numbers struct {
	api.BaseSpout
	out          api.SpoutCollector
	n, next      int64
	acked, fails *atomic.Int64
}

func (s *numbers) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }
func (s *numbers) NextTuple() {
	if s.next < s.n {
		s.out.Emit(api.Values{s.next, fmt.Sprint("n", s.next)}, s.next)
		s.next++
	}
}
func (s *numbers) Ack(any)                                  { s.acked.Add(1) }
func (s *numbers) Fail(any)                                 { s.fails.Add(1) }
func (s *numbers) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n", "s") }

// sink records the first value of every tuple and acks it.
type sink struct {
	api.BaseBolt
	out  api.BoltCollector
	mu   *sync.Mutex
	seen map[int64]int
}

func (b *sink) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *sink) Execute(t api.Tuple) {
	b.mu.Lock()
	b.seen[t.Int64(0)]++
	b.mu.Unlock()
	b.out.Ack(t)
}
func (b *sink) DeclareOutputFields(api.OutputDeclarer) {}

// run runs b in this process until done holds (or a minute passes).
func run(t *testing.T, b *api.TopologyBuilder, done func() bool) *inproc.Summary {
	t.Helper()
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{ResourcesDir: t.TempDir(), Logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		deadline := time.Now().Add(time.Minute)
		for !done() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	s, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fakeShell(s *api.Shell, mode string) *api.Shell {
	_, env := multilangtest.Command(mode)
	return s.Env(multilangtest.Env, strings.TrimPrefix(env[len(env)-1], multilangtest.Env+"="))
}

func counter(s *inproc.Summary, component, name string) int64 {
	for _, c := range s.Components {
		if c.Name == component {
			return c.Counters[name]
		}
	}
	return 0
}

// TestShellBolt: a Go spout feeds a shell bolt (a fake multilang
// component) feeding a Go sink, at-least-once: every tuple reaches the
// sink once and every spout tuple is acked, the subprocess's emits and
// acks arriving through Pump.
func TestShellBolt(t *testing.T) {
	const n = 2000
	var acked, fails atomic.Int64
	var mu sync.Mutex
	seen := map[int64]int{}
	b := api.NewTopologyBuilder("shellbolt")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("numbers", func() api.Spout { return &numbers{n: n, acked: &acked, fails: &fails} }, 1)
	cmd, _ := multilangtest.Command(multilangtest.EchoBolt)
	b.SetShellBolt("echo", fakeShell(api.ShellBolt(cmd).Declare("n", "s"), multilangtest.EchoBolt), 2).ShuffleGrouping("numbers")
	b.SetBolt("sink", func() api.Bolt { return &sink{mu: &mu, seen: seen} }, 1).ShuffleGrouping("echo")
	s := run(t, b, func() bool { return acked.Load() == n })
	if acked.Load() != n || fails.Load() != 0 {
		t.Errorf("%d acked and %d failed of %d, want all acked", acked.Load(), fails.Load(), n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := int64(0); i < n; i++ {
		if seen[i] != 1 {
			t.Fatalf("tuple %d reached the sink %d times, want once", i, seen[i])
		}
	}
	if got := counter(s, "echo", "multilang.starts"); got != 2 {
		t.Errorf("multilang.starts = %d, want 2 (one per task)", got)
	}
}

// TestShellBoltFails: a subprocess's fails fail the spout tuples.
func TestShellBoltFails(t *testing.T) {
	const n = 100
	var acked, fails atomic.Int64
	b := api.NewTopologyBuilder("shellfail")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("numbers", func() api.Spout { return &numbers{n: n, acked: &acked, fails: &fails} }, 1)
	cmd, _ := multilangtest.Command(multilangtest.FailBolt)
	b.SetShellBolt("fail", fakeShell(api.ShellBolt(cmd), multilangtest.FailBolt), 1).ShuffleGrouping("numbers")
	run(t, b, func() bool { return fails.Load() == n })
	if acked.Load() != 0 || fails.Load() != n {
		t.Errorf("%d acked and %d failed of %d, want all failed", acked.Load(), fails.Load(), n)
	}
}

// TestShellBoltRestart: a subprocess that breaks the protocol is killed
// and restarted; the tuples it held fail at once (not at their timeout)
// and are counted.
func TestShellBoltRestart(t *testing.T) {
	const n = 50
	var acked, fails atomic.Int64
	b := api.NewTopologyBuilder("shellrestart")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetMessageTimeout(time.Hour)
	b.SetSpout("numbers", func() api.Spout { return &numbers{n: n, acked: &acked, fails: &fails} }, 1)
	cmd, _ := multilangtest.Command(multilangtest.GarbageBolt)
	b.SetShellBolt("garbage", fakeShell(api.ShellBolt(cmd), multilangtest.GarbageBolt), 1).ShuffleGrouping("numbers")
	s := run(t, b, func() bool { return fails.Load() == n })
	if fails.Load() != n {
		t.Errorf("%d of %d tuples failed, want all (the subprocess never acks)", fails.Load(), n)
	}
	if starts, crashes := counter(s, "garbage", "multilang.starts"), counter(s, "garbage", "multilang.crashes"); starts < 2 || crashes < 1 {
		t.Errorf("multilang.starts = %d, crashes = %d; want a restart after the protocol error", starts, crashes)
	}
}

// sinkAll records every tuple's first value.
func newSink(mu *sync.Mutex, seen map[int64]int) api.BoltFactory {
	return func() api.Bolt { return &sink{mu: mu, seen: seen} }
}

// TestShellSpout: a shell spout's emits reach a Go bolt; acks go back to
// the subprocess, which reports them with metrics commands.
func TestShellSpout(t *testing.T) {
	const n = 300
	var mu sync.Mutex
	seen := map[int64]int{}
	b := api.NewTopologyBuilder("shellspout")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetConfig("fake.n", fmt.Sprint(n))
	cmd, _ := multilangtest.Command(multilangtest.CountSpout)
	b.SetShellSpout("count", fakeShell(api.ShellSpout(cmd).Declare("n"), multilangtest.CountSpout), 1)
	b.SetBolt("sink", newSink(&mu, seen), 1).ShuffleGrouping("count")
	s := run(t, b, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("the sink saw %d of %d numbers", len(seen), n)
	}
	// Acks reach the subprocess after the sink's; the run drains them.
	if got := counter(s, "count", "multilang.acked"); got != n {
		t.Errorf("the subprocess got %d acks, want %d", got, n)
	}
}

func TestShellBuilderChecks(t *testing.T) {
	b := api.NewTopologyBuilder("bad")
	b.SetShellSpout("s", api.ShellBolt("python3", "x.py").Declare("a"), 1)
	b.SetShellBolt("b", api.ShellBolt(""), 1).ShuffleGrouping("s")
	_, err := b.Build()
	if err == nil {
		t.Fatal("Build succeeded")
	}
	for _, want := range []string{`component "s": a ShellBolt is given to SetShellSpout`, `component "b": shell component without a command`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build error %q does not say %q", err, want)
		}
	}
	b = api.NewTopologyBuilder("good")
	b.SetShellSpout("s", api.ShellSpout("python3", "s.py").Declare("a").DeclareDirectStream("d", "x"), 1)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := topo.Logical.Component("s")
	if len(c.Outputs) != 2 || c.Outputs[0].Fields[0] != "a" || !c.Outputs[1].Direct {
		t.Errorf("declared outputs %+v", c.Outputs)
	}
}
