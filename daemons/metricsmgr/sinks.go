package metricsmgr

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/internal/logfile"
	"github.com/egret-stream/egret/proto/egretpb"
)

const sinkQueue = 1024

// reportQueue is a sink's bounded queue of reports (sinkQueue).
type reportQueue chan *egretpb.MetricsPublish

func newReportQueue() reportQueue { return make(reportQueue, sinkQueue) }

// offer queues m without blocking; false if the queue is full.
func (q reportQueue) offer(m *egretpb.MetricsPublish) bool {
	select {
	case q <- m:
		return true
	default:
		return false
	}
}

// The sinks a metrics manager can feed (egret.metrics.sinks).
const (
	SinkFile       = "file"
	SinkTManager   = "tmanager"
	SinkPrometheus = "prometheus"
	SinkGraphite   = "graphite"
)

// Sinks are every sink's name.
var Sinks = []string{SinkFile, SinkTManager, SinkPrometheus, SinkGraphite}

// KeySinks is the cluster config key listing the enabled sinks.
const KeySinks = "egret.metrics.sinks"

// DefaultSinks are the sinks of a config that does not set KeySinks.
var DefaultSinks = []string{SinkFile, SinkTManager}

// SinksFromConfig returns the sinks cfg enables: the comma-separated
// KeySinks (empty: none), DefaultSinks when the key is absent. A name that
// is not a built-in sink (Sinks) is an external sink: the plugin binary
// egret-metricssink-<name>.
func SinksFromConfig(cfg spi.Config) ([]string, error) {
	v, ok := cfg.Lookup(KeySinks)
	if !ok {
		return slices.Clone(DefaultSinks), nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(Sinks, s) && !pluginName.MatchString(s) {
			return nil, fmt.Errorf("config key %s: metrics sink name %q is invalid: use a built-in sink (%s) or the name of a plugin (letters, digits, '.', '_', '-')", KeySinks, s, strings.Join(Sinks, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// pluginName is the syntax of an external sink's name.
var pluginName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// newSinks creates the sinks cfg.Sinks names; the prometheus sink binds its
// endpoint here, so that a port that cannot be had fails the start.
func newSinks(cfg Config, log *zap.Logger) (sinks []sink, err error) {
	defer func() {
		if err != nil {
			closeSinks(sinks)
		}
	}()
	for _, name := range cfg.Sinks {
		switch name {
		case SinkFile:
			if cfg.FilePath == "" {
				return nil, errors.New("metricsmgr: the file sink needs a file path (--metrics-file)")
			}
			sinks = append(sinks, newFileSink(cfg.FilePath, cfg.FileMaxBytes, cfg.FileMaxFiles, log))
		case SinkTManager:
			if cfg.StateManager == nil {
				return nil, errors.New("metricsmgr: the tmanager sink needs a state manager to find the topology manager")
			}
			sinks = append(sinks, newTManagerSink(cfg.TopologyName, cfg.StateManager, log))
		case SinkPrometheus:
			if cfg.PrometheusAddr == "" {
				return sinks, errors.New("metricsmgr: the prometheus sink needs an address to listen on (--prometheus-addr)")
			}
			p := newPromSink(cfg.TopologyName, cfg.Container, cfg.PrometheusAddr, cfg.PrometheusTargetsFile, log.Named("prometheus"))
			if err := p.listen(); err != nil {
				return sinks, err
			}
			sinks = append(sinks, p)
		case SinkGraphite:
			if cfg.GraphiteAddr == "" {
				return sinks, fmt.Errorf("metricsmgr: the graphite sink needs the address of a line receiver (%s)", KeyGraphiteAddress)
			}
			if _, _, err := net.SplitHostPort(cfg.GraphiteAddr); err != nil {
				return sinks, fmt.Errorf("metricsmgr: %s: %q is not host:port", KeyGraphiteAddress, cfg.GraphiteAddr)
			}
			sinks = append(sinks, newGraphiteSink(cfg.TopologyName, cfg.GraphiteAddr, cmp.Or(cfg.GraphitePrefix, "egret"), log.Named("graphite")))
		default:
			if cfg.SinkLoader == nil {
				return sinks, fmt.Errorf("metricsmgr: metrics sink %q is not built in (%s) and no plugin loader is configured", name, strings.Join(Sinks, ", "))
			}
			sinks = append(sinks, newPluginSink(name, cfg.SinkLoader, cfg.SinkConfig, log.Named("plugin").With(zap.String("sink", name))))
		}
	}
	return sinks, nil
}

// closeSinks releases what sinks hold before they run (the prometheus
// sink's listener).
func closeSinks(sinks []sink) {
	for _, s := range sinks {
		if p, ok := s.(*promSink); ok {
			p.close()
		}
	}
}

// Config keys of the file, prometheus and graphite sinks.
const (
	KeyFileMaxSize     = "egret.metrics.file.max.size"
	KeyFileMaxFiles    = "egret.metrics.file.max.files"
	KeyPrometheusPort  = "egret.metrics.prometheus.port"
	KeyGraphiteAddress = "egret.metrics.graphite.address"
	KeyGraphitePrefix  = "egret.metrics.graphite.prefix"
)

// fileSink appends reports as JSON lines to a file rotated at its size
// cap, keeping files rotated copies.
type fileSink struct {
	path  string
	max   int64
	files int
	log   *zap.Logger
	ch    reportQueue
}

func newFileSink(path string, max int64, files int, log *zap.Logger) *fileSink {
	if max <= 0 {
		max = 64 << 20
	}
	if files <= 0 {
		files = 1
	}
	return &fileSink{path: path, max: max, files: files, log: log, ch: newReportQueue()}
}

func (s *fileSink) offer(m *egretpb.MetricsPublish) bool { return s.ch.offer(m) }

func (s *fileSink) name() string { return SinkFile }

func (s *fileSink) run(ctx context.Context) {
	var f *logfile.File
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	// Lines are written in batches of whole lines, at most one file's
	// worth, so rotation never splits a line.
	maxBatch := int(min(s.max, 64<<10))
	var batch []byte
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.ch:
			if f == nil {
				var err error
				if f, err = logfile.Open(s.path, logfile.Limits{MaxSize: s.max, MaxFiles: s.files}, s.log); err != nil {
					s.log.Error("file sink cannot open its file; dropping reports", zap.String("path", s.path), zap.Error(err))
					continue
				}
			}
			line, err := protojson.Marshal(m)
			if err != nil {
				continue
			}
			if len(batch) > 0 && len(batch)+len(line)+1 > maxBatch {
				s.write(f, batch)
				batch = batch[:0]
			}
			batch = append(append(batch, line...), '\n')
			if len(s.ch) == 0 {
				s.write(f, batch)
				batch = batch[:0]
			}
		}
	}
}

func (s *fileSink) write(f *logfile.File, b []byte) {
	if _, err := f.Write(b); err != nil {
		s.log.Error("file sink cannot write its file", zap.String("path", s.path), zap.Error(err))
	}
}

// tmanagerSink forwards reports to the topology manager's server port.
type tmanagerSink struct {
	topology string
	store    *state.Store
	log      *zap.Logger
	ch       reportQueue
}

func newTManagerSink(topology string, sm spi.StateManager, log *zap.Logger) *tmanagerSink {
	return &tmanagerSink{topology: topology, store: state.New(sm), log: log, ch: newReportQueue()}
}

func (s *tmanagerSink) offer(m *egretpb.MetricsPublish) bool { return s.ch.offer(m) }

func (s *tmanagerSink) name() string { return SinkTManager }

func (s *tmanagerSink) run(ctx context.Context) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		err := s.forward(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Debug("tmanager sink disconnected; retrying", zap.Error(err))
		select {
		case <-time.After(backoff(attempt)):
		case <-ctx.Done():
			return
		}
	}
}

// forward connects to the current topology manager and sends reports until
// the connection fails.
func (s *tmanagerSink) forward(ctx context.Context) error {
	loc, err := s.store.TManagerLocation(ctx, s.topology)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(loc.GetHost(), strconv.Itoa(int(loc.GetServerPort())))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial topology manager at %s: %w", addr, err)
	}
	defer conn.Close()
	// The topology manager never writes to a metrics connection; a read
	// returning means it closed.
	closed := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		close(closed)
	}()
	w := bufio.NewWriter(conn)
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return errors.New("topology manager closed the connection")
		case m := <-s.ch:
			buf, err = wire.AppendMessage(buf[:0], m)
			if err != nil {
				continue
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
			if len(s.ch) == 0 {
				if err := w.Flush(); err != nil {
					return err
				}
			}
		}
	}
}
