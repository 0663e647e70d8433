package metricsmgr

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

func instanceReport(component string, task int32, executed, executeNanos float64) *egretpb.MetricsPublish {
	return &egretpb.MetricsPublish{Source: "instance", Container: 1, Component: component, TaskId: task, UnixNanos: 1_700_000_000_000_000_000,
		Metrics: []*egretpb.Metric{
			{Name: "instance.executed", Value: executed},
			{Name: "instance.execute.nanos", Value: executeNanos},
			{Name: "gateway.out.queue.bytes", Value: 4096},
			{Name: "user.words counted", Value: 7},
			{Name: "process.rss.bytes", Value: 1 << 25},
		}}
}

func stmgrReport(throttledNanos float64) *egretpb.MetricsPublish {
	return &egretpb.MetricsPublish{Source: "stmgr", Container: 1, UnixNanos: 1_700_000_000_000_000_000,
		Metrics: []*egretpb.Metric{
			{Name: "stmgr.backpressure.time.throttled.ns", Value: throttledNanos},
			{Name: "stmgr.peers.connected", Value: 2},
			{Name: "stmgr.instance.3.tuples.out", Value: 30},
			{Name: "stmgr.instance.4.tuples.out", Value: 40},
			{Name: "stmgr.instance.3.queue.bytes", Value: 512},
			{Name: "stmgr.peer.2.tuples.out", Value: 20},
			{Name: "process.rss.bytes", Value: 1 << 26},
		}}
}

// scrape reads the prometheus sink's endpoint and parses the text format.
func scrape(t *testing.T, addr string) map[string]*dtoFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the scrape is not valid text format: %v\n%s", err, body)
	}
	out := map[string]*dtoFamily{}
	for name, f := range fams {
		df := &dtoFamily{typ: f.GetType().String(), help: f.GetHelp()}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if s := m.GetSummary(); s != nil {
				v = s.GetSampleSum()
				df.count = float64(s.GetSampleCount())
			}
			var buckets map[float64]float64
			if h := m.GetHistogram(); h != nil {
				v = h.GetSampleSum()
				df.count = float64(h.GetSampleCount())
				buckets = map[float64]float64{}
				for _, b := range h.GetBucket() {
					buckets[b.GetUpperBound()] = float64(b.GetCumulativeCount())
				}
			}
			df.series = append(df.series, series{labels, v, df.count, buckets})
		}
		out[name] = df
	}
	return out
}

type series struct {
	labels  map[string]string
	value   float64
	count   float64             // of a summary or histogram
	buckets map[float64]float64 // of a histogram: upper bound → cumulative count
}

type dtoFamily struct {
	typ    string
	help   string
	series []series
	count  float64 // of the last series
}

func TestPromName(t *testing.T) {
	cases := []struct{ in, name, typ string }{
		{"instance.executed", "egret_instance_executed_total", "counter"},
		{"stmgr.queue.bytes", "egret_stmgr_queue_bytes", "gauge"},
		{"stmgr.backpressure.time.by.local.instance.ns", "egret_stmgr_backpressure_time_by_local_instance_seconds_total", "counter"},
		{"user.words-counted/x", "egret_user_words_counted_x_total", "counter"},
	}
	for _, c := range cases {
		name, typ, _ := PromName(c.in)
		if name != c.name || strings.ToLower(typ.ToDTO().String()) != c.typ {
			t.Errorf("PromName(%q) = %s %s, want %s %s", c.in, name, typ.ToDTO(), c.name, c.typ)
		}
	}
}

