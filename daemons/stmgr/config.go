package stmgr

import (
	"errors"
	"fmt"
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
)

// Defaults of the settings.
const (
	DefaultBufferMaxBytes    = 8 << 20
	DefaultBatchMaxBytes     = 64 << 10
	DefaultHeartbeatInterval = time.Second
	DefaultMetricsInterval   = 10 * time.Second
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
	// Port is the TCP port for peer stream managers; 0 picks a free one.
	Port int
	// Host is the address advertised to the topology manager and peers
	// (default: the host name). The TCP listener binds every interface.
	Host string
	// MetricsSocket is the metrics manager's Unix socket; empty disables
	// metrics publishing.
	MetricsSocket string
	// StateManager is the session used to find the topology manager.
	StateManager spi.StateManager
	// Settings holds the egret.stmgr.*, egret.wire.* and
	// egret.metrics.export.interval keys; absent keys take defaults.
	Settings spi.Config
	// ReconnectMin and ReconnectMax bound the reconnection backoff toward
	// peers and the topology manager (defaults 50ms and 2s).
	ReconnectMin, ReconnectMax time.Duration
	// HandshakeTimeout bounds the first frame of every connection and the
	// wait for a handshake answer (default 10s).
	HandshakeTimeout time.Duration
}

// settings are the parsed, defaulted values of a Config.
type settings struct {
	bufferMax    int
	batchMax     int
	maxFrame     int
	heartbeat    time.Duration
	metricsEvery time.Duration
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
	if c.StateManager == nil {
		errs = append(errs, errors.New("a state manager session is required to find the topology manager"))
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
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("stream manager config: %w", err)
	}
	return s, nil
}
