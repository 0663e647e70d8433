package stmgr

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/wire"
)

// Setting keys read from Config.Settings.
const (
	KeyBufferMaxBytes    = "egret.stmgr.buffer.max.bytes"
	KeyBatchMaxBytes     = "egret.stmgr.batch.max.bytes"
	KeyHeartbeatInterval = "egret.stmgr.heartbeat.interval"
	KeyMaxFrameBytes     = "egret.wire.max.frame.bytes"
	KeyMetricsInterval   = "egret.metrics.export.interval"
	KeyHighWatermark     = "egret.stmgr.buffer.high.watermark.bytes"
	KeyLowWatermark      = "egret.stmgr.buffer.low.watermark.bytes"
	// KeySocketBufferBytes sizes the kernel send and receive buffers of
	// every data connection (SO_SNDBUF, SO_RCVBUF); 0 leaves the kernel's
	// autotuning (up to several MiB per connection). Kernel buffers hold
	// tuples outside the watermarks' reach, so the default is small.
	KeySocketBufferBytes = "egret.stmgr.socket.buffer.bytes"
	// KeyLedgerMaxRoots bounds the pending roots of each local spout
	// task's acking ledger; a root registered beyond it fails at once
	// (the spout replays it).
	KeyLedgerMaxRoots = "egret.stmgr.ack.ledger.max.roots"
)

// Defaults of the settings.
const (
	DefaultBufferMaxBytes    = 8 << 20
	DefaultBatchMaxBytes     = 64 << 10
	DefaultSocketBufferBytes = 256 << 10
	DefaultHeartbeatInterval = time.Second
	DefaultMetricsInterval   = 10 * time.Second
	// DefaultHighWatermark and DefaultLowWatermark keep what a saturated
	// topology holds in flight small: back pressure engages well before a
	// queue blocks its producers (DefaultBufferMaxBytes), and the bytes
	// cycling through the queues stay near the CPU caches. With 4 and
	// 2 MiB, T3 at-most-once spent a fifth of its CPU on cache misses
	// copying, hashing and comparing tuples that had gone cold in the
	// queues (docs/benchmarks.md, issue 18 fifth round).
	DefaultHighWatermark = 1 << 20
	DefaultLowWatermark  = 512 << 10
	// DefaultBackPressureInterval is how often a stream manager re-sends
	// its back pressure state to its peers.
	DefaultBackPressureInterval = time.Second
	// DefaultBackPressureExpiry is how many intervals a peer's announcement
	// stays valid without being re-sent.
	DefaultBackPressureExpiry = 3
	// DefaultLedgerMaxRoots is 256 Ki roots per spout task (a few MiB).
	DefaultLedgerMaxRoots = 1 << 18
)

// Config configures a stream manager.
type Config struct {
	// TopologyName names the topology: the state manager node
	// /tmanagers/<TopologyName> locates the topology manager.
	TopologyName string
	// TopologyID is checked in every handshake (instances, peers, the
	// topology manager's plans).
	TopologyID string
	// Container is this stream manager's container id (≥ 1).
	Container int
	// Socket is the Unix socket path local instances connect to.
	Socket string
	// Local, when set, is a second listener for local instances, served
	// like the socket and closed with the stream manager: the in-memory
	// listener of the instances that share this process
	// (topology.container.mode process-per-container).
	Local net.Listener
	// Port is the TCP port for peer stream managers; 0 picks a free one.
	Port int
	// BindHost is the interface the TCP port listens on; empty: all.
	BindHost string
	// Host is the address advertised to the topology manager and peers
	// (default: the host name).
	Host string
	// MetricsSocket is the metrics manager's Unix socket; empty disables
	// metrics publishing.
	MetricsSocket string
	// CkptMgrSocket is the checkpoint manager's Unix socket (the
	// container's ckptmgr; effectively-once topologies only).
	CkptMgrSocket string
	// StateManager is the session used to find the topology manager,
	// unless TManager is set.
	StateManager spi.StateManager
	// TManager tells where the topology manager is when the process has no
	// state manager (a container process; daemons/tmlocation).
	TManager TManagerFinder
	// Settings holds the egret.stmgr.*, egret.wire.* and
	// egret.metrics.export.interval keys; absent keys take defaults.
	Settings spi.Config
	// ReconnectMin and ReconnectMax bound the reconnection backoff toward
	// peers and the topology manager (defaults 50ms and 2s).
	ReconnectMin, ReconnectMax time.Duration
	// HandshakeTimeout bounds the first frame of every connection and the
	// wait for a handshake answer (default 10s).
	HandshakeTimeout time.Duration
	// BackPressureInterval is how often the back pressure state is
	// re-sent to peers and the watermarks re-checked (default 1s).
	BackPressureInterval time.Duration
	// BackPressureExpiry is how many intervals a peer's back pressure
	// announcement stays in force without being re-sent (default 3).
	BackPressureExpiry int
}

