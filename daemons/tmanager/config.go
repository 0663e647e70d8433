package tmanager

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/wire"
)

// Settings keys read from Config.Settings (the resolved cluster config).
const (
	KeyHeartbeatTimeout  = "egret.tmanager.heartbeat.timeout"
	KeyEstablishTimeout  = "egret.tmanager.establish.timeout"
	KeyHeartbeatInterval = "egret.stmgr.heartbeat.interval"
	KeyMaxFrameBytes     = "egret.wire.max.frame.bytes"
)

// Defaults of the settings and of the Limits fields.
const (
	DefaultHeartbeatTimeout       = 5 * time.Second
	DefaultEstablishTimeout       = 60 * time.Second
	DefaultHeartbeatInterval      = time.Second
	DefaultEstablishRetryInterval = time.Second
	DefaultMaxMetricSources       = 4096
	DefaultMaxMetricNames         = 512
	DefaultMaxExceptions          = 64
	DefaultMaxConnections         = 4096
	DefaultConnQueue              = 256
	DefaultWriteTimeout           = 10 * time.Second
)

// Config configures a topology manager.
type Config struct {
	// TopologyName and TopologyID name the submission this topology
	// manager serves; the state manager's topology must carry the same id.
	TopologyName string
	TopologyID   string
	// Host is the address advertised in the location node (stream managers
	// and metrics managers dial it); empty: os.Hostname().
	Host string
	// BindHost is the interface both listeners bind; empty: all.
	BindHost string
	// ServerPort (framed TCP: stream managers and metrics managers) and
	// HTTPPort (control and stats API); 0 picks a free port.
	ServerPort int
	HTTPPort   int
	// StateManager is this process's state-manager session; it owns the
	// ephemeral /tmanagers/<name> node.
	StateManager spi.StateManager
	// Settings is the resolved cluster config (see the Key constants).
	Settings spi.Config
	// Clock drives heartbeat eviction and establish retries; nil: the
	// system clock. Tests inject a fake one.
	Clock Clock
	// Limits bounds memory and connections; zero fields take defaults.
	Limits Limits
	// MetricsSocket, when set, receives the checkpoint metrics of an
	// effectively-once topology every MetricsInterval (default 10s), so
	// that they reach every metrics sink.
	MetricsSocket   string
	MetricsInterval time.Duration
	// Ready, when set, is called once the topology manager holds its
	// location node, has read the topology's state and serves both ports.
	// It runs on Run's goroutine and must not block.
	Ready func(Endpoints)
}

// Limits are the bounds of the topology manager; a zero field takes the
// matching Default constant.
type Limits struct {
	// EstablishRetryInterval is the pause between attempts to create the
	// location node while another session holds it (a deletion of the node
	// also wakes the retry at once).
	EstablishRetryInterval time.Duration
	// MaxMetricSources bounds the metric sources kept (one per publishing
	// process); the least recently updated one is forgotten first. Zero
	// sizes it to the packing plan (sourcesFor), and again at every
	// packing plan change, never below DefaultMaxMetricSources.
	MaxMetricSources int
	// MaxMetricNames bounds the metric names kept per source.
	MaxMetricNames int
	// MaxExceptions bounds the distinct exceptions kept per component.
	MaxExceptions int
	// MaxConnections bounds simultaneous connections on the server port.
	// Zero sizes it to the packing plan the topology manager starts with
	// (connectionsFor), never below DefaultMaxConnections.
	MaxConnections int
	// ConnQueue bounds the frames queued toward one connection; a peer that
	// lets it fill is disconnected (it re-registers and gets the plan).
	ConnQueue int
	// WriteTimeout bounds one write to a peer.
	WriteTimeout time.Duration
}

// Endpoints are the bound addresses of a running topology manager.
type Endpoints struct {
	// ServerAddr is the framed TCP listener (host:port).
	ServerAddr string
	// HTTPAddr is the HTTP API listener (host:port).
	HTTPAddr string
}

// settings is Config after validation, with every default applied.
type settings struct {
	Config
	heartbeatTimeout  time.Duration
	heartbeatInterval time.Duration
	establishTimeout  time.Duration
	maxFrame          int
	// autoSources and autoConns: the bounds follow the packing plan.
	autoSources, autoConns bool
}