func TestPrometheusSinkServesLatestReports(t *testing.T) {
	dir := t.TempDir()
	targets := filepath.Join(dir, TargetsFileName)
	h := start(t, Config{TopologyName: "wordcount", Container: 1, Socket: filepath.Join(dir, "m.sock"),
		Sinks: []string{SinkPrometheus}, PrometheusAddr: "127.0.0.1:0", PrometheusTargetsFile: targets})
	addr := targetsAddr(t, targets)
	conn := publish(t, h.cfg.Socket, instanceReport("count", 3, 100, 2e9), stmgrReport(5e8))
	defer conn.Close()
	var fams map[string]*dtoFamily
	waitFor(t, "both reports on the endpoint", func() bool {
		fams = scrape(t, addr)
		return fams["egret_instance_executed_total"] != nil && fams["egret_stmgr_peers_connected"] != nil
	})
	ex := fams["egret_instance_executed_total"]
	if ex.typ != "COUNTER" || len(ex.series) != 1 || ex.series[0].value != 100 {
		t.Fatalf("egret_instance_executed_total: %+v", ex)
	}
	want := map[string]string{"topology": "wordcount", "container": "1", "source": "instance", "component": "count", "task": "3"}
	for k, v := range want {
		if ex.series[0].labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, ex.series[0].labels[k], v, ex.series[0].labels)
		}
	}
	if lat := fams["egret_instance_execute_latency_seconds"]; lat == nil || lat.typ != "HISTOGRAM" || lat.series[0].value != 2 || lat.count != 100 {
		t.Errorf("execute latency without buckets (+Inf only): %+v", lat)
	}
	if fams["egret_instance_execute_seconds_total"] != nil {
		t.Error("the execute time is exported twice: as the summary's sum and as a counter")
	}
	if g := fams["egret_gateway_out_queue_bytes"]; g == nil || g.typ != "GAUGE" || g.series[0].value != 4096 {
		t.Errorf("queue gauge: %+v", g)
	}
	if c := fams["egret_user_words_counted_total"]; c == nil || c.series[0].value != 7 {
		t.Errorf("user counter: %+v", c)
	}
	if bp := fams["egret_stmgr_backpressure_time_throttled_seconds_total"]; bp == nil || bp.series[0].value != 0.5 {
		t.Errorf("back pressure seconds: %+v", bp)
	} else if bp.series[0].labels["component"] != "" || bp.series[0].labels["task"] != "" {
		t.Errorf("a daemon's series carries a component or task: %v", bp.series[0].labels)
	}
	// Destination ids are labels, not parts of names; levels are gauges;
	// HELP says what a series means and its unit.
	for name := range fams {
		if regexp.MustCompile(`_(instance|peer)_[0-9]+_`).MatchString(name) {
			t.Errorf("a family with an id in its name: %s", name)
		}
	}
	if f := fams["egret_stmgr_instance_tuples_out_total"]; f == nil || f.typ != "COUNTER" || len(f.series) != 2 {
		t.Errorf("egret_stmgr_instance_tuples_out_total: %+v", f)
	} else {
		for _, sr := range f.series {
			if want := map[string]float64{"3": 30, "4": 40}[sr.labels["to_task"]]; sr.value != want || want == 0 {
				t.Errorf("to_task %q: %v", sr.labels["to_task"], sr.value)
			}
		}
	}
	if f := fams["egret_stmgr_instance_queue_bytes"]; f == nil || f.typ != "GAUGE" || f.series[0].labels["to_task"] != "3" {
		t.Errorf("egret_stmgr_instance_queue_bytes: %+v", f)
	}
	if f := fams["egret_stmgr_peer_tuples_out_total"]; f == nil || f.series[0].labels["to_container"] != "2" || f.series[0].value != 20 {
		t.Errorf("egret_stmgr_peer_tuples_out_total: %+v", f)
	}
	for name, want := range map[string]string{"egret_instance_executed_total": "Tuples the bolt task executed",
		"egret_process_rss_bytes": "in bytes", "egret_stmgr_backpressure_time_throttled_seconds_total": "Seconds"} {
		if f := fams[name]; f == nil || !strings.Contains(f.help, want) {
			t.Errorf("HELP of %s does not say %q: %+v", name, want, f)
		}
	}
	// A metric both kinds of process publish has a series for each.
	if rss := fams["egret_process_rss_bytes"]; rss == nil || len(rss.series) != 2 {
		t.Errorf("egret_process_rss_bytes of the instance and the stream manager: %+v", rss)
	}

	// A newer report replaces the older one.
	conn2 := publish(t, h.cfg.Socket, instanceReport("count", 3, 250, 3e9))
	defer conn2.Close()
	waitFor(t, "the newer value", func() bool {
		f := scrape(t, addr)["egret_instance_executed_total"]
		return f != nil && len(f.series) == 1 && f.series[0].value == 250
	})
}

