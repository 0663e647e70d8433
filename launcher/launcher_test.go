package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/launcher"
	"github.com/egret-stream/egret/proto/egretpb"

	_ "github.com/egret-stream/egret/packing/roundrobin"
	_ "github.com/egret-stream/egret/statemgr/localfs"
	_ "github.com/egret-stream/egret/statemgr/zookeeper"
	_ "github.com/egret-stream/egret/uploaders/localfs"
)

// fakeScheduler records the calls the launcher makes; Update fails while
// failUpdate is set, after recording the job (as a half-applied update of a
// real resource manager would), and Probe returns probeErr.
type fakeScheduler struct {
	mu         sync.Mutex
	calls      []string
	updates    []*plan.PackingPlan
	failUpdate error
	failKill   error
	probeErr   error
}

func (f *fakeScheduler) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeScheduler) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeScheduler) Schedule(_ context.Context, job spi.Job) error {
	f.record("schedule " + job.Topology)
	return nil
}

func (f *fakeScheduler) Kill(_ context.Context, topology string) error {
	f.record("kill " + topology)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failKill
}

func (f *fakeScheduler) Restart(_ context.Context, topology string, _ int) error {
	f.record("restart " + topology)
	return nil
}

func (f *fakeScheduler) Update(_ context.Context, job spi.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("update %s %d", job.Topology, len(job.Plan.Containers)))
	f.updates = append(f.updates, job.Plan)
	err := f.failUpdate
	f.failUpdate = nil // the rollback's update succeeds
	return err
}

func (f *fakeScheduler) Probe(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.probeErr
}

func (f *fakeScheduler) JobLinks(context.Context, string) ([]string, error) { return nil, nil }
func (f *fakeScheduler) Close() error                                       { return nil }

var (
	_ spi.Scheduler = (*fakeScheduler)(nil)
	_ spi.Prober    = (*fakeScheduler)(nil)
)

// backends are the built-in state manager, uploader and packing named by
// the cluster config, and the fake scheduler.
type backends struct {
	sched *fakeScheduler
	log   *zap.Logger
}

func (b *backends) StateManager(_ context.Context, cfg spi.Config) (spi.StateManager, error) {
	f, err := spi.LookupStateManager(cfg.String("egret.statemgr", ""))
	if err != nil {
		return nil, err
	}
	return f(cfg, b.log)
}

func (b *backends) Uploader(_ context.Context, cfg spi.Config) (spi.Uploader, error) {
	f, err := spi.LookupUploader(cfg.String("egret.uploader", ""))
	if err != nil {
		return nil, err
	}
	return f(cfg, b.log)
}

func (b *backends) Packing(_ context.Context, cfg spi.Config) (spi.Packing, error) {
	f, err := spi.LookupPacking(cfg.String("egret.packing", ""))
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

func (b *backends) Scheduler(context.Context, spi.Config) (spi.Scheduler, error) { return b.sched, nil }

// fixture is a launcher on a real state manager (localfs, or ZooKeeper
// for the localzk cluster) with the fake scheduler.
type fixture struct {
	l     *launcher.Launcher
	sched *fakeScheduler
	store *state.Store
	sm    spi.StateManager
}

func newFixture(t *testing.T, cluster string, props ...string) *fixture {
	t.Helper()
	home := t.TempDir()
	c, err := conf.Load(conf.LoadOptions{Cluster: cluster, Role: "tester", Environ: "test", EgretHome: home,
		ConfigPath: filepath.Join(home, "conf"), Overrides: props})
	if err != nil {
		t.Fatalf("load the %s cluster config: %v", cluster, err)
	}
	log := zaptest.NewLogger(t)
	f := &fixture{sched: &fakeScheduler{}}
	b := &backends{sched: f.sched, log: log}
	f.l = &launcher.Launcher{Cluster: c, Backends: b, Log: log, LockTimeout: 30 * time.Second}
	f.sm, err = b.StateManager(context.Background(), c.Config())
	if err != nil {
		t.Fatalf("open the state manager: %v", err)
	}
	t.Cleanup(func() { f.sm.Close() })
	f.store = state.New(f.sm)
	return f
}

func newZooKeeperFixture(t *testing.T) *fixture {
	addr := zktest.Start(t)
	return newFixture(t, "localzk", "egret.statemgr.connection.string="+addr, "egret.statemgr.session.timeout=5s")
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// testTopology has a spout and a bolt with two tasks.
func testTopology(name string) *topology.Topology {
	return &topology.Topology{Name: name, ID: name + "-0001", Components: []topology.Component{
		{Name: "sentence", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"word"}}}},
		{Name: "count", Kind: topology.Bolt, Parallelism: 2, Inputs: []topology.Input{{Component: "sentence", Stream: topology.DefaultStream, Grouping: topology.Shuffle}}},
	}}
}