func (c Config) resolve() (*settings, error) {
	if c.TopologyName == "" {
		return nil, errors.New("tmanager: the topology name is required (--topology)")
	}
	if err := names.Check(names.Topology, c.TopologyName); err != nil {
		return nil, fmt.Errorf("tmanager: %w", err)
	}
	if c.TopologyID == "" {
		return nil, errors.New("tmanager: the topology id is required (--topology-id)")
	}
	if c.StateManager == nil {
		return nil, errors.New("tmanager: a state manager session is required")
	}
	if c.ServerPort < 0 || c.ServerPort > 65535 || c.HTTPPort < 0 || c.HTTPPort > 65535 {
		return nil, fmt.Errorf("tmanager: ports must be 0..65535 (0 = any free port), got server %d and http %d", c.ServerPort, c.HTTPPort)
	}
	s := &settings{Config: c}
	var err error
	var errs []error
	if s.heartbeatTimeout, err = c.Settings.Duration(KeyHeartbeatTimeout, DefaultHeartbeatTimeout); err != nil {
		errs = append(errs, err)
	}
	if s.heartbeatInterval, err = c.Settings.Duration(KeyHeartbeatInterval, DefaultHeartbeatInterval); err != nil {
		errs = append(errs, err)
	}
	if s.establishTimeout, err = c.Settings.Duration(KeyEstablishTimeout, DefaultEstablishTimeout); err != nil {
		errs = append(errs, err)
	}
	maxFrame, err := topology.ParseBytes(c.Settings.String(KeyMaxFrameBytes, fmt.Sprint(wire.DefaultMaxFrame)))
	if err != nil {
		errs = append(errs, fmt.Errorf("config key %s: %w", KeyMaxFrameBytes, err))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("tmanager: %w", errors.Join(errs...))
	}
	if s.heartbeatTimeout <= 0 || s.heartbeatInterval <= 0 || s.establishTimeout <= 0 {
		return nil, fmt.Errorf("tmanager: %s, %s and %s must be positive", KeyHeartbeatTimeout, KeyHeartbeatInterval, KeyEstablishTimeout)
	}
	if maxFrame < 64 || maxFrame > 1<<30 {
		return nil, fmt.Errorf("tmanager: config key %s: %d bytes is outside 64 B..1 GiB", KeyMaxFrameBytes, maxFrame)
	}
	s.maxFrame = int(maxFrame)
	if s.Host == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		s.Host = h
	}
	if s.Clock == nil {
		s.Clock = SystemClock()
	}
	l := &s.Limits
	s.autoSources, s.autoConns = l.MaxMetricSources <= 0, l.MaxConnections <= 0
	setDuration(&l.EstablishRetryInterval, DefaultEstablishRetryInterval)
	setDuration(&l.WriteTimeout, DefaultWriteTimeout)
	setInt(&l.MaxMetricSources, DefaultMaxMetricSources)
	setInt(&l.MaxMetricNames, DefaultMaxMetricNames)
	setInt(&l.MaxExceptions, DefaultMaxExceptions)
	setInt(&l.MaxConnections, DefaultMaxConnections)
	setInt(&l.ConnQueue, DefaultConnQueue)
	return s, nil
}

// Metric sources and server connections per container and per task that
// the automatic bounds allow. A container publishes about 5 + 2×tasks
// sources (its executor, stream manager, metrics manager, shell and
// checkpoint manager; each instance and the executor's report of it) and
// holds 2 connections (stream manager, metrics manager); the bounds leave
// room for about twice that, so a scale-up is covered until the next
// packing plan resizes them.
const (
	sourcesPerContainer = 10
	sourcesPerTask      = 4
	connsPerContainer   = 4
)

// sourcesFor is the automatic metric-source bound of a packing plan of
// containers containers and tasks tasks.
func sourcesFor(containers, tasks int) int {
	return max(DefaultMaxMetricSources, sourcesPerContainer*containers+sourcesPerTask*tasks)
}

// connectionsFor is the automatic connection bound.
func connectionsFor(containers int) int {
	return max(DefaultMaxConnections, connsPerContainer*containers)
}

func taskCount(p *plan.PackingPlan) int {
	n := 0
	for _, c := range p.Containers {
		n += len(c.Instances)
	}
	return n
}

// sizeLimits sets the automatic bounds for a packing plan.
func (s *settings) sizeLimits(containers, tasks int) {
	if s.autoSources {
		s.Limits.MaxMetricSources = sourcesFor(containers, tasks)
	}
	if s.autoConns {
		s.Limits.MaxConnections = connectionsFor(containers)
	}
}

// evictionCheckInterval is how often silent stream managers are looked
// for: the heartbeat interval, but at least twice per timeout.
func (s *settings) evictionCheckInterval() time.Duration {
	return min(s.heartbeatInterval, s.heartbeatTimeout/2)
}

func setDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

func setInt(n *int, def int) {
	if *n <= 0 {
		*n = def
	}
}

// Clock is the time source of the topology manager.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
	// NewTicker returns a ticker with period d.
	NewTicker(d time.Duration) Ticker
}

// Ticker is a periodic timer of a Clock.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock returns the clock of the time package.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (systemClock) NewTicker(d time.Duration) Ticker       { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }
