package healthmgr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/statemgr/memory"
)

// fakeTopo is a running topology seen through fake metrics: a spout in
// container 1 feeding a bolt in container 2.
type fakeTopo struct {
	t     *testing.T
	store *state.Store
	now   time.Time
	// The stream managers' cumulative counters and report time.
	reportAt                int64
	throttled, byLocal      [3]float64
	slowQueue, slowInQueue  float64
	slowParallelism, scales int
	scaleErr                error
	asked                   []map[string]int
}

const (
	topoName = "t"
	topoID   = "t-1"
)

func newFakeTopo(t *testing.T, config map[string]string) *fakeTopo {
	f := &fakeTopo{t: t, store: state.New(memory.NewStore().NewSession()), now: time.Unix(1_700_000_000, 0), slowParallelism: 1}
	cfg := map[string]string{topology.KeyHealthMgrEnabled: "true", topology.KeyHealthMgrThreshold: "30s", topology.KeyHealthMgrCooldown: "60s"}
	for k, v := range config {
		cfg[k] = v
	}
	f.writeTopology(cfg)
	return f
}

func (f *fakeTopo) writeTopology(cfg map[string]string) {
	top := &topology.Topology{Name: topoName, ID: topoID, Config: cfg, Components: []topology.Component{
		{Name: "source", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"x"}}}},
		{Name: "slow", Kind: topology.Bolt, Parallelism: f.slowParallelism, Inputs: []topology.Input{{Component: "source", Stream: topology.DefaultStream, Grouping: topology.Shuffle}}},
	}}
	b, err := topology.Marshal(top)
	if err != nil {
		f.t.Fatal(err)
	}
	sm, p := f.store.StateManager(), state.Path(state.TopologiesDir, topoName)
	_, err = sm.Set(context.Background(), p, b, spi.AnyVersion)
	if errors.Is(err, spi.ErrNotFound) {
		err = sm.Create(context.Background(), p, b, false)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// Stats implements StatsSource.
func (f *fakeTopo) Stats(context.Context) (*Snapshot, error) {
	s := &Snapshot{StMgrs: map[int]Report{}, Tasks: map[int]TaskReport{}}
	for ct := 1; ct <= 2; ct++ {
		m := map[string]float64{metricThrottled: f.throttled[ct], metricByLocalInstance: f.byLocal[ct]}
		if ct == 2 {
			m["stmgr.instance.2.queue.bytes"] = f.slowQueue
		} else {
			m["stmgr.instance.1.queue.bytes"] = 0
		}
		s.StMgrs[ct] = Report{UnixNanos: f.reportAt, Metrics: m}
	}
	s.Tasks[1] = TaskReport{Component: "source", Container: 1, Report: Report{UnixNanos: f.reportAt, Metrics: map[string]float64{metricInQueue: 0}}}
	s.Tasks[2] = TaskReport{Component: "slow", Container: 2, Report: Report{UnixNanos: f.reportAt, Metrics: map[string]float64{metricInQueue: f.slowInQueue}}}
	return s, nil
}

// Scale implements Scaler.
func (f *fakeTopo) Scale(_ context.Context, name string, p map[string]int) error {
	if name != topoName {
		f.t.Errorf("Scale(%q)", name)
	}
	f.asked = append(f.asked, p)
	if f.scaleErr != nil {
		return f.scaleErr
	}
	f.scales++
	f.slowParallelism = p["slow"]
	t, err := f.store.Topology(context.Background(), topoName)
	if err != nil {
		return err
	}
	f.writeTopology(t.Config)
	return nil
}

// advance moves the clock by d and makes the stream managers report: with
// bp, both throttled their spouts, and the bolt's stream manager
// initiated back pressure because of the bolt.
func (f *fakeTopo) advance(d time.Duration, bp bool) {
	f.now = f.now.Add(d)
	f.reportAt = f.now.UnixNano()
	if bp {
		for ct := 1; ct <= 2; ct++ {
			f.throttled[ct] += float64(d / 2)
		}
		f.byLocal[2] += float64(d / 2)
		f.slowQueue, f.slowInQueue = 3<<20, 1<<20
	} else {
		f.slowQueue, f.slowInQueue = 0, 0
	}
}

func (f *fakeTopo) manager() *Manager {
	m, err := New(Config{Topology: topoName, TopologyID: topoID, Store: f.store, Stats: f, Scaler: f, Now: func() time.Time { return f.now }}, zaptest.NewLogger(f.t))
	if err != nil {
		f.t.Fatal(err)
	}
	t, err := m.topology(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	set := t.HealthMgr()
	m.pol.set = Settings{Threshold: set.Threshold, Cooldown: set.Cooldown}
	m.restoreCooldown(context.Background())
	// The first reports are the detector's baseline.
	f.run(m, 1, 0, false)
	return m
}

// run makes n reports of d each (bp: under back pressure), stepping m
// after each.
func (f *fakeTopo) run(m *Manager, n int, d time.Duration, bp bool) {
	f.t.Helper()
	for range n {
		f.advance(d, bp)
		if err := m.Step(context.Background()); err != nil {
			f.t.Fatalf("Step: %v", err)
		}
	}
}

func (f *fakeTopo) decisions() []string {
	f.t.Helper()
	hd, err := f.store.HealthDecisions(context.Background(), topoName)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range hd.GetDecisions() {
		out = append(out, fmt.Sprintf("%s %s %d→%d", d.GetComponent(), d.GetAction(), d.GetOldParallelism(), d.GetNewParallelism()))
	}
	return out
}

// TestScaleUpAfterThreshold: back pressure caused by the bolt for longer
// than the threshold doubles its parallelism once, records the decision
// with its reason, and the cool-down keeps a second one away.
func TestScaleUpAfterThreshold(t *testing.T) {
	f := newFakeTopo(t, nil)
	m := f.manager()
	f.run(m, 1, 5*time.Second, true) // the episode starts
	f.run(m, 5, 5*time.Second, true) // 25s: below the 30s threshold
	if f.scales != 0 {
		t.Fatalf("scaled after 25s of back pressure (threshold 30s): %v", f.asked)
	}
	f.run(m, 1, 5*time.Second, true) // 30s
	if f.scales != 1 || f.slowParallelism != 2 {
		t.Fatalf("after 30s: %d scale-ups, parallelism %d; want 1, 2", f.scales, f.slowParallelism)
	}
	got := f.decisions()
	if len(got) != 1 || got[0] != "slow scale-up 1→2" {
		t.Fatalf("decisions %v", got)
	}
	hd, _ := f.store.HealthDecisions(context.Background(), topoName)
	d := hd.GetDecisions()[0]
	if d.GetBackpressureNanos() != int64(30*time.Second) || !strings.Contains(d.GetReason(), "slow caused back pressure for 30s") || !strings.Contains(d.GetReason(), "task 2 of slow") {
		t.Errorf("decision %v", d)
	}
	// Back pressure goes on: the cool-down (60s) holds the next decision
	// although the new episode passes the threshold at once.
	f.run(m, 11, 5*time.Second, true) // 55s after the decision
	if f.scales != 1 {
		t.Fatalf("scaled again within the cool-down: %v", f.asked)
	}
	f.run(m, 1, 5*time.Second, true) // 60s
	if f.scales != 2 || f.slowParallelism != 4 {
		t.Fatalf("after the cool-down: %d scale-ups, parallelism %d; want 2, 4", f.scales, f.slowParallelism)
	}
	if c := m.Counters(); c[MetricDecisions] != 2 || c[MetricScaleUps] != 2 || c[MetricFailures] != 0 {
		t.Errorf("counters %v", c)
	}
}

// TestTransientSpikeIgnored: back pressure shorter than the threshold,
// again and again, never scales: each break ends the episode.
func TestTransientSpikeIgnored(t *testing.T) {
	f := newFakeTopo(t, nil)
	m := f.manager()
	for range 10 {
		f.run(m, 4, 5*time.Second, true) // 15s of back pressure
		f.run(m, 1, 5*time.Second, false)
	}
	if f.scales != 0 || len(f.decisions()) != 0 {
		t.Fatalf("scaled on spikes: %v %v", f.asked, f.decisions())
	}
	// Reads without a new report neither end an episode nor make a
	// decision due.
	f.run(m, 4, 5*time.Second, true)
	for range 5 {
		f.now = f.now.Add(5 * time.Second) // no new report
		if err := m.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if f.scales != 0 {
		t.Fatalf("stale reads counted: %v", f.asked)
	}
}

// TestBound: the parallelism never exceeds the bound; at the bound the
// decision is recorded once per cool-down and nothing is changed.
func TestBound(t *testing.T) {
	f := newFakeTopo(t, map[string]string{topology.KeyHealthMgrMaxParallelism: "3", topology.KeyHealthMgrScaleFactor: "1.5", topology.KeyHealthMgrCooldown: "30s"})
	m := f.manager()
	f.run(m, 7, 5*time.Second, true)
	if f.slowParallelism != 2 { // max(1+1, ceil(1.5))
		t.Fatalf("parallelism %d, want 2", f.slowParallelism)
	}
	f.run(m, 7, 5*time.Second, true) // an episode of 30s after the decision
	if f.slowParallelism != 3 {      // ceil(3), the bound
		t.Fatalf("parallelism %d, want 3", f.slowParallelism)
	}
	f.run(m, 14, 5*time.Second, true) // two more episodes of 30s
	want := []string{"slow scale-up 1→2", "slow scale-up 2→3", "slow at-bound 3→3", "slow at-bound 3→3"}
	if got := f.decisions(); strings.Join(got, ",") != strings.Join(want, ",") || f.scales != 2 {
		t.Fatalf("decisions %v (scales %d), want %v", got, f.scales, want)
	}
}

// TestBoundByKeyGroups: the max parallelism (the number of key groups)
// caps the health manager's own bound.
func TestBoundByKeyGroups(t *testing.T) {
	f := newFakeTopo(t, map[string]string{topology.KeyHealthMgrMaxParallelism: "8", topology.KeyMaxParallelism: "2", topology.KeyHealthMgrCooldown: "30s"})
	m := f.manager()
	f.run(m, 7, 5*time.Second, true)
	f.run(m, 7, 5*time.Second, true)
	want := []string{"slow scale-up 1→2", "slow at-bound 2→2"}
	if got := f.decisions(); strings.Join(got, ",") != strings.Join(want, ",") || f.slowParallelism != 2 {
		t.Fatalf("decisions %v (parallelism %d), want %v", got, f.slowParallelism, want)
	}
}

// TestEffectivelyOnceScales: an effectively-once (stateful) topology is
// scaled up like any other (its tasks restore their key groups from the
// last checkpoint: launcher.Update).
func TestEffectivelyOnceScales(t *testing.T) {
	f := newFakeTopo(t, map[string]string{topology.KeyDeliveryMode: string(topology.EffectivelyOnce)})
	m := f.manager()
	f.run(m, 7, 5*time.Second, true)
	if got, want := f.decisions(), []string{"slow scale-up 1→2"}; strings.Join(got, ",") != strings.Join(want, ",") || f.slowParallelism != 2 {
		t.Fatalf("decisions %v (parallelism %d), want %v", got, f.slowParallelism, want)
	}
}

// TestFailedUpdateRecorded: a failed update is a decision with its error,
// and the cool-down applies to it too.
func TestFailedUpdateRecorded(t *testing.T) {
	f := newFakeTopo(t, nil)
	f.scaleErr = errors.New("the scheduler is down")
	m := f.manager()
	f.run(m, 7, 5*time.Second, true)
	f.run(m, 6, 5*time.Second, true) // within the cool-down
	hd, _ := f.store.HealthDecisions(context.Background(), topoName)
	if len(hd.GetDecisions()) != 1 || len(f.asked) != 1 {
		t.Fatalf("decisions %v, asked %v", hd.GetDecisions(), f.asked)
	}
	if d := hd.GetDecisions()[0]; d.GetAction() != ActionFailed || d.GetError() != "the scheduler is down" || d.GetNewParallelism() != 2 {
		t.Errorf("decision %v", d)
	}
	if c := m.Counters(); c[MetricFailures] != 1 || c[MetricScaleUps] != 0 {
		t.Errorf("counters %v", c)
	}
}

// TestCooldownSurvivesRestart: a new health manager reads the last
// decision and does not decide again within its cool-down.
func TestCooldownSurvivesRestart(t *testing.T) {
	f := newFakeTopo(t, nil)
	m := f.manager()
	f.run(m, 7, 5*time.Second, true)
	if f.scales != 1 {
		t.Fatalf("scales %d", f.scales)
	}
	m2 := f.manager()                 // restarted
	f.run(m2, 7, 5*time.Second, true) // 35s after the decision
	if f.scales != 1 {
		t.Fatalf("a restarted health manager ignored the cool-down: %v", f.asked)
	}
	f.run(m2, 5, 5*time.Second, true) // 60s
	if f.scales != 2 {
		t.Fatalf("no scale-up after the cool-down: %v", f.asked)
	}
}

// TestNoCulpritFromPeer: back pressure a stream manager initiated because
// of a slow peer (no local instance) names no component: no decision.
func TestNoCulpritFromPeer(t *testing.T) {
	f := newFakeTopo(t, nil)
	m := f.manager()
	for range 10 {
		f.now = f.now.Add(5 * time.Second)
		f.reportAt = f.now.UnixNano()
		f.throttled[1] += float64(time.Second)
		f.throttled[2] += float64(time.Second)
		if err := m.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.asked) != 0 || len(f.decisions()) != 0 {
		t.Fatalf("decided without a culprit: %v %v", f.asked, f.decisions())
	}
}

func TestNextParallelism(t *testing.T) {
	for _, c := range []struct {
		n, bound int
		f        float64
		want     int
	}{{1, 8, 2, 2}, {3, 8, 2, 6}, {5, 8, 2, 8}, {2, 8, 1, 3}, {4, 8, 1.1, 5}, {7, 7, 2, 7}} {
		if got := NextParallelism(c.n, c.bound, c.f); got != c.want {
			t.Errorf("NextParallelism(%d, %d, %v) = %d, want %d", c.n, c.bound, c.f, got, c.want)
		}
	}
}

func TestParseStats(t *testing.T) {
	doc := `{"components":{"slow":{"tasks":{"2":{"container":2,"unix_nanos":5,"metrics":{"gateway.in.queue.bytes":7}}},"sums":{}}},
	"containers":{"2":{"stmgr":{"unix_nanos":6,"metrics":{"stmgr.instance.2.queue.bytes":9,"stmgr.backpressure.active":1}},"metricsmgr":{"unix_nanos":1,"metrics":{}}}}}`
	s, err := ParseStats(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if tr := s.Tasks[2]; tr.Component != "slow" || tr.Container != 2 || tr.Metrics[metricInQueue] != 7 {
		t.Errorf("task %+v", tr)
	}
	if r := s.StMgrs[2]; r.UnixNanos != 6 || stmgrTaskQueues(r.Metrics)[2] != 9 {
		t.Errorf("stmgr %+v", r)
	}
	if _, err := ParseStats(strings.NewReader("nope")); err == nil {
		t.Error("garbage parsed")
	}
}

// TestRun: Run reads the settings, steps at every tick, survives a failed
// read, and returns when its context ends.
func TestRun(t *testing.T) {
	if _, err := New(Config{Topology: topoName}, nil); err == nil {
		t.Fatal("New without a store, stats or scaler succeeded")
	}
	f := newFakeTopo(t, nil)
	// Each read of the metrics takes the next step of the script, in
	// Run's goroutine.
	script := []func() error{
		func() error { return errors.New("the topology manager is not up yet") }, // logged, not fatal
		func() error { f.advance(0, false); return nil },                         // the baseline
	}
	for range 7 {
		script = append(script, func() error { f.advance(5*time.Second, true); return nil })
	}
	stats := &scriptedStats{f: f, script: script}
	tick := make(chan time.Time)
	m, err := New(Config{Topology: topoName, TopologyID: topoID, Store: f.store, Stats: stats, Scaler: f, Now: func() time.Time { return f.now }, Tick: tick}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	for range len(script) + 1 { // the last tick is taken once the script's last step is done
		tick <- time.Time{}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if f.scales != 1 || f.slowParallelism != 2 {
		t.Fatalf("scales %d, parallelism %d; want 1, 2", f.scales, f.slowParallelism)
	}
}

// scriptedStats runs the next step of its script before each read.
type scriptedStats struct {
	f      *fakeTopo
	script []func() error
}

func (s *scriptedStats) Stats(ctx context.Context) (*Snapshot, error) {
	if len(s.script) > 0 {
		step := s.script[0]
		s.script = s.script[1:]
		if err := step(); err != nil {
			return nil, err
		}
	}
	return s.f.Stats(ctx)
}
