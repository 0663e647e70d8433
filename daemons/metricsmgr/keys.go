package metricsmgr

import (
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

// The built-in sinks register with core/spi like every other backend, with
// the config keys each reads: conf derives the schema, the defaults and
// the list of built-in sink names from the registry.
func init() {
	spi.RegisterMetricsSink(SinkFile, inManager(SinkFile),
		spi.Key{Name: KeyFileMaxSize, Type: spi.KeyBytes, Default: "64MiB", Check: spi.CheckPositive,
			Doc: "Size at which the file sink rotates metrics.jsonl (to metrics.jsonl.1, older ones shift up); a file exceeds it by at most one report."},
		spi.Key{Name: KeyFileMaxFiles, Type: spi.KeyInt, Default: "1", Check: spi.CheckPositive,
			Doc: "Rotated files of the file sink kept besides the current one (metrics.jsonl.1 ... .N); the oldest is deleted."})
	spi.RegisterMetricsSink(SinkGraphite, inManager(SinkGraphite),
		spi.Key{Name: KeyGraphiteAddress, Type: spi.KeyString, Default: "", Check: spi.CheckHostPorts,
			Doc: "host:port of the carbon plaintext line receiver the graphite sink writes to (required by it)."},
		spi.Key{Name: KeyGraphitePrefix, Type: spi.KeyString, Default: "egret", Check: checkGraphitePrefix,
			Doc: "First part of every Graphite path: <prefix>.<topology>.<component>.<task>.<metric> for an instance, <prefix>.<topology>.<daemon>.<container>.<metric> for a daemon."})
	spi.RegisterMetricsSink(SinkPrometheus, inManager(SinkPrometheus),
		spi.Key{Name: KeyPrometheusPort, Type: spi.KeyInt, Default: "0", Check: spi.CheckPort,
			Doc: "Port of each container's Prometheus endpoint, on $EGRET_BIND_HOST (else every interface); 0: any free port. A port the resource manager assigns ($EGRET_PORT_METRICS: Nomad, Mesos) wins. The bound address is written to prometheus-targets.json (file_sd format) in the container's working directory."})
	spi.RegisterMetricsSink(SinkTManager, inManager(SinkTManager))
}

// inManager is the factory of a built-in sink: the metrics manager builds
// it with its container (newSinks), so it cannot be served on its own.
func inManager(name string) spi.MetricsSinkFactory {
	return func(spi.Config, *zap.Logger) (spi.MetricsSink, error) {
		return nil, fmt.Errorf("the %s metrics sink runs inside each container's metrics manager (egret metricsmgr), which builds it: %w", name, spi.ErrUnsupported)
	}
}

func checkGraphitePrefix(v string) error {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') || strings.HasPrefix(v, ".") || strings.HasSuffix(v, ".") || strings.Contains(v, "..") {
			return fmt.Errorf("%q is not a Graphite path prefix (letters, digits, _ and -, parts separated by single dots)", v)
		}
	}
	if v == "" {
		return errors.New("the prefix is empty")
	}
	return nil
}