func TestPrometheusSinkExpiresAndBoundsSources(t *testing.T) {
	s := newPromSink("t", 1, "127.0.0.1:0", "", zaptest.NewLogger(t))
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	for i := range promMaxSources + 10 {
		s.apply(instanceReport("c", int32(i), 1, 1))
	}
	if len(s.reports) != promMaxSources || s.dropped != 10 {
		t.Fatalf("%d sources held, %v dropped; want %d and 10", len(s.reports), s.dropped, promMaxSources)
	}
	now = now.Add(promStaleAfter + time.Second)
	s.apply(instanceReport("c", -1, 1, 1)) // a new source after the others went stale
	if len(s.reports) != 1 {
		t.Fatalf("%d sources after expiry, want 1", len(s.reports))
	}
}

func TestPrometheusSinkPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	_, err = run(t.Context(), Config{Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkPrometheus}, PrometheusAddr: ln.Addr().String()}, zaptest.NewLogger(t))
	if err == nil || !strings.Contains(err.Error(), "prometheus sink: listen on "+ln.Addr().String()) {
		t.Fatalf("run with a taken port: %v", err)
	}
}

// lineReceiver is a Graphite plaintext receiver: it records every line.
type lineReceiver struct {
	ln    net.Listener
	mu    sync.Mutex
	lines []string
	conns []net.Conn
}

func newLineReceiver(t *testing.T, addr string) *lineReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &lineReceiver{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conns = append(r.conns, c)
			r.mu.Unlock()
			go func() {
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					r.mu.Lock()
					r.lines = append(r.lines, sc.Text())
					r.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(r.close)
	return r
}

func (r *lineReceiver) close() {
	r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
}

func (r *lineReceiver) has(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		if l == line {
			return true
		}
	}
	return false
}

func TestGraphiteSinkWritesLinesAndReconnects(t *testing.T) {
	recv := newLineReceiver(t, "127.0.0.1:0")
	addr := recv.ln.Addr().String()
	dir := t.TempDir()
	h := start(t, Config{TopologyName: "word.count", Container: 1, Socket: filepath.Join(dir, "m.sock"),
		Sinks: []string{SinkGraphite}, GraphiteAddr: addr, GraphitePrefix: "egret.prod"})
	conn := publish(t, h.cfg.Socket, instanceReport("count", 3, 100, 2e9), stmgrReport(5e8))
	defer conn.Close()
	want := []string{
		"egret.prod.word_count.count.3.instance.executed 100 1700000000",
		"egret.prod.word_count.count.3.user.words_counted 7 1700000000",
		"egret.prod.word_count.stmgr.1.stmgr.backpressure.time.throttled.ns 500000000 1700000000",
	}
	waitFor(t, "the lines at the receiver", func() bool {
		for _, w := range want {
			if !recv.has(w) {
				return false
			}
		}
		return true
	})

	// The receiver goes away and comes back on the same address: the sink
	// reconnects (reports are published until one arrives: lines written
	// just before the sink notices the close are lost, Graphite has no
	// acknowledgement).
	recv.close()
	recv2 := newLineReceiver(t, addr)
	waitFor(t, "a report through the new connection", func() bool {
		c := publish(t, h.cfg.Socket, instanceReport("count", 3, 200, 2e9))
		defer c.Close()
		time.Sleep(20 * time.Millisecond)
		return recv2.has("egret.prod.word_count.count.3.instance.executed 200 1700000000")
	})
}

// unusedAddr returns a loopback address nothing listens on.
func unusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestGraphiteSinkQueuesUntilReceiverStarts(t *testing.T) {
	addr := unusedAddr(t)
	dir := t.TempDir()
	h := start(t, Config{TopologyName: "t", Container: 1, Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkGraphite}, GraphiteAddr: addr})
	conn := publish(t, h.cfg.Socket, instanceReport("c", 1, 10, 1), instanceReport("c", 2, 20, 1))
	defer conn.Close()
	waitFor(t, "both reports received", func() bool { return h.statsNow().Received.Load() == 2 })
	recv := newLineReceiver(t, addr)
	waitFor(t, "the queued reports at the receiver once it listens", func() bool {
		return recv.has("egret.t.c.1.instance.executed 10 1700000000") && recv.has("egret.t.c.2.instance.executed 20 1700000000")
	})
}