// settings are the parsed, defaulted values of a Config.
type settings struct {
	bufferMax    int
	batchMax     int
	maxFrame     int
	heartbeat    time.Duration
	metricsEvery time.Duration
	high, low    int
	// liveMax bounds the queue toward a connected destination: the high
	// watermark plus one batch. Beyond it the producers wait (the peer
	// connection or bolt feeding it is not read), so frames already in
	// flight when back pressure engages cannot overshoot further.
	liveMax   int
	sockBuf   int
	ledgerMax int
}

func (c *Config) check() (settings, error) {
	var errs []error
	if c.TopologyName == "" {
		errs = append(errs, errors.New("topology name is required"))
	}
	if c.TopologyID == "" {
		errs = append(errs, errors.New("topology id is required"))
	}
	if c.Container < 1 {
		errs = append(errs, fmt.Errorf("container %d: stream managers run in containers 1 and up", c.Container))
	}
	if c.Socket == "" {
		errs = append(errs, errors.New("the instance socket path is required"))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is not a TCP port", c.Port))
	}
	if (c.StateManager == nil) == (c.TManager == nil) {
		errs = append(errs, errors.New("exactly one of a state manager session and a topology manager finder is required to find the topology manager"))
	}
	var s settings
	var err error
	if s.bufferMax, err = c.Settings.Size(KeyBufferMaxBytes, DefaultBufferMaxBytes, 1<<31-1); err != nil {
		errs = append(errs, err)
	}
	if s.batchMax, err = c.Settings.Size(KeyBatchMaxBytes, DefaultBatchMaxBytes, 1<<31-1); err != nil {
		errs = append(errs, err)
	}
	if s.maxFrame, err = c.Settings.Size(KeyMaxFrameBytes, wire.DefaultMaxFrame, 1<<31-1); err != nil {
		errs = append(errs, err)
	}
	if s.heartbeat, err = c.Settings.Duration(KeyHeartbeatInterval, DefaultHeartbeatInterval); err != nil {
		errs = append(errs, err)
	} else if s.heartbeat <= 0 {
		errs = append(errs, fmt.Errorf("config key %s must be positive", KeyHeartbeatInterval))
	}
	if s.metricsEvery, err = c.Settings.Duration(KeyMetricsInterval, DefaultMetricsInterval); err != nil {
		errs = append(errs, err)
	}
	high, highErr := c.Settings.Size(KeyHighWatermark, DefaultHighWatermark, 1<<31-1)
	if highErr != nil {
		errs = append(errs, highErr)
	}
	lowDefault := DefaultLowWatermark
	if highErr == nil && high != DefaultHighWatermark {
		lowDefault = high / 2 // only the high watermark was set
	}
	low, lowErr := c.Settings.Size(KeyLowWatermark, lowDefault, 1<<31-1)
	if lowErr != nil {
		errs = append(errs, lowErr)
	}
	if highErr == nil && lowErr == nil {
		s.high, s.low = watermarks(high, low, s.bufferMax)
		s.liveMax = min(s.bufferMax, s.high+s.batchMax)
		if low >= high {
			errs = append(errs, fmt.Errorf("config key %s (%d) must be below %s (%d)", KeyLowWatermark, low, KeyHighWatermark, high))
		}
	}
	if v := c.Settings.String(KeySocketBufferBytes, ""); v == "0" {
		s.sockBuf = 0 // the kernel sizes the buffers
	} else if s.sockBuf, err = c.Settings.Size(KeySocketBufferBytes, DefaultSocketBufferBytes, 1<<30); err != nil {
		errs = append(errs, err)
	}
	if s.ledgerMax, err = c.Settings.Int(KeyLedgerMaxRoots, DefaultLedgerMaxRoots); err != nil {
		errs = append(errs, err)
	} else if s.ledgerMax < 1 {
		errs = append(errs, fmt.Errorf("config key %s must be at least 1", KeyLedgerMaxRoots))
	}
	if c.Host == "" {
		if c.Host, err = os.Hostname(); err != nil {
			errs = append(errs, fmt.Errorf("no Host given and the host name is unknown: %w", err))
		}
	}
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = 50 * time.Millisecond
	}
	if c.ReconnectMax <= 0 {
		c.ReconnectMax = 2 * time.Second
	}
	if c.BackPressureInterval <= 0 {
		c.BackPressureInterval = DefaultBackPressureInterval
	}
	if c.BackPressureExpiry <= 0 {
		c.BackPressureExpiry = DefaultBackPressureExpiry
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("stream manager config: %w", err)
	}
	return s, nil
}

// watermarks returns the effective watermarks. A queue never holds more
// than bufferMax, so a high watermark at or above it would never be
// reached: it is lowered to half of bufferMax (and the low one to a
// quarter) rather than silently disabling back pressure.
func watermarks(high, low, bufferMax int) (int, int) {
	if high >= bufferMax {
		high, low = max(bufferMax/2, 2), max(bufferMax/4, 1)
	}
	return high, min(low, high-1)
}