// submitState writes what submit writes for a topology of two containers,
// and a physical plan in the given state, as its topology manager would.
func (f *fixture) submitState(t *testing.T, name string, st egretpb.TopologyState) (*topology.Topology, *plan.PackingPlan) {
	t.Helper()
	tp := testTopology(name)
	tp.Config = map[string]string{topology.KeyContainers: "2"}
	packer, err := f.l.Backends.Packing(context.Background(), f.l.Cluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	pp, err := packer.Pack(tp)
	if err != nil {
		t.Fatal(err)
	}
	pp.TopologyID = tp.ID
	es := &egretpb.ExecutionState{TopologyName: name, TopologyId: tp.ID, Cluster: "local", Role: "tester", Environ: "test", SubmitTimeUnix: time.Now().Unix()}
	ctx := ctxFor(t)
	if err := f.store.Submit(ctx, state.Submission{Topology: tp, Plan: pp, ExecutionState: es}); err != nil {
		t.Fatal(err)
	}
	phys := &egretpb.PhysicalPlan{Topology: topology.ToProto(tp), Packing: pp.ToProto(), State: st, Version: 1}
	if err := f.store.SetPhysicalPlan(ctx, name, phys); err != nil {
		t.Fatal(err)
	}
	return tp, pp
}

// fakeTManager serves the topology manager's control endpoints and
// records the requests; it registers its location like a topology manager.
type fakeTManager struct {
	mu    sync.Mutex
	posts []string
}

func (f *fixture) startTManager(t *testing.T, name string) *fakeTManager {
	t.Helper()
	tm := &fakeTManager{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tm.mu.Lock()
		tm.posts = append(tm.posts, r.URL.Path)
		tm.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var p int32
	fmt.Sscan(port, &p)
	loc := &egretpb.TManagerLocation{TopologyName: name, TopologyId: name + "-0001", Host: "127.0.0.1", HttpPort: p}
	if err := f.store.RegisterTManager(ctxFor(t), loc); err != nil {
		t.Fatal(err)
	}
	return tm
}

func (tm *fakeTManager) Posts() []string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return append([]string(nil), tm.posts...)
}

// damage is one way a state node goes bad.
type damage struct {
	name string
	// zk damages the node through the state manager (ZooKeeper stores
	// plain bytes); file damages localfs's node file, when set.
	zk   func(data []byte) []byte
	file func(b []byte) []byte
}

var damages = []damage{
	{name: "truncate",
		zk:   func(b []byte) []byte { return b[:len(b)/3] },
		file: func(b []byte) []byte { return b[:len(b)-len(b)/3] }},
	{name: "garbage header",
		zk:   func(b []byte) []byte { return append([]byte{0xff, 0xff, 0xff, 0x07}, b...) },
		file: func(b []byte) []byte { return append([]byte("{\"v\":garbage\n"), b...) }},
	{name: "wrong type"}, // the node holds another node kind's bytes
}

// nodeKinds are the persistent nodes of a topology, each with the bytes of
// another kind for the wrong-type damage.
var nodeKinds = []struct{ dir, other string }{
	{state.TopologiesDir, state.ExecutionStateDir},
	{state.PackingPlansDir, state.TopologiesDir},
	{state.ExecutionStateDir, state.PackingPlansDir},
	{state.PhysicalPlansDir, state.ExecutionStateDir},
}

func (f *fixture) damage(t *testing.T, d damage, dir, other, name string, localfsRoot string) {
	t.Helper()
	ctx := ctxFor(t)
	path := state.Path(dir, name)
	n, err := f.sm.Get(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case d.zk == nil:
		o, err := f.sm.Get(ctx, state.Path(other, name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.sm.Set(ctx, path, o.Data, spi.AnyVersion)
		if err != nil {
			t.Fatal(err)
		}
	case localfsRoot != "":
		file := filepath.Join(localfsRoot, "tree", strings.TrimPrefix(path, "/"), "@node")
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, d.file(b), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		if _, err := f.sm.Set(ctx, path, d.zk(n.Data), spi.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
}

// corruptState damages each node kind of one topology in each way and
// checks that list shows the healthy topology and marks the damaged one
// (naming the node), and that kill removes the damaged one so that the
// name can be submitted again.
func corruptState(t *testing.T, newFix func(t *testing.T) (*fixture, string)) {
	for _, d := range damages {
		for _, k := range nodeKinds {
			t.Run(d.name+" "+strings.TrimPrefix(k.dir, "/"), func(t *testing.T) {
				f, root := newFix(t)
				ctx := ctxFor(t)
				f.submitState(t, "good", egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
				f.startTManager(t, "good")
				f.submitState(t, "bad", egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
				f.damage(t, d, k.dir, k.other, "bad", root)

				infos, err := f.l.List(ctx)
				if err != nil {
					t.Fatalf("List with a damaged node: %v", err)
				}
				if len(infos) != 2 || infos[0].Name != "bad" || infos[1].Name != "good" {
					t.Fatalf("List = %+v, want bad and good", infos)
				}
				bad, good := infos[0], infos[1]
				if bad.State != "corrupt" || !strings.Contains(bad.Problem, state.Path(k.dir, "bad")) || strings.Contains(bad.Problem, "\n") {
					t.Errorf("the damaged topology is listed as %q with problem %q; want corrupt and one line naming %s", bad.State, bad.Problem, state.Path(k.dir, "bad"))
				}
				if good.State != "running" || good.Problem != "" || good.Instances != 3 {
					t.Errorf("the healthy topology is listed as %+v, want running with 3 instances and no problem", good)
				}
				if err := f.l.SetActive(ctx, "bad", false); k.dir == state.TopologiesDir && !errors.Is(err, spi.ErrCorrupt) {
					t.Errorf("deactivate of a topology with a damaged definition: %v, want an error wrapping spi.ErrCorrupt", err)
				}

				if err := f.l.Kill(ctx, "bad", launcher.KillOptions{}); err != nil {
					t.Fatalf("Kill of the damaged topology: %v", err)
				}
				if present, err := f.store.Present(ctx, "bad"); err != nil || len(present) > 0 {
					t.Errorf("after Kill the damaged topology still has %v (%v)", present, err)
				}
				if infos, err := f.l.List(ctx); err != nil || len(infos) != 1 || infos[0].Name != "good" {
					t.Errorf("List after Kill = %+v, %v; want only good", infos, err)
				}
				f.submitState(t, "bad", egretpb.TopologyState_TOPOLOGY_STATE_RUNNING) // the name is free again
			})
		}
	}
}

func TestCorruptStateLocalFS(t *testing.T) {
	corruptState(t, func(t *testing.T) (*fixture, string) {
		f := newFixture(t, "local")
		return f, f.l.Cluster.Config().String("egret.statemgr.root.path", "")
	})
}

func TestCorruptStateZooKeeper(t *testing.T) {
	addr := zktest.Start(t) // one server for all subtests, a root each
	corruptState(t, func(t *testing.T) (*fixture, string) {
		root := "/egret-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
		return newFixture(t, "localzk", "egret.statemgr.connection.string="+addr, "egret.statemgr.session.timeout=5s",
			"egret.statemgr.root.path="+root), ""
	})
}

// TestPartialStateListedAndKilled: a topology with only some of its nodes
// (an interrupted submit or kill) is listed as partial and removed by kill.
func TestPartialStateListedAndKilled(t *testing.T) {
	f := newFixture(t, "local")
	ctx := ctxFor(t)
	f.submitState(t, "half", egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	if err := f.sm.Delete(ctx, state.Path(state.TopologiesDir, "half"), spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	infos, err := f.l.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].State != "partial" || !strings.Contains(infos[0].Problem, "/topologies/half") {
		t.Fatalf("List = %+v, %v; want half as partial, naming /topologies/half", infos, err)
	}
	if err := f.l.Kill(ctx, "half", launcher.KillOptions{}); err != nil {
		t.Fatalf("Kill of a partial topology: %v", err)
	}
	if present, err := f.store.Present(ctx, "half"); err != nil || len(present) > 0 {
		t.Errorf("after Kill: %v (%v)", present, err)
	}
}

// TestListReportsADeadScheduler: list shows what the scheduler's probe
// says, and a topology whose topology manager is gone as down.
func TestListReportsADeadScheduler(t *testing.T) {
	f := newFixture(t, "local")
	ctx := ctxFor(t)
	f.submitState(t, "wc", egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	f.sched.probeErr = errors.New("the scheduler service is not running")
	infos, err := f.l.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].State != "down" || infos[0].Problem != "the scheduler service is not running" {
		t.Fatalf("List = %+v, %v; want wc down with the probe's problem", infos, err)
	}
	if _, err := f.l.Metrics(ctx, "wc"); err == nil || !strings.Contains(err.Error(), "is down: the scheduler service is not running") {
		t.Errorf("Metrics of a topology whose scheduler is dead: %v", err)
	}
	f.sched.probeErr = nil
	if err := f.l.SetActive(ctx, "wc", true); err == nil || !strings.Contains(err.Error(), "topology manager (container 0) is not running") {
		t.Errorf("activate of a topology without a topology manager: %v", err)
	}
}

// rescaleFixture is a running topology with a topology manager that
// records activation requests.
func rescaleFixture(t *testing.T, f *fixture) (*topology.Topology, *plan.PackingPlan, *fakeTManager) {
	tp, pp := f.submitState(t, "wc", egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	return tp, pp, f.startTManager(t, "wc")
}

func (f *fixture) checkUnchanged(t *testing.T, tp *topology.Topology, pp *plan.PackingPlan) {
	t.Helper()
	ctx := ctxFor(t)
	gotPlan, _, err := f.store.PackingPlan(ctx, "wc")
	if err != nil || !proto.Equal(gotPlan.ToProto(), pp.ToProto()) {
		t.Errorf("packing plan after the failed update: %v (%v), want the previous one %v", gotPlan, err, pp)
	}
	gotTopo, err := f.store.Topology(ctx, "wc")
	if err != nil || !proto.Equal(topology.ToProto(gotTopo), topology.ToProto(tp)) {
		t.Errorf("topology after the failed update: %v (%v), want the previous one", gotTopo, err)
	}
}

// TestUpdateRollsBackWhenTheSchedulerFails: a failed rescale restores the
// previous plan. A rescale that stops instances (scale-down) deactivates
// the topology around the change and reactivates it in the rollback; one
// that only adds instances leaves it running.
func TestUpdateRollsBackWhenTheSchedulerFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		fix  func(t *testing.T) *fixture
	}{
		{"localfs", func(t *testing.T) *fixture { return newFixture(t, "local") }},
		{"zookeeper", newZooKeeperFixture},
	} {
		for _, sc := range []struct {
			name   string
			opts   launcher.UpdateOptions
			calls  string
			posts  string
			undone []string
		}{
			{"scale-down", launcher.UpdateOptions{Parallelism: map[string]int{"count": 1}}, "update wc 2, update wc 2", "/deactivate, /activate",
				[]string{"restore the previous packing plan (containers 1..2)", "reactivate"}},
			{"scale-up", launcher.UpdateOptions{Parallelism: map[string]int{"count": 4}, Containers: 3}, "update wc 3, update wc 2", "",
				[]string{"restore the previous packing plan (containers 1..2)"}},
		} {
			t.Run(tc.name+"/"+sc.name, func(t *testing.T) {
				f := tc.fix(t)
				tp, pp, tm := rescaleFixture(t, f)
				f.sched.failUpdate = errors.New("resource manager refused the job")
				err := f.l.Update(ctxFor(t), "wc", sc.opts)
				if err == nil {
					t.Fatal("Update succeeded although the scheduler failed")
				}
				for _, want := range append([]string{"resource manager refused the job", "rolled back"}, sc.undone...) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				f.checkUnchanged(t, tp, pp)
				if got := strings.Join(f.sched.Calls(), ", "); got != sc.calls {
					t.Errorf("scheduler calls: %s; want %s (the new plan, then the previous one)", got, sc.calls)
				}
				if got := strings.Join(tm.Posts(), ", "); got != sc.posts {
					t.Errorf("topology manager requests: %q; want %q", got, sc.posts)
				}
			})
		}
	}
}

// TestKillThatFailsAfterADrainRestoresActivation: a drained kill whose
// scheduler fails leaves the topology as it was: spouts the drain
// deactivated are activated again, a topology an operator deactivated
// stays deactivated; the state stays.
func TestKillThatFailsAfterADrainRestoresActivation(t *testing.T) {
	for _, tc := range []struct {
		state egretpb.TopologyState
		posts string
	}{
		{egretpb.TopologyState_TOPOLOGY_STATE_RUNNING, "/deactivate /activate"},
		{egretpb.TopologyState_TOPOLOGY_STATE_PAUSED, "/deactivate"},
	} {
		t.Run(tc.state.String(), func(t *testing.T) {
			f := newFixture(t, "local")
			tp, pp := f.submitState(t, "wc", tc.state)
			tm := f.startTManager(t, "wc")
			f.sched.failKill = errors.New("resource manager unreachable")
			err := f.l.Kill(ctxFor(t), "wc", launcher.KillOptions{DrainTimeout: 300 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), "resource manager unreachable") {
				t.Fatalf("Kill = %v, want the scheduler's error", err)
			}
			var posts []string
			for _, p := range tm.Posts() {
				if p != "/stats" {
					posts = append(posts, p)
				}
			}
			if got := strings.Join(posts, " "); got != tc.posts {
				t.Errorf("topology manager requests %q, want %q", got, tc.posts)
			}
			f.checkUnchanged(t, tp, pp)
		})
	}
}

// TestUpdateKeepsADeactivatedTopologyDeactivated: the rollback restores
// the previous activation state, which need not be active.
func TestUpdateKeepsADeactivatedTopologyDeactivated(t *testing.T) {
	f := newFixture(t, "local")
	tp, pp := f.submitState(t, "wc", egretpb.TopologyState_TOPOLOGY_STATE_PAUSED)
	tm := f.startTManager(t, "wc")
	f.sched.failUpdate = errors.New("no")
	if err := f.l.Update(ctxFor(t), "wc", launcher.UpdateOptions{Parallelism: map[string]int{"count": 3}}); err == nil {
		t.Fatal("Update succeeded although the scheduler failed")
	}
	f.checkUnchanged(t, tp, pp)
	if posts := tm.Posts(); len(posts) != 0 {
		t.Errorf("a deactivated topology got %v", posts)
	}
}

// TestUpdateValidatesBeforeChanging: an update that cannot be applied is
// refused before the topology is deactivated or anything is written.
func TestUpdateValidatesBeforeChanging(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     launcher.UpdateOptions
		probe    error
		want     string
		badInput bool
	}{
		{"unknown component", launcher.UpdateOptions{Parallelism: map[string]int{"nosuch": 2}}, nil, `no component "nosuch" (components: sentence, count)`, true},
		{"zero tasks", launcher.UpdateOptions{Parallelism: map[string]int{"count": 0}}, nil, "at least 1", true},
		{"more tasks than key groups", launcher.UpdateOptions{Parallelism: map[string]int{"count": 129}}, nil, `component "count": parallelism 129 exceeds the max parallelism 128`, true},
		{"more containers than tasks", launcher.UpdateOptions{Containers: 9}, nil, "repack", false},
		{"scheduler down", launcher.UpdateOptions{Parallelism: map[string]int{"count": 3}}, errors.New("the scheduler service is not running"), "cannot update topology \"wc\": the scheduler service is not running", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "local")
			tp, pp, tm := rescaleFixture(t, f)
			f.sched.probeErr = tc.probe
			err := f.l.Update(ctxFor(t), "wc", tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Update = %v, want an error containing %q", err, tc.want)
			}
			if launcher.IsBadInput(err) != tc.badInput {
				t.Errorf("IsBadInput(%v) = %v, want %v", err, !tc.badInput, tc.badInput)
			}
			f.checkUnchanged(t, tp, pp)
			if calls, posts := f.sched.Calls(), tm.Posts(); len(calls)+len(posts) > 0 {
				t.Errorf("a refused update called the scheduler %v and the topology manager %v", calls, posts)
			}
		})
	}
}

// TestLockSerializesCommands: while another command holds a topology's
// lock, kill and update wait for it, and give up with a clear error after
// LockTimeout.
func TestLockSerializesCommands(t *testing.T) {
	f := newFixture(t, "local")
	f.submitState(t, "wc", egretpb.TopologyState_TOPOLOGY_STATE_PAUSED)
	other, err := f.l.Backends.StateManager(context.Background(), f.l.Cluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	unlock, err := state.New(other).Lock(ctxFor(t), "wc")
	if err != nil {
		t.Fatal(err)
	}
	f.l.LockTimeout = 300 * time.Millisecond
	err = f.l.Kill(ctxFor(t), "wc", launcher.KillOptions{})
	if err == nil || !strings.Contains(err.Error(), `another egret command has been changing topology "wc"`) {
		t.Fatalf("Kill while another command holds the lock: %v", err)
	}
	err = f.l.Restart(ctxFor(t), "wc", spi.AllContainers)
	if err == nil || !strings.Contains(err.Error(), `another egret command has been changing topology "wc"`) {
		t.Fatalf("Restart while another command holds the lock: %v", err)
	}
	err = f.l.Update(ctxFor(t), "wc", launcher.UpdateOptions{Parallelism: map[string]int{"count": 3}})
	if err == nil || !strings.Contains(err.Error(), `another egret command has been changing topology "wc"`) {
		t.Fatalf("Update while another command holds the lock: %v", err)
	}
	if calls := f.sched.Calls(); len(calls) > 0 {
		t.Errorf("Kill without the lock called the scheduler: %v", calls)
	}
	f.l.LockTimeout = time.Minute
	done := make(chan error, 1)
	go func() { done <- f.l.Kill(ctxFor(t), "wc", launcher.KillOptions{}) }()
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Kill once the lock was released: %v", err)
	}
}

// noProbe is the fake scheduler without its Prober side: a scheduler that
// cannot tell whether it runs a topology's job.
type noProbe struct{ spi.Scheduler }

type noProbeBackends struct{ *backends }

func (b noProbeBackends) Scheduler(context.Context, spi.Config) (spi.Scheduler, error) {
	return noProbe{b.sched}, nil
}

// TestKillOfNothing: a kill of a misspelled name names the nearest
// topology and touches nothing; a second kill says that nothing was left
// to stop; a kill of a topology whose state is gone but whose job the
// scheduler still runs stops its containers; a scheduler that cannot tell
// is asked to stop any container left, and the kill still says that there
// was no topology. Each error matches ErrNothingToKill.
func TestKillOfNothing(t *testing.T) {
	f := newFixture(t, "local")
	ctx := ctxFor(t)
	f.submitState(t, "wordcount", egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	f.sched.probeErr = fmt.Errorf("no job: %w", spi.ErrNotFound)
	err := f.l.Kill(ctx, "wordcuont", launcher.KillOptions{})
	if !errors.Is(err, launcher.ErrNothingToKill) || !strings.Contains(err.Error(), `did you mean "wordcount"?`) {
		t.Fatalf("kill of a misspelled name: %v; want no topology, did you mean wordcount", err)
	}
	if calls := f.sched.Calls(); len(calls) != 0 {
		t.Errorf("the scheduler was called: %v", calls)
	}
	if present, _ := f.store.Present(ctx, "wordcount"); len(present) == 0 {
		t.Error("the kill of another name removed wordcount's state")
	}

	f.sched.probeErr = nil
	if err := f.l.Kill(ctx, "wordcount", launcher.KillOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sched.probeErr = fmt.Errorf("no job: %w", spi.ErrNotFound)
	err = f.l.Kill(ctx, "wordcount", launcher.KillOptions{})
	if !errors.Is(err, launcher.ErrNothingToKill) || !strings.Contains(err.Error(), "nothing left to stop") {
		t.Fatalf("second kill: %v; want nothing left to stop", err)
	}
	if calls := f.sched.Calls(); len(calls) != 1 {
		t.Errorf("scheduler calls %v, want the first kill's only", calls)
	}

	f.sched.probeErr = nil // the job runs without state
	if err := f.l.Kill(ctx, "leftover", launcher.KillOptions{}); err != nil {
		t.Fatalf("kill of a job without state: %v", err)
	}
	if calls := f.sched.Calls(); len(calls) != 2 || calls[1] != "kill leftover" {
		t.Errorf("scheduler calls %v, want the leftover's containers stopped", calls)
	}

	l := *f.l
	l.Backends = noProbeBackends{f.l.Backends.(*backends)}
	err = l.Kill(ctx, "gone", launcher.KillOptions{})
	if !errors.Is(err, launcher.ErrNothingToKill) || !strings.Contains(err.Error(), "asked to stop any container") {
		t.Fatalf("kill with a scheduler that cannot tell: %v", err)
	}
	if calls := f.sched.Calls(); len(calls) != 3 || calls[2] != "kill gone" {
		t.Errorf("scheduler calls %v, want any container of gone stopped", calls)
	}
}

// TestUpdateStatefulNeedsCheckpointTasks: the parallelism of an
// effectively-once topology changes only when its last complete
// checkpoint records its tasks (the old tasks every new task restores
// from); a checkpoint state without them is refused before anything
// changes.
func TestUpdateStatefulNeedsCheckpointTasks(t *testing.T) {
	f := newFixture(t, "local")
	tp, pp, tm := rescaleFixture(t, f)
	ctx := ctxFor(t)
	tp.Config[topology.KeyDeliveryMode] = string(topology.EffectivelyOnce)
	if err := f.store.UpdatePackingPlan(ctx, tp, pp, spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := f.store.SetCheckpointState(ctx, "wc", &egretpb.CheckpointState{TopologyId: tp.ID, TopologyName: "wc", LastCompleteId: 4}); err != nil {
		t.Fatal(err)
	}
	err := f.l.Update(ctx, "wc", launcher.UpdateOptions{Parallelism: map[string]int{"count": 3}})
	if err == nil || !strings.Contains(err.Error(), "does not record its tasks") || launcher.IsBadInput(err) {
		t.Fatalf("Update = %v, want a refusal (not bad input) saying the checkpoint does not record its tasks", err)
	}
	f.checkUnchanged(t, tp, pp)
	if calls, posts := f.sched.Calls(), tm.Posts(); len(calls)+len(posts) > 0 {
		t.Errorf("a refused update called the scheduler %v and the topology manager %v", calls, posts)
	}
}
