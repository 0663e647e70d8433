package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/launcher"
)

// Options configure a Tracker.
type Options struct {
	// Clusters are the loaded configs of the clusters to serve (names
	// distinct).
	Clusters []*conf.Cluster
	// Backends opens state managers and schedulers (the CLI's).
	Backends launcher.Backends
	Log      *zap.Logger
	// SampleInterval is how often every running topology's metrics are
	// sampled for the timeline (default 5s).
	SampleInterval time.Duration
	// FineWindow is how long samples are kept at SampleInterval (default
	// 10m); CoarseWindow how long one-minute samples are kept (default 1h).
	FineWindow, CoarseWindow time.Duration
	// MaxTopologies bounds the topologies with a timeline (default 64);
	// MaxTasks the tasks per topology (default 512).
	MaxTopologies, MaxTasks int
	// ListCache is how long a cluster's topology list (which asks the
	// scheduler too) is reused (default 2s).
	ListCache time.Duration
	// Client talks to topology managers (default: a client with a 5s
	// timeout).
	Client *http.Client
	// Now is the clock of the samples (default time.Now).
	Now func() time.Time
	// OperatorToken, when set, enables the console's actions for
	// requests that carry it (see actions.go); empty: read-only.
	OperatorToken string
	// Savepoint, when set, takes a savepoint of a running effectively-once
	// topology (as egret savepoint does: the CLI's) and says where it is;
	// the console's savepoint action runs it. Nil: no such action.
	Savepoint func(ctx context.Context, l *launcher.Launcher, topology string) (string, error)
}

func (o *Options) fineLen() int   { return max(1, int(o.FineWindow/o.SampleInterval)) }
func (o *Options) coarseLen() int { return max(1, int(o.CoarseWindow/coarseStep)) }

// Tracker serves the tracker API and UI. Create it with New, serve
// Handler, run Run to sample timelines, and Close it.
type Tracker struct {
	opts     Options
	log      *zap.Logger
	clusters map[string]*clusterState
	order    []string

	mu     sync.Mutex
	tracks map[trackKey]*topoTrack

	actions actions
}

type trackKey struct{ cluster, topology string }

// clusterState is one cluster: its config, a launcher for listing, and a
// state manager session opened on first use and reopened after a failure.
type clusterState struct {
	name string
	conf *conf.Cluster
	l    *launcher.Launcher

	mu    sync.Mutex
	sm    spi.StateManager
	list  []launcher.TopologyInfo
	based time.Time
}