func TestGraphiteSinkBoundedWhileReceiverDown(t *testing.T) {
	// Nothing listens: the sink keeps at most its queue and the metrics
	// manager counts what it drops, without blocking the publisher.
	addr := unusedAddr(t)
	dir := t.TempDir()
	h := start(t, Config{TopologyName: "t", Container: 1, Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkGraphite}, GraphiteAddr: addr})
	reports := make([]*egretpb.MetricsPublish, 3*sinkQueue)
	for i := range reports {
		reports[i] = instanceReport("c", int32(i), 1, 1)
	}
	conn := publish(t, h.cfg.Socket, reports...)
	defer conn.Close()
	waitFor(t, "every report received", func() bool { return h.statsNow().Received.Load() == int64(len(reports)) })
	if d := h.statsNow().Dropped.Load(); d < int64(len(reports)-sinkQueue-1) {
		t.Errorf("%d reports dropped, want at least %d (the queue holds %d)", d, len(reports)-sinkQueue-1, sinkQueue)
	}
}

// TestPrometheusSinkHistograms: latencies are histograms; a report with
// buckets gives the buckets, one without gives +Inf only, in one family.
func TestPrometheusSinkHistograms(t *testing.T) {
	dir := t.TempDir()
	targets := filepath.Join(dir, TargetsFileName)
	h := start(t, Config{TopologyName: "wordcount", Container: 1, Socket: filepath.Join(dir, "m.sock"),
		Sinks: []string{SinkPrometheus}, PrometheusAddr: "127.0.0.1:0", PrometheusTargetsFile: targets})
	addr := targetsAddr(t, targets)

	// A report with the histogram's buckets gives a histogram: cumulative
	// buckets in seconds, the count their total, the buckets not exported
	// on their own.
	hist := instanceReport("split", 4, 100, 3e9)
	for i, b := range wire.LatencyBucketNames {
		v := 0.0
		switch i {
		case 2: // 16us
			v = 60
		case 5: // 1ms
			v = 30
		case len(wire.LatencyBounds): // inf
			v = 10
		}
		hist.Metrics = append(hist.Metrics, &egretpb.Metric{Name: "instance.execute.latency.le." + b, Value: v})
	}
	conn := publish(t, h.cfg.Socket, instanceReport("count", 3, 100, 2e9), hist)
	defer conn.Close()
	var fams map[string]*dtoFamily
	waitFor(t, "the histogram on the endpoint", func() bool {
		fams = scrape(t, addr)
		f := fams["egret_instance_execute_latency_seconds"]
		return f != nil && len(f.series) == 2
	})
	var split series
	for _, s := range fams["egret_instance_execute_latency_seconds"].series {
		if s.labels["component"] == "split" {
			split = s
		}
	}
	if split.count != 100 || split.value != 3 {
		t.Errorf("execute latency histogram: count %v sum %v, want 100 and 3", split.count, split.value)
	}
	for bound, want := range map[float64]float64{1e-6: 0, 16e-6: 60, 256e-6: 60, 1e-3: 90, 16: 90} {
		if got, ok := split.buckets[bound]; !ok || got != want {
			t.Errorf("bucket le=%v: %v, want %v (buckets %v)", bound, got, want, split.buckets)
		}
	}
	for name := range fams {
		if strings.Contains(name, "_le_") {
			t.Errorf("a histogram bucket is exported on its own: %s", name)
		}
	}
}

// targetsAddr waits for the prometheus sink's targets file and returns the
// one target it lists, checking its labels.
func targetsAddr(t *testing.T, targets string) string {
	t.Helper()
	var addr string
	waitFor(t, "the targets file", func() bool {
		var tg []struct {
			Targets []string          `json:"targets"`
			Labels  map[string]string `json:"labels"`
		}
		b, err := os.ReadFile(targets)
		if err != nil || json.Unmarshal(b, &tg) != nil || len(tg) != 1 || len(tg[0].Targets) != 1 {
			return false
		}
		if tg[0].Labels["egret_topology"] != "wordcount" || tg[0].Labels["egret_container"] != "1" {
			t.Errorf("targets labels %v", tg[0].Labels)
		}
		addr = tg[0].Targets[0]
		return true
	})
	return addr
}
