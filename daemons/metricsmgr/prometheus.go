package metricsmgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Bounds of the prometheus sink: a series source (one process's report)
// not heard from for promStaleAfter is dropped from the scrape, and at most
// promMaxSources sources are held (reports of further sources are dropped
// and counted).
const (
	promStaleAfter = 5 * time.Minute
	promMaxSources = 4096
)

// gauges are the published metrics that are levels, not running totals;
// every other metric (user counters included) is a counter since the
// process started, exported as <name>_total.
var gauges = map[string]bool{
	"gateway.in.queue.bytes":  true,
	"gateway.out.queue.bytes": true,
	"instance.pending.roots":  true,
	"instance.held.tuples":    true,
	// The last checkpoint of a task (docs/checkpoints.md).
	"instance.checkpoint.bytes":             true,
	"instance.checkpoint.async.nanos":       true,
	"instance.checkpoint.full.bytes":        true,
	"instance.checkpoint.incremental.bytes": true,
	"stmgr.ack.roots.pending":               true,
	"stmgr.backpressure.active":             true,
	"stmgr.instances.connected":             true,
	"stmgr.peers.connected":                 true,
	"stmgr.queue.bytes":                     true,
	"stmgr.instance.queue.bytes":            true, // per destination task
	"stmgr.peer.queue.bytes":                true, // per destination container
	"process.rss.bytes":                     true,
	"process.open.fds":                      true,
	"process.goroutines":                    true,
	"process.pid":                           true,
	"process.start.unix":                    true,
	// The executor's view of each instance's resources (docs/isolation.md).
	"executor.cgroups":            true,
	"executor.cgroup.version":     true,
	"resource.cgroup":             true,
	"resource.cpu.limit.cores":    true,
	"resource.disk.bytes":         true,
	"resource.disk.limit.bytes":   true,
	"resource.disk.over":          true,
	"resource.gomaxprocs":         true,
	"resource.gomemlimit.bytes":   true,
	"resource.memory.bytes":       true,
	"resource.memory.limit.bytes": true,
}

// latencies are the latency series: the sum (nanoseconds) and count
// metrics of a latency and its histogram's buckets (hist.le.<bucket>, see
// wire.LatencyHistogram). They are exported as one Prometheus histogram in
// seconds: with the buckets, its count is their total; without (a process
// that publishes none) it has the +Inf bucket only, holding the count
// metric, so that every series of the family has one type. The parts are
// not exported on their own.
var latencies = []struct{ name, sum, count, hist string }{
	{"egret_instance_execute_latency_seconds", "instance.execute.nanos", "instance.executed", "instance.execute.latency"},
	{"egret_instance_complete_latency_seconds", "instance.complete.latency.nanos", "instance.complete.latency.count", "instance.complete.latency"},
}

// promSource identifies the process a report came from.
type promSource struct {
	source, component string
	container, task   int32
}

type promReport struct {
	values map[string]float64
	at     time.Time
}

// promSink serves the latest report of every process of the container on a
// Prometheus scrape endpoint (GET /metrics).
type promSink struct {
	topology string
	addr     string // host:port to listen on; port 0: any
	// targetsFile, when set, receives the bound address in Prometheus'
	// file_sd format once the endpoint listens.
	targetsFile string
	container   int
	log         *zap.Logger
	ch          reportQueue
	now         func() time.Time

	ln net.Listener

	mu      sync.Mutex
	reports map[promSource]promReport
	dropped float64 // reports of sources beyond promMaxSources
}

// promSinkFrom is the prometheus sink of cfg, its endpoint bound.
func promSinkFrom(cfg Config, log *zap.Logger) (sink, error) {
	if cfg.PrometheusAddr == "" {
		return nil, errors.New("the prometheus sink needs an address to listen on (--prometheus-addr)")
	}
	p := newPromSink(cfg.TopologyName, cfg.Container, cfg.PrometheusAddr, cfg.PrometheusTargetsFile, log.Named("prometheus"))
	if err := p.listen(); err != nil {
		return nil, err
	}
	return p, nil
}

func newPromSink(topology string, container int, addr, targetsFile string, log *zap.Logger) *promSink {
	return &promSink{topology: topology, container: container, addr: addr, targetsFile: targetsFile, log: log,
		ch: newReportQueue(), now: time.Now,
		reports: map[promSource]promReport{}}
}

func (s *promSink) offer(m *egretpb.MetricsPublish) bool { return s.ch.offer(m) }

func (s *promSink) name() string { return SinkPrometheus }

// listen binds the scrape endpoint. The metrics manager fails to start
// when it cannot: a port that is taken is an operator's error to see at
// once, not a sink that silently exports nothing.
func (s *promSink) listen() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("metricsmgr: prometheus sink: listen on %s: %w", s.addr, err)
	}
	s.ln = ln
	return nil
}

func (s *promSink) close() { _ = s.ln.Close() }

func (s *promSink) run(ctx context.Context) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(s.log), ErrorHandling: promhttp.ContinueOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(s.ln) }()
	defer srv.Close()
	addr := s.ln.Addr().String()
	if err := s.writeTargets(addr); err != nil {
		s.log.Warn("prometheus sink cannot write its targets file", zap.String("path", s.targetsFile), zap.Error(err))
	}
	s.log.Info("prometheus sink listening", zap.String("address", addr))
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.ch:
			s.apply(m)
		}
	}
}

// apply records m as its source's latest report.
func (s *promSink) apply(m *egretpb.MetricsPublish) {
	k := promSource{source: m.GetSource(), component: m.GetComponent(), container: m.GetContainer(), task: m.GetTaskId()}
	values := make(map[string]float64, len(m.GetMetrics()))
	for _, mt := range m.GetMetrics() {
		values[mt.GetName()] = mt.GetValue()
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.reports[k]; !ok && len(s.reports) >= promMaxSources {
		s.expireLocked(now)
		if len(s.reports) >= promMaxSources {
			s.dropped++
			return
		}
	}
	s.reports[k] = promReport{values: values, at: now}
}

func (s *promSink) expireLocked(now time.Time) {
	for k, r := range s.reports {
		if now.Sub(r.at) > promStaleAfter {
			delete(s.reports, k)
		}
	}
}

// Describe sends no descriptors: the series depend on what processes
// report (an unchecked collector).
func (s *promSink) Describe(chan<- *prometheus.Desc) {}

// Collect turns the latest reports into Prometheus series.
func (s *promSink) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.now())
	descs := map[string]*prometheus.Desc{}
	desc := func(name, help string, labels []string) *prometheus.Desc {
		d, ok := descs[name]
		if !ok {
			d = prometheus.NewDesc(name, help, labels, nil)
			descs[name] = d
		}
		return d
	}
	for k, r := range s.reports {
		names, values := promLabelNames, promLabels(s.topology, k)
		covered := map[string]bool{}
		for _, l := range latencies {
			if m := latencyMetric(r.values, l.sum, l.count, l.hist, covered, func(help string) *prometheus.Desc { return desc(l.name, help, names) }, append(values, "", "")); m != nil {
				ch <- m
			}
		}
		for metric, v := range r.values {
			if covered[metric] {
				continue
			}
			ps := PromSeriesOf(metric)
			if ps.Name == "" {
				continue
			}
			lv := append(values[:len(values):len(values)], ps.ToTask, ps.ToContainer)
			m, err := prometheus.NewConstMetric(desc(ps.Name, ps.Help, names), ps.Type, v*ps.Scale, lv...)
			if err == nil {
				ch <- m
			}
		}
	}
	d := prometheus.NewDesc("egret_metricsmgr_prometheus_reports_dropped_total", "Reports dropped because the prometheus sink holds its maximum number of sources.", []string{"topology", "container"}, nil)
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, s.dropped, s.topology, strconv.Itoa(s.container))
}

// latencyMetric builds the histogram of one latency from a report's values and marks the values it used in covered; nil when the
// report has no such latency.
func latencyMetric(values map[string]float64, sum, count, hist string, covered map[string]bool, desc func(help string) *prometheus.Desc, labels []string) prometheus.Metric {
	v, ok := values[sum]
	if !ok {
		return nil
	}
	covered[sum] = true
	if _, ok := values[hist+".le.inf"]; ok {
		buckets := make(map[float64]uint64, len(wire.LatencyBounds))
		var total uint64
		for i, b := range wire.LatencyBucketNames {
			name := hist + ".le." + b
			covered[name] = true
			total += uint64(max(values[name], 0))
			if i < len(wire.LatencyBounds) {
				buckets[wire.LatencyBounds[i].Seconds()] = total
			}
		}
		m, err := prometheus.NewConstHistogram(desc("Latency in seconds of the measured tuples (execute latency is sampled, each timed tuple counting for those it stands for)."), total, v/1e9, buckets, labels...)
		if err != nil {
			return nil
		}
		return m
	}
	n, ok := values[count]
	if !ok {
		return nil
	}
	m, err := prometheus.NewConstHistogram(desc("Latency in seconds (sum and count of the measured tuples; this process publishes no buckets)."), uint64(max(n, 0)), v/1e9, nil, labels...)
	if err != nil {
		return nil
	}
	return m
}

