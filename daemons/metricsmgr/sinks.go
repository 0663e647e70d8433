package metricsmgr

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
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

// Sinks are the built-in sinks' names, sorted.
var Sinks = slices.Sorted(maps.Keys(builtins))

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

// builtinSink builds a built-in sink from the metrics manager's config.
type builtinSink func(cfg Config, log *zap.Logger) (sink, error)

// builtins are the sinks compiled into the metrics manager, by their name
// in KeySinks; every other name is a plugin (SinkLoader). Each is defined
// beside its sink.
var builtins = map[string]builtinSink{
	SinkFile:       fileSinkFrom,
	SinkTManager:   tmanagerSinkFrom,
	SinkPrometheus: promSinkFrom,
	SinkGraphite:   graphiteSinkFrom,
}

// closer is a sink holding something before it runs (the prometheus
// sink's listener), released when a later sink fails to build.
type closer interface{ close() }

// newSinks creates the sinks cfg.Sinks names; the prometheus sink binds its
// endpoint here, so that a port that cannot be had fails the start.
func newSinks(cfg Config, log *zap.Logger) (sinks []sink, err error) {
	defer func() {
		if err != nil {
			closeSinks(sinks)
		}
	}()
	for _, name := range cfg.Sinks {
		if build, ok := builtins[name]; ok {
			s, err := build(cfg, log)
			if err != nil {
				return sinks, fmt.Errorf("metricsmgr: %w", err)
			}
			sinks = append(sinks, s)
			continue
		}
		if cfg.SinkLoader == nil {
			return sinks, fmt.Errorf("metricsmgr: metrics sink %q is not built in (%s) and no plugin loader is configured", name, strings.Join(Sinks, ", "))
		}
		sinks = append(sinks, newPluginSink(name, cfg.SinkLoader, cfg.SinkConfig, log.Named("plugin").With(zap.String("sink", name))))
	}
	return sinks, nil
}

// closeSinks releases what sinks hold before they run.
func closeSinks(sinks []sink) {
	for _, s := range sinks {
		if c, ok := s.(closer); ok {
			c.close()
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
