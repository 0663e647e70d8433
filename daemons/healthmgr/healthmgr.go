package healthmgr

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// MaxDecisions is how many decisions the state manager keeps per topology.
const MaxDecisions = 32

// Metric names the health manager publishes (source "healthmgr").
const (
	MetricDecisions = "healthmgr.decisions"
	MetricScaleUps  = "healthmgr.scaleups"
	MetricFailures  = "healthmgr.failures"
	// MetricEpisode is how long the current culprit has caused back
	// pressure, in nanoseconds (0: none).
	MetricEpisode = "healthmgr.backpressure.episode.ns"
)

// Scaler changes a running topology's parallelism, as egret update
// --component-parallelism does.
type Scaler interface {
	Scale(ctx context.Context, topology string, parallelism map[string]int) error
}

// Config configures a Manager.
type Config struct {
	Topology   string
	TopologyID string
	// Store is a state manager session: the topology definition is read
	// from it and the decisions written to it.
	Store  *state.Store
	Stats  StatsSource
	Scaler Scaler
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Tick paces the reads (nil: a ticker of the topology's interval);
	// tests drive it.
	Tick <-chan time.Time
}

// Manager is one topology's health manager.
type Manager struct {
	cfg Config
	log *zap.Logger
	det *detector
	pol *policy

	decisions, scaleUps, failures atomic.Int64
	episodeNs                     atomic.Int64
}

// New returns a manager; nothing runs before Run.
func New(cfg Config, log *zap.Logger) (*Manager, error) {
	if cfg.Topology == "" || cfg.Store == nil || cfg.Stats == nil || cfg.Scaler == nil {
		return nil, errors.New("healthmgr: a topology name, a state store, a stats source and a scaler are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Manager{cfg: cfg, log: log.With(zap.String("topology", cfg.Topology)), det: newDetector(), pol: &policy{}}, nil
}

// Counters returns the published metrics' values.
func (m *Manager) Counters() map[string]float64 {
	return map[string]float64{
		MetricDecisions: float64(m.decisions.Load()),
		MetricScaleUps:  float64(m.scaleUps.Load()),
		MetricFailures:  float64(m.failures.Load()),
		MetricEpisode:   float64(m.episodeNs.Load()),
	}
}

// Run reads the metrics every interval and acts on them until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	t, err := m.topology(ctx)
	if err != nil {
		return err
	}
	set := t.HealthMgr()
	m.pol.set = Settings{Threshold: set.Threshold, Cooldown: set.Cooldown}
	m.restoreCooldown(ctx)
	tick := m.cfg.Tick
	if tick == nil {
		tk := time.NewTicker(set.Interval)
		defer tk.Stop()
		tick = tk.C
	}
	m.log.Info("health manager running", zap.Duration("threshold", set.Threshold), zap.Duration("cooldown", set.Cooldown), zap.Duration("interval", set.Interval))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
		if err := m.Step(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("health check failed; retrying at the next interval", zap.Error(err))
		}
	}
}

// topology reads the topology definition (settings and parallelism).
func (m *Manager) topology(ctx context.Context) (*topology.Topology, error) {
	t, err := m.cfg.Store.Topology(ctx, m.cfg.Topology)
	if err != nil {
		return nil, fmt.Errorf("healthmgr: read the topology definition: %w", err)
	}
	if m.cfg.TopologyID != "" && t.ID != m.cfg.TopologyID {
		return nil, fmt.Errorf("healthmgr: the topology %q in the state manager has id %q, not %q (it was resubmitted)", m.cfg.Topology, t.ID, m.cfg.TopologyID)
	}
	return t, nil
}

// restoreCooldown starts the cool-down at the last recorded decision, so
// that a restarted health manager does not decide again at once.
func (m *Manager) restoreCooldown(ctx context.Context) {
	hd, err := m.cfg.Store.HealthDecisions(ctx, m.cfg.Topology)
	if err != nil {
		if !errors.Is(err, spi.ErrNotFound) {
			m.log.Warn("cannot read the recorded decisions", zap.Error(err))
		}
		return
	}
	if hd.GetTopologyId() != m.cfg.TopologyID {
		return
	}
	if n := len(hd.GetDecisions()); n > 0 {
		m.pol.last = time.Unix(0, hd.GetDecisions()[n-1].GetUnixNanos())
	}
}

// Step reads the metrics once, and decides and acts when a decision is
// due.
func (m *Manager) Step(ctx context.Context) error {
	t, err := m.topology(ctx)
	if err != nil {
		return err
	}
	bolts := map[string]bool{}
	for _, b := range t.Bolts() {
		bolts[b] = true
	}
	snap, err := m.cfg.Stats.Stats(ctx)
	if err != nil {
		return fmt.Errorf("read the metrics: %w", err)
	}
	now := m.cfg.Now()
	o := m.det.observe(snap, bolts)
	comp, lasted, due := m.pol.observe(now, o)
	m.episodeNs.Store(int64(lasted))
	if o.Fresh && o.BackPressure {
		m.log.Debug("back pressure", zap.String("culprit", o.Culprit), zap.String("detail", o.Detail), zap.Duration("episode", lasted))
	}
	if !due {
		return nil
	}
	c, ok := t.Component(comp)
	if !ok {
		return nil // not in the definition any more (only bolts of it are culprits)
	}
	info := ComponentInfo{Parallelism: c.Parallelism, Max: min(t.HealthMgrMaxParallelism(comp), t.MaxParallelism(comp)), Factor: t.HealthMgrScaleFactor(comp)}
	d := m.pol.decide(now, comp, lasted, info)
	m.episodeNs.Store(0)
	if d.Action == ActionScaleUp {
		m.log.Info("scaling up", zap.String("component", comp), zap.Int("from", d.Old), zap.Int("to", d.New), zap.String("reason", d.Reason))
		if err := m.cfg.Scaler.Scale(ctx, m.cfg.Topology, map[string]int{comp: d.New}); err != nil {
			d.Action, d.Err = ActionFailed, err.Error()
			m.failures.Add(1)
		} else {
			m.scaleUps.Add(1)
		}
	}
	m.decisions.Add(1)
	m.log.Info("health manager decision", zap.String("component", d.Component), zap.String("action", d.Action), zap.String("reason", d.Reason), zap.String("error", d.Err))
	if err := m.record(context.WithoutCancel(ctx), d); err != nil {
		return fmt.Errorf("record the decision: %w", err)
	}
	return nil
}

// record appends d to the decisions in the state manager, keeping the
// last MaxDecisions.
func (m *Manager) record(ctx context.Context, d Decision) error {
	hd, err := m.cfg.Store.HealthDecisions(ctx, m.cfg.Topology)
	if err != nil || hd.GetTopologyId() != m.cfg.TopologyID {
		// None yet, unreadable, or another submission's: start over.
		hd = &egretpb.HealthDecisions{TopologyName: m.cfg.Topology, TopologyId: m.cfg.TopologyID}
	}
	hd.Decisions = append(hd.Decisions, &egretpb.HealthDecision{
		UnixNanos: d.At.UnixNano(), Component: d.Component, Action: d.Action, Reason: d.Reason,
		BackpressureNanos: int64(d.BackPressure), OldParallelism: int32(d.Old), NewParallelism: int32(d.New), Error: d.Err,
	})
	if n := len(hd.Decisions); n > MaxDecisions {
		hd.Decisions = hd.Decisions[n-MaxDecisions:]
	}
	return m.cfg.Store.SetHealthDecisions(ctx, m.cfg.Topology, hd)
}