// promLabelNames are the labels of every series. A family's series must
// all have the same label names, so a daemon's series have an empty
// component and task (Prometheus drops empty labels on ingestion), and
// only a stream manager's per-destination series have a to_task (the
// local instance it sends to) or a to_container (the peer stream
// manager's container).
var promLabelNames = []string{"topology", "container", "source", "component", "task", "to_task", "to_container"}

// promLabels returns the label values of a source's series.
func promLabels(topology string, k promSource) []string {
	task := ""
	if k.component != "" {
		task = strconv.Itoa(int(k.task))
	}
	return []string{topology, strconv.Itoa(int(k.container)), k.source, k.component, task}
}

// PromSeries is the Prometheus series of a published metric.
type PromSeries struct {
	Name  string
	Type  prometheus.ValueType
	Scale float64 // the factor the value is multiplied by
	Help  string  // what it means, and its unit
	// ToTask and ToContainer are the destination of a stream manager's
	// per-destination metric (stmgr.instance.<task>.<name>,
	// stmgr.peer.<container>.<name>), a label and not a part of the name.
	ToTask, ToContainer string
}

// PromSeriesOf maps a published metric to its series: the name as
// PromName gives it, with the ids of a stream manager's per-destination
// metrics taken out of the name into the to_task and to_container labels
// (stmgr.instance.3.tuples.out is egret_stmgr_instance_tuples_out_total
// with to_task="3"), and its help text.
func PromSeriesOf(metric string) PromSeries {
	var ps PromSeries
	for _, kind := range []string{"stmgr.instance.", "stmgr.peer."} {
		rest, ok := strings.CutPrefix(metric, kind)
		if !ok {
			continue
		}
		id, name, ok := strings.Cut(rest, ".")
		if _, err := strconv.Atoi(id); !ok || err != nil {
			continue
		}
		if kind == "stmgr.instance." {
			ps.ToTask = id
		} else {
			ps.ToContainer = id
		}
		metric = kind + name
		break
	}
	ps.Name, ps.Type, ps.Scale = PromName(metric)
	ps.Help = promHelp(metric, ps.Type)
	return ps
}

// PromName maps a published metric name to its Prometheus name, type and
// the factor its value is multiplied by: "instance.executed" is the counter
// egret_instance_executed_total, a gauge keeps its name
// (egret_stmgr_queue_bytes), a counter of nanoseconds becomes seconds
// (egret_stmgr_backpressure_time_throttled_seconds_total, factor 1e-9).
// Characters outside [a-zA-Z0-9_] become '_'; an empty name maps to "".
func PromName(metric string) (string, prometheus.ValueType, float64) {
	if metric == "" {
		return "", prometheus.UntypedValue, 0
	}
	base, scale := metric, 1.0
	for _, unit := range []string{".ns", ".nanos"} {
		if n, ok := strings.CutSuffix(base, unit); ok {
			base, scale = n+".seconds", 1e-9
			break
		}
	}
	var b strings.Builder
	b.WriteString("egret_")
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if gauges[metric] {
		return b.String(), prometheus.GaugeValue, scale
	}
	return b.String() + "_total", prometheus.CounterValue, scale
}

// writeTargets writes the endpoint in Prometheus' file_sd format, so that a
// Prometheus with a file_sd_configs entry over these files finds every
// container.
func (s *promSink) writeTargets(addr string) error {
	if s.targetsFile == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = advertise()
	}
	body, err := json.Marshal([]map[string]any{{
		"targets": []string{net.JoinHostPort(host, port)},
		"labels":  map[string]string{"egret_topology": s.topology, "egret_container": strconv.Itoa(s.container)},
	}})
	if err != nil {
		return err
	}
	tmp := s.targetsFile + ".tmp"
	if err := os.WriteFile(tmp, append(body, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.targetsFile)
}

// advertise is the host other machines scrape this one at when the
// endpoint listens on every interface: $EGRET_HOST, else 127.0.0.1.
func advertise() string {
	if h := os.Getenv("EGRET_HOST"); h != "" {
		return h
	}
	return "127.0.0.1"
}

// TargetsFileName is the file_sd file the prometheus sink writes in the
// container's working directory.
const TargetsFileName = "prometheus-targets.json"

// TargetsFile returns the targets file of a container working directory.
func TargetsFile(workDir string) string { return filepath.Join(workDir, TargetsFileName) }
