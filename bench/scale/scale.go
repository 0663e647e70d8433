package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/tmanager"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/localfs"
)

// Config is one measured run.
type Config struct {
	// Containers is N, the containers besides the topology manager's.
	Containers int
	// TasksPerContainer (default 2: one spout and one bolt task).
	TasksPerContainer int
	// EffectivelyOnce makes the topology effectively-once: the run then
	// waits for the first restore and measures Checkpoints checkpoints
	// (one every CheckpointInterval, default 1s) instead of the steady
	// state and the kill.
	EffectivelyOnce    bool
	CheckpointInterval time.Duration
	Checkpoints        int
	// HeartbeatInterval and HeartbeatTimeout are the stream managers'
	// heartbeat and the topology manager's eviction bound (defaults:
	// Egret's, 1s and 5s).
	HeartbeatInterval, HeartbeatTimeout time.Duration
	// MetricsInterval is each container's metrics report period (default
	// 10s, egret.metrics.export.interval's default).
	MetricsInterval time.Duration
	// Steady is the window over which the topology manager's CPU is read
	// (default 20s; 0 with SkipSteady). Kill measures a frozen container's
	// eviction and its replacement's re-plan.
	Steady     time.Duration
	SkipSteady bool
	Kill       bool
	// Deadline bounds every wait on a condition (default 3 min): the run
	// fails past it rather than hang.
	Deadline time.Duration
	// Dir holds the state manager's directory and the topology manager's
	// log (required).
	Dir string
	// Self is the binary started as the topology manager child (it must
	// call ChildMain); default os.Executable().
	Self string
	// Log, when set, receives progress lines.
	Log io.Writer
}

// Result is what one run measured. Durations are in the JSON as
// nanoseconds.
type Result struct {
	Containers      int    `json:"containers"`
	Tasks           int    `json:"tasks"`
	EffectivelyOnce bool   `json:"effectively_once"`
	LoadAvg         string `json:"loadavg"`
	// PlanBytes is the encoded NewPhysicalPlan frame.
	PlanBytes int `json:"plan_bytes"`
	// Registering is the first to the last registration sent; PlanAll the
	// last registration sent to the last container holding the plan.
	Registering time.Duration `json:"registering"`
	PlanAll     time.Duration `json:"plan_all"`
	// The topology manager at steady state (heartbeats and metrics):
	// cores used over Steady, resident memory, its peak, open sockets.
	Steady    time.Duration `json:"steady"`
	TMCores   float64       `json:"tm_cores"`
	TMRSS     int64         `json:"tm_rss_bytes"`
	TMPeakRSS int64         `json:"tm_peak_rss_bytes"`
	TMSockets int           `json:"tm_sockets"`
	// Detect is a frozen container's silence until the topology manager
	// drops it; Replan its replacement's registration until every
	// container holds a plan with it.
	Detect time.Duration `json:"detect"`
	Replan time.Duration `json:"replan"`
	// MetricSources is how many sources the containers publish;
	// DroppedSources how many the topology manager's metrics store evicted
	// by the end of the steady window (its bound), SourcesShown how many
	// containers and tasks GET /stats showed then.
	MetricSources  int   `json:"metric_sources"`
	DroppedSources int64 `json:"dropped_sources"`
	SourcesShown   int   `json:"containers_in_stats"`
	TasksShown     int   `json:"tasks_in_stats"`
	// Reconnects counts stand-ins the topology manager dropped that were
	// not frozen (a heartbeat late under load, a full queue): 0 expected.
	Reconnects int64 `json:"reconnects"`
	// Checkpoint completion times (StartCheckpoint at the first container
	// to CheckpointComplete at the last), effectively-once runs only.
	Checkpoints []time.Duration `json:"checkpoints,omitempty"`
	// HTTP is the median response time of each topology manager endpoint
	// (5 requests), HTTPBytes its response size.
	HTTP      map[string]time.Duration `json:"http,omitempty"`
	HTTPBytes map[string]int           `json:"http_bytes,omitempty"`
}

const (
	topologyName = "scale"
	topologyID   = "scale-0001"
	dataPortBase = 10000
)

func (c *Config) defaults() error {
	if c.Containers < 1 {
		return fmt.Errorf("scale: containers must be at least 1, got %d", c.Containers)
	}
	if c.Dir == "" {
		return errors.New("scale: Dir is required")
	}
	if c.Containers > 20000 {
		return fmt.Errorf("scale: %d containers: at most 20000 (data ports %d+)", c.Containers, dataPortBase)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.CheckpointInterval, time.Second)
	def(&c.HeartbeatInterval, tmanager.DefaultHeartbeatInterval)
	def(&c.HeartbeatTimeout, tmanager.DefaultHeartbeatTimeout)
	def(&c.MetricsInterval, 10*time.Second)
	def(&c.Steady, 20*time.Second)
	def(&c.Deadline, 3*time.Minute)
	if c.TasksPerContainer <= 0 {
		c.TasksPerContainer = 2
	}
	if c.Checkpoints <= 0 {
		c.Checkpoints = 5
	}
	if c.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("scale: find this binary: %w", err)
		}
		c.Self = self
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// Run measures one topology of cfg.Containers containers. Everything it
// starts is stopped before it returns.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	res := &Result{Containers: cfg.Containers, Tasks: cfg.Containers * cfg.TasksPerContainer,
		MetricSources:   cfg.Containers * reportsPerContainer(cfg.TasksPerContainer),
		EffectivelyOnce: cfg.EffectivelyOnce, LoadAvg: harness.DescribeMachine().LoadAvg}
	root := filepath.Join(cfg.Dir, "state")
	if err := submit(ctx, root, cfg); err != nil {
		return nil, err
	}
	ch, err := startChild(ctx, cfg.Self, childSpec{Root: root, Name: topologyName, ID: topologyID, Log: filepath.Join(cfg.Dir, "tmanager.log"),
		Settings: map[string]string{
			tmanager.KeyHeartbeatInterval: cfg.HeartbeatInterval.String(),
			tmanager.KeyHeartbeatTimeout:  cfg.HeartbeatTimeout.String(),
		}}, cfg.Deadline)
	if err != nil {
		return nil, err
	}
	defer ch.stop()
	r := &run{cfg: cfg, res: res, ch: ch}
	defer r.stopAll()
	if err := r.measure(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// submit writes the topology, its packing plan and its execution state.
func submit(ctx context.Context, root string, cfg Config) error {
	sm, err := localfs.Open(localfs.Options{Root: root})
	if err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	defer sm.Close()
	t, p := buildTopology(topologyName, topologyID, cfg.Containers, cfg.TasksPerContainer, cfg.EffectivelyOnce, cfg.CheckpointInterval.String())
	if err := state.New(sm).Submit(ctx, state.Submission{Topology: t, Plan: p,
		ExecutionState: &egretpb.ExecutionState{TopologyName: topologyName, TopologyId: topologyID}}); err != nil {
		return fmt.Errorf("scale: submit the topology: %w", err)
	}
	return nil
}

type run struct {
	cfg      Config
	res      *Result
	ch       *child
	standins []*standin // index container-1; a replacement takes its place
	extra    []*standin // frozen ones, closed at the end
	cancel   context.CancelFunc
	pubs     sync.WaitGroup
	pubErr   error
	pubMu    sync.Mutex
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "scale N=%d: "+format+"\n", append([]any{r.cfg.Containers}, args...)...)
}

func (r *run) measure(ctx context.Context) error {
	cfg := r.cfg
	ctx, r.cancel = context.WithCancel(ctx)
	_, p := buildTopology(topologyName, topologyID, cfg.Containers, cfg.TasksPerContainer, cfg.EffectivelyOnce, "")
	// Every container's metrics manager publishes from the start, as in
	// a real topology.
	for _, c := range p.Containers {
		tasks, comps := tasksOf(c)
		r.pubs.Add(1)
		go func() {
			defer r.pubs.Done()
			if err := publishMetrics(ctx, r.ch.serverAddr, int32(c.ID), tasks, comps, cfg.MetricsInterval); err != nil {
				r.pubMu.Lock()
				r.pubErr = cmpErr(r.pubErr, err)
				r.pubMu.Unlock()
			}
		}()
	}
	for _, c := range p.Containers {
		tasks, _ := tasksOf(c)
		r.standins = append(r.standins, newStandin(topologyID, int32(c.ID), int32(dataPortBase+c.ID), tasks, cfg.HeartbeatInterval))
	}
	r.logf("registering %d stand-in stream managers", len(r.standins))
	for _, s := range r.standins {
		go s.run(r.ch.serverAddr)
	}
	if err := r.waitAll(ctx, "every container holds the first physical plan", func(s *standin) bool { return s.firstPlanAt.Load() != 0 }); err != nil {
		return err
	}
	var firstReg, lastReg, lastPlan int64
	for _, s := range r.standins {
		reg, pl := s.registeredAt.Load(), s.firstPlanAt.Load()
		if firstReg == 0 || reg < firstReg {
			firstReg = reg
		}
		lastReg, lastPlan = max(lastReg, reg), max(lastPlan, pl)
	}
	r.res.Registering = time.Duration(lastReg - firstReg)
	r.res.PlanAll = time.Duration(lastPlan - lastReg)
	r.logf("plan at every container %s after the last registration (registrations spread over %s)", r.res.PlanAll, r.res.Registering)
	if err := r.planSize(ctx); err != nil {
		return err
	}
	if cfg.EffectivelyOnce {
		if err := r.checkpoints(ctx); err != nil {
			return err
		}
	} else if !cfg.SkipSteady {
		if err := r.steady(ctx); err != nil {
			return err
		}
	}
	if err := r.httpTimes(ctx); err != nil {
		return err
	}
	if cfg.Kill {
		if err := r.kill(ctx); err != nil {
			return err
		}
	}
	for _, s := range r.standins {
		r.res.Reconnects += s.reconnects.Load()
		if e := s.dropErr.Load(); e != nil {
			r.logf("container %d was dropped and registered again %d times; last: %v", s.container, s.reconnects.Load(), *e)
		}
	}
	return r.check()
}

