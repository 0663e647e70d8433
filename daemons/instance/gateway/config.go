package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/wire"
)

// Setting keys read from Config.Settings.
const (
	KeyQueueMaxBytes   = "egret.instance.queue.max.bytes"
	KeyMaxFrameBytes   = "egret.wire.max.frame.bytes"
	KeyMetricsInterval = "egret.metrics.export.interval"
)

// Defaults of the settings.
const (
	// DefaultQueueMaxBytes bounds the inbound and the outbound queue of an
	// instance, each. They sit outside the stream manager's watermarks:
	// under back pressure both stay full, so their size adds to every
	// process's memory and to the tuples in flight (see
	// docs/backpressure.md). 1 MiB is 32 batches of the runtime's 32 KiB,
	// enough to keep a fast path busy.
	DefaultQueueMaxBytes = 1 << 20
	// maxQueueBytes is the largest queue bound accepted.
	maxQueueBytes = 1 << 30

	DefaultMetricsInterval = 10 * time.Second
	writeBufferBytes       = 64 << 10
)

// Errors Run returns.
var (
	// ErrLayoutChanged: a new physical plan moves or renumbers tasks. The
	// instance must be restarted with the new plan (the topology binary
	// exits with code 3 and the executor starts it again).
	ErrLayoutChanged = errors.New("the physical plan changed the task layout; this instance must restart")
	// ErrRefused: the stream manager refused the registration (wrong
	// topology id, task not placed in this container).
	ErrRefused = errors.New("stream manager refused the instance")
)

// Config describes the instance a gateway runs.
type Config struct {
	// Topology is the topology as the binary builds it: its factories,
	// custom groupings and value types are used; its logical plan is
	// replaced by the physical plan's (parallelism may differ).
	Topology    *api.Topology
	TopologyID  string
	TaskID      int
	Container   int
	StMgrSocket string
	// Dial, when set, connects to the stream manager instead of dialing
	// StMgrSocket: an instance that shares its stream manager's process
	// (topology.container.mode process-per-container) dials an in-memory
	// listener. StMgrSocket then only names it in logs.
	Dial func(ctx context.Context) (net.Conn, error)
	// MetricsSocket is the metrics manager's socket; empty: no metrics.
	MetricsSocket string
	// CkptMgrSocket is the container's checkpoint manager's socket
	// (effectively-once): the instance streams its checkpoints' files
	// there (daemons/ckptio).
	CkptMgrSocket string
	// Settings holds egret.instance.queue.max.bytes,
	// egret.wire.max.frame.bytes and egret.metrics.export.interval.
	Settings spi.Config
	Logger   *zap.Logger
	// Metrics receives the instance's counters (allocated when nil).
	Metrics *instance.Metrics
	// StateDir is the directory of the task's state backend
	// (instance.Config.StateDir; empty: a temporary one).
	StateDir string
	// Stats receives the gateway's counters (allocated when nil).
	Stats *Stats
	// ReconnectMin and ReconnectMax bound the reconnection backoff
	// (defaults 50ms and 2s).
	ReconnectMin, ReconnectMax time.Duration
	// HandshakeTimeout bounds the wait for the registration response
	// (default 10s).
	HandshakeTimeout time.Duration
	// DrainTimeout bounds how long shutdown waits for queued batches to be
	// written (default 5s).
	DrainTimeout time.Duration
	// ResourcesDir is the directory of the files shipped with the
	// topology (the package's resources/ directory).
	ResourcesDir string
}

// Stats are the gateway's counters, readable while it runs.
type Stats struct {
	// TuplesLost counts outbound tuples dropped because the stream manager
	// was unreachable and the outbound queue full, or because a connection
	// failed while they were being written.
	TuplesLost atomic.Int64
	// TuplesIn and TuplesOut count tuples received and written.
	TuplesIn, TuplesOut atomic.Int64
	// Registrations counts registrations that got a plan placing the task
	// (1 + reconnections).
	Registrations atomic.Int64
	// Connected reports whether the stream manager connection is up.
	Connected atomic.Bool
	// Direct reports whether the current connection hands frames to a
	// stream manager in this process directly (container mode).
	Direct atomic.Bool
	// PlanVersion is the version of the last physical plan received.
	PlanVersion atomic.Uint64
}

type settings struct {
	queueMax     int
	maxFrame     int
	metricsEvery time.Duration
}

func (c *Config) check() (settings, error) {
	var errs []error
	if c.Topology == nil {
		errs = append(errs, errors.New("the topology is required"))
	}
	if c.TopologyID == "" {
		errs = append(errs, errors.New("--topology-id is required"))
	}
	if c.TaskID < 0 {
		errs = append(errs, fmt.Errorf("--task %d is not a task id", c.TaskID))
	}
	if c.Container < 1 {
		errs = append(errs, fmt.Errorf("--container %d: instances run in containers 1 and up", c.Container))
	}
	if c.StMgrSocket == "" && c.Dial == nil {
		errs = append(errs, errors.New("--stmgr-socket is required"))
	}
	var s settings
	var err error
	if s.queueMax, err = c.Settings.Size(KeyQueueMaxBytes, DefaultQueueMaxBytes, maxQueueBytes); err != nil {
		errs = append(errs, err)
	}
	if s.maxFrame, err = c.Settings.Size(KeyMaxFrameBytes, wire.DefaultMaxFrame, 1<<31-1); err != nil {
		errs = append(errs, err)
	}
	if s.metricsEvery, err = c.Settings.Duration(KeyMetricsInterval, DefaultMetricsInterval); err != nil {
		errs = append(errs, err)
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Metrics == nil {
		c.Metrics = &instance.Metrics{}
	}
	if c.Stats == nil {
		c.Stats = &Stats{}
	}
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = 50 * time.Millisecond
	}
	if c.ReconnectMax <= 0 {
		c.ReconnectMax = 2 * time.Second
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 5 * time.Second
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("instance config: %w", err)
	}
	return s, nil
}