// New checks the options and returns a tracker.
func New(o Options) (*Tracker, error) {
	if len(o.Clusters) == 0 {
		return nil, errors.New("tracker: no cluster to serve")
	}
	if o.Backends == nil {
		return nil, errors.New("tracker: no backends")
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.SampleInterval <= 0 {
		o.SampleInterval = 5 * time.Second
	}
	if o.FineWindow <= 0 {
		o.FineWindow = 10 * time.Minute
	}
	if o.CoarseWindow <= 0 {
		o.CoarseWindow = time.Hour
	}
	if o.MaxTopologies <= 0 {
		o.MaxTopologies = 64
	}
	if o.MaxTasks <= 0 {
		o.MaxTasks = 512
	}
	if o.ListCache <= 0 {
		o.ListCache = 2 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	t := &Tracker{opts: o, log: o.Log, clusters: map[string]*clusterState{}, tracks: map[trackKey]*topoTrack{}}
	t.actions.ctx, t.actions.cancel = context.WithCancel(context.Background())
	for _, c := range o.Clusters {
		if _, dup := t.clusters[c.Name]; dup {
			return nil, fmt.Errorf("tracker: cluster %q given twice", c.Name)
		}
		t.clusters[c.Name] = &clusterState{name: c.Name, conf: c,
			l: &launcher.Launcher{Cluster: c, Backends: o.Backends, Log: o.Log.Named("launcher")}}
		t.order = append(t.order, c.Name)
	}
	sort.Strings(t.order)
	return t, nil
}

// Close stops the running actions and ends the state manager sessions.
func (t *Tracker) Close() {
	t.actions.cancel()
	t.actions.wg.Wait()
	for _, c := range t.clusters {
		c.mu.Lock()
		if c.sm != nil {
			_ = c.sm.Close()
			c.sm = nil
		}
		c.mu.Unlock()
	}
}

// store calls fn with the cluster's state; a failure other than a missing
// or corrupt node drops the session, so the next call opens a new one.
func (c *clusterState) store(ctx context.Context, b launcher.Backends, fn func(*state.Store) error) error {
	c.mu.Lock()
	sm := c.sm
	if sm == nil {
		var err error
		sm, err = b.StateManager(ctx, c.conf.Config())
		if err != nil {
			c.mu.Unlock()
			return &unavailableError{fmt.Errorf("state manager of cluster %q: %w", c.name, err)}
		}
		c.sm = sm
	}
	c.mu.Unlock()
	err := fn(state.New(sm))
	if err != nil && !errors.Is(err, spi.ErrNotFound) && !errors.Is(err, spi.ErrCorrupt) && !errors.Is(err, errNotFound) && ctx.Err() == nil {
		c.mu.Lock()
		if c.sm == sm {
			_ = sm.Close()
			c.sm = nil
		}
		c.mu.Unlock()
	}
	return err
}

// topologies lists the cluster's topologies with their status, reusing a
// list younger than ListCache.
func (c *clusterState) topologies(ctx context.Context, cache time.Duration) ([]launcher.TopologyInfo, error) {
	c.mu.Lock()
	if c.list != nil && time.Since(c.based) < cache {
		l := c.list
		c.mu.Unlock()
		return l, nil
	}
	c.mu.Unlock()
	l, err := c.l.List(ctx)
	if err != nil {
		return nil, &unavailableError{fmt.Errorf("list topologies of cluster %q: %w", c.name, err)}
	}
	if l == nil {
		l = []launcher.TopologyInfo{}
	}
	c.mu.Lock()
	c.list, c.based = l, time.Now()
	c.mu.Unlock()
	return l, nil
}

// Run samples the metrics of every running topology every
// SampleInterval until ctx ends.
func (t *Tracker) Run(ctx context.Context) {
	tick := time.NewTicker(t.opts.SampleInterval)
	defer tick.Stop()
	for {
		t.pollAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (t *Tracker) pollAll(ctx context.Context) {
	live := map[trackKey]bool{}
	for _, name := range t.order {
		c := t.clusters[name]
		var names []string
		err := c.store(ctx, t.opts.Backends, func(s *state.Store) error {
			var err error
			names, err = s.Topologies(ctx)
			return err
		})
		if err != nil {
			t.log.Debug("list topologies for the timeline", zap.String("cluster", name), zap.Error(err))
			// Keep the histories of a cluster that cannot be read now.
			t.mu.Lock()
			for k := range t.tracks {
				if k.cluster == name {
					live[k] = true
				}
			}
			t.mu.Unlock()
			continue
		}
		for _, n := range names {
			k := trackKey{name, n}
			live[k] = true
			st, err := t.fetchStats(ctx, c, n)
			if err != nil {
				t.log.Debug("sample metrics", zap.String("cluster", name), zap.String("topology", n), zap.Error(err))
				continue
			}
			var spouts []string
			_ = c.store(ctx, t.opts.Backends, func(s *state.Store) error {
				topo, err := s.Topology(ctx, n)
				if err == nil {
					spouts = topo.Spouts()
				}
				return err
			})
			t.record(k, st, spouts, t.opts.Now())
		}
	}
	t.mu.Lock()
	for k := range t.tracks {
		if !live[k] {
			delete(t.tracks, k)
		}
	}
	t.mu.Unlock()
}

// record adds a sample to the track of k, starting a new track when the
// topology was resubmitted (another id).
func (t *Tracker) record(k trackKey, st *tmStats, spouts []string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tt := t.tracks[k]
	if tt != nil && tt.id != st.TopologyID {
		tt = nil
	}
	if tt == nil {
		if len(t.tracks) >= t.opts.MaxTopologies {
			if _, ok := t.tracks[k]; !ok {
				return
			}
		}
		tt = &topoTrack{id: st.TopologyID, procs: map[int]*procTrack{}}
		t.tracks[k] = tt
	}
	if spouts != nil {
		tt.spouts = spouts
	}
	tt.record(st, at, &t.opts)
}

// tmStats is the part of a topology manager's GET /stats the tracker
// reads.
type tmStats struct {
	Topology   string `json:"topology"`
	TopologyID string `json:"topology_id"`
	Components map[string]struct {
		Tasks map[string]tmTaskStats `json:"tasks"`
		Sums  map[string]float64     `json:"sums"`
	} `json:"components"`
	Containers map[string]map[string]struct {
		UnixNanos int64              `json:"unix_nanos"`
		Metrics   map[string]float64 `json:"metrics"`
	} `json:"containers"`
	Totals map[string]float64 `json:"totals"`
}

// tmTaskStats is one task's latest metrics; InstanceUnixNanos is when
// its instance read its running totals.
type tmTaskStats struct {
	Container         int32              `json:"container"`
	UnixNanos         int64              `json:"unix_nanos"`
	InstanceUnixNanos int64              `json:"instance_unix_nanos"`
	Metrics           map[string]float64 `json:"metrics"`
}

type tmException struct {
	Task       int32  `json:"task"`
	Container  int32  `json:"container"`
	Message    string `json:"message"`
	Stack      string `json:"stack"`
	Count      int64  `json:"count"`
	FirstNanos int64  `json:"first_unix_nanos"`
	LastNanos  int64  `json:"last_unix_nanos"`
}

// tmURL returns the base URL of a topology's topology manager.
func (t *Tracker) tmURL(ctx context.Context, c *clusterState, name string) (string, error) {
	var base string
	err := c.store(ctx, t.opts.Backends, func(s *state.Store) error {
		loc, err := s.TManagerLocation(ctx, name)
		if err != nil {
			return err
		}
		base = fmt.Sprintf("http://%s:%d", loc.GetHost(), loc.GetHttpPort())
		return nil
	})
	if errors.Is(err, spi.ErrNotFound) {
		return "", &unavailableError{fmt.Errorf("topology %q of cluster %q has no topology manager running (starting, or container 0 is down)", name, c.name)}
	}
	if err != nil {
		return "", &unavailableError{err}
	}
	return base, nil
}

// getTM fetches path from the topology manager into v.
func (t *Tracker) getTM(ctx context.Context, c *clusterState, name, path string, v any) error {
	base, err := t.tmURL(ctx, c, name)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	resp, err := t.opts.Client.Do(req)
	if err != nil {
		return &unavailableError{fmt.Errorf("topology manager of %q at %s: %w", name, base, err)}
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 64<<20)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(body, 512))
		return &unavailableError{fmt.Errorf("topology manager of %q: GET %s: %s: %s", name, path, resp.Status, oneLine(string(b)))}
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return &unavailableError{fmt.Errorf("topology manager of %q: bad answer to GET %s: %w", name, path, err)}
	}
	return nil
}

func (t *Tracker) fetchStats(ctx context.Context, c *clusterState, name string) (*tmStats, error) {
	var st tmStats
	if err := t.getTM(ctx, c, name, "/stats", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// procs returns a copy of what the timeline knows of a topology's
// processes: task → (pid, start, restarts).
func (t *Tracker) procs(cluster, name, id string) map[int]procTrack {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[int]procTrack{}
	tt := t.tracks[trackKey{cluster, name}]
	if tt == nil || tt.id != id {
		return out
	}
	for k, v := range tt.procs {
		out[k] = *v
	}
	return out
}