func tasksOf(c plan.Container) ([]int32, []string) {
	var tasks []int32
	var comps []string
	for _, in := range c.Instances {
		tasks = append(tasks, int32(in.TaskID))
		comps = append(comps, in.Component)
	}
	return tasks, comps
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// check returns the first failure of a stand-in, a metrics publisher or
// the child.
func (r *run) check() error {
	select {
	case <-r.ch.exited:
		return fmt.Errorf("%w: %v (see %s)", errChildExited, r.ch.err, filepath.Join(r.cfg.Dir, "tmanager.log"))
	default:
	}
	for _, s := range r.standins {
		if e := s.err.Load(); e != nil {
			return *e
		}
	}
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	return r.pubErr
}

// waitAll waits until cond holds for every current stand-in, a failure, or
// the deadline.
func (r *run) waitAll(ctx context.Context, what string, cond func(*standin) bool) error {
	deadline := time.Now().Add(r.cfg.Deadline)
	for {
		if err := r.check(); err != nil {
			return fmt.Errorf("waiting until %s: %w", what, err)
		}
		missing := 0
		for _, s := range r.standins {
			if !cond(s) {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting until %s: %d of %d containers still not after %s", what, missing, len(r.standins), r.cfg.Deadline)
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// planSize reads the current plan from the HTTP API and frames it.
func (r *run) planSize(ctx context.Context) error {
	body, _, err := r.get(ctx, "/pplan")
	if err != nil {
		return err
	}
	var pp egretpb.PhysicalPlan
	if err := unmarshalPlan(body, &pp); err != nil {
		return fmt.Errorf("GET /pplan: %w", err)
	}
	if len(pp.GetStmgrs()) != r.cfg.Containers {
		return fmt.Errorf("GET /pplan lists %d stream managers, want %d", len(pp.GetStmgrs()), r.cfg.Containers)
	}
	b, err := wire.AppendMessage(nil, &egretpb.NewPhysicalPlan{Pplan: &pp})
	if err != nil {
		return err
	}
	r.res.PlanBytes = len(b)
	return nil
}

// steady reads the topology manager's CPU over the steady window, after
// one metrics interval of warm-up.
func (r *run) steady(ctx context.Context) error {
	warm := r.cfg.MetricsInterval
	r.logf("steady state: %s warm-up, then %s measured", warm, r.cfg.Steady)
	if err := sleep(ctx, warm); err != nil {
		return err
	}
	before, err := harness.ReadProc(r.ch.pid())
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := sleep(ctx, r.cfg.Steady); err != nil {
		return err
	}
	after, err := harness.ReadProc(r.ch.pid())
	if err != nil {
		return err
	}
	el := time.Since(t0)
	r.res.Steady = el
	r.res.TMCores = (after.CPUSeconds - before.CPUSeconds) / el.Seconds()
	r.res.TMRSS, r.res.TMPeakRSS = after.RSSBytes, after.PeakRSSBytes
	r.res.TMSockets = countSockets(r.ch.pid())
	if err := r.statsSeen(ctx); err != nil {
		return err
	}
	r.logf("topology manager: %.3f cores, RSS %d MiB (peak %d MiB), %d sockets", r.res.TMCores, r.res.TMRSS>>20, r.res.TMPeakRSS>>20, r.res.TMSockets)
	return r.check()
}

// statsSeen reads what GET /stats shows of the containers' metrics.
func (r *run) statsSeen(ctx context.Context) error {
	body, _, err := r.get(ctx, "/stats")
	if err != nil {
		return err
	}
	var st struct {
		Components map[string]struct {
			Tasks map[string]json.RawMessage `json:"tasks"`
		} `json:"components"`
		Containers map[string]json.RawMessage `json:"containers"`
		Dropped    map[string]int64           `json:"dropped"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("GET /stats: %w", err)
	}
	r.res.DroppedSources, r.res.SourcesShown = st.Dropped["sources"], len(st.Containers)
	for _, c := range st.Components {
		r.res.TasksShown += len(c.Tasks)
	}
	r.logf("GET /stats: %d containers and %d tasks shown, %d metric sources evicted (of %d published)", r.res.SourcesShown, r.res.TasksShown, r.res.DroppedSources, r.res.MetricSources)
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// countSockets counts the open sockets of pid.
func countSockets(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// checkpoints waits for the first restore to end (StartProcessing at
// every container), then measures cfg.Checkpoints checkpoints.
func (r *run) checkpoints(ctx context.Context) error {
	if err := r.waitAll(ctx, "every container was told to start processing", func(s *standin) bool { return s.processing.Load() > 0 }); err != nil {
		return err
	}
	// The first checkpoint that starts from now on.
	first := int64(0)
	for _, s := range r.standins {
		s.startedAt.Range(func(k, _ any) bool {
			first = max(first, k.(int64))
			return true
		})
	}
	first++
	last := first + int64(r.cfg.Checkpoints) - 1
	r.logf("measuring checkpoints %d..%d", first, last)
	if err := r.waitAll(ctx, fmt.Sprintf("every container saw checkpoint %d complete", last), func(s *standin) bool {
		_, ok := s.completedAt.Load(last)
		return ok
	}); err != nil {
		return err
	}
	for id := first; id <= last; id++ {
		var start, end int64
		for _, s := range r.standins {
			st, ok1 := s.startedAt.Load(id)
			en, ok2 := s.completedAt.Load(id)
			if !ok1 || !ok2 {
				return fmt.Errorf("checkpoint %d: container %d missed its start or completion", id, s.container)
			}
			if start == 0 || st.(int64) < start {
				start = st.(int64)
			}
			end = max(end, en.(int64))
		}
		r.res.Checkpoints = append(r.res.Checkpoints, time.Duration(end-start))
	}
	r.logf("checkpoints: %v", r.res.Checkpoints)
	return nil
}

// httpTimes times the topology manager's read endpoints.
func (r *run) httpTimes(ctx context.Context) error {
	r.res.HTTP, r.res.HTTPBytes = map[string]time.Duration{}, map[string]int{}
	for _, path := range []string{"/healthz", "/pplan", "/stats"} {
		var ts []time.Duration
		for i := 0; i < 5; i++ {
			t0 := time.Now()
			body, _, err := r.get(ctx, path)
			if err != nil {
				return err
			}
			ts = append(ts, time.Since(t0))
			r.res.HTTPBytes[path] = len(body)
		}
		slices.Sort(ts)
		r.res.HTTP[path] = ts[len(ts)/2]
	}
	r.logf("HTTP medians: %v", r.res.HTTP)
	return nil
}

var httpClient = &http.Client{Timeout: time.Minute}

func (r *run) get(ctx context.Context, path string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.ch.httpAddr+path, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return b, resp.StatusCode, nil
}

// kill freezes the middle container's stand-in (silent, connection open),
// waits for the topology manager to drop it, then registers its
// replacement (a new data port) and waits until every container holds a
// plan with it.
func (r *run) kill(ctx context.Context) error {
	i := len(r.standins) / 2
	old := r.standins[i]
	t0 := time.Now()
	old.freeze()
	r.extra = append(r.extra, old)
	r.logf("froze container %d; waiting for its eviction", old.container)
	deadline := time.Now().Add(r.cfg.Deadline)
	for old.droppedAt.Load() == 0 {
		if err := r.check(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the topology manager did not drop frozen container %d within %s", old.container, r.cfg.Deadline)
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	r.res.Detect = time.Duration(old.droppedAt.Load() - t0.UnixNano())
	repl := newStandin(topologyID, old.container, old.port+int32(r.cfg.Containers)+1, old.tasks, r.cfg.HeartbeatInterval)
	for _, s := range r.standins {
		if s != old {
			s.watch.Store(&watchSpec{container: repl.container, port: repl.port})
		}
	}
	repl.watch.Store(&watchSpec{container: repl.container, port: repl.port})
	r.standins[i] = repl
	go repl.run(r.ch.serverAddr)
	if err := r.waitAll(ctx, fmt.Sprintf("every container holds a plan with container %d's replacement", repl.container), func(s *standin) bool {
		return s.watch.Load().at.Load() != 0
	}); err != nil {
		return err
	}
	var last int64
	for _, s := range r.standins {
		last = max(last, s.watch.Load().at.Load())
	}
	r.res.Replan = time.Duration(last - repl.registeredAt.Load())
	r.logf("frozen container dropped after %s; its replacement in every container's plan %s after registering", r.res.Detect, r.res.Replan)
	return nil
}

// stopAll closes every stand-in and metrics publisher and waits for them.
func (r *run) stopAll() {
	if r.cancel != nil {
		r.cancel()
	}
	var wg sync.WaitGroup
	for _, s := range append(r.standins, r.extra...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
			s.wait()
		}()
	}
	wg.Wait()
	r.pubs.Wait()
}

func unmarshalPlan(b []byte, pp *egretpb.PhysicalPlan) error {
	return protojson.Unmarshal(b, pp)
}
