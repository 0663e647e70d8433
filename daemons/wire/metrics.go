package wire

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/proto/egretpb"
)

// PublishMetrics sends collect's MetricsPublish to the metrics manager's
// Unix socket every interval until ctx ends. The metrics manager may be
// absent or restart: a failed dial or write drops that round's message
// (logged once per outage at debug level) and the next round dials again.
// It returns when ctx ends.
func PublishMetrics(ctx context.Context, socket string, interval time.Duration, collect func() *egretpb.MetricsPublish, log *zap.Logger) {
	if socket == "" || interval <= 0 {
		return
	}
	var conn net.Conn
	var buf []byte
	down := false
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if conn == nil {
			d := net.Dialer{Timeout: time.Second}
			c, err := d.DialContext(ctx, "unix", socket)
			if err != nil {
				if !down {
					log.Debug("metrics manager not reachable; metrics are dropped until it is", zap.String("socket", socket), zap.Error(err))
					down = true
				}
				continue
			}
			conn, down = c, false
		}
		m := collect()
		m.UnixNanos = time.Now().UnixNano()
		var err error
		if buf, err = AppendMessage(buf[:0], m); err != nil {
			log.Error("encode metrics", zap.Error(err))
			continue
		}
		_ = conn.SetWriteDeadline(time.Now().Add(interval))
		if _, err := conn.Write(buf); err != nil {
			log.Debug("metrics manager connection lost", zap.String("socket", socket), zap.Error(err))
			_ = conn.Close()
			conn, down = nil, true
			continue
		}
		if ce := log.Check(zap.DebugLevel, "metrics published"); ce != nil {
			ce.Write(zap.Int("metrics", len(m.Metrics)))
		}
	}
}

// PublishOnce sends one report now (a process about to exit with an
// error publishes what it recorded, so that the error reaches the
// operator), within timeout.
func PublishOnce(socket string, timeout time.Duration, collect func() *egretpb.MetricsPublish) error {
	if socket == "" {
		return nil
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.Dial("unix", socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	m := collect()
	m.UnixNanos = time.Now().UnixNano()
	buf, err := AppendMessage(nil, m)
	if err != nil {
		return err
	}
	_ = conn.SetWriteDeadline(time.Now().Add(timeout))
	_, err = conn.Write(buf)
	return err
}

// processStart is when this process started (set once, never changed).
var processStart = time.Now()

// ProcessMetrics returns the metrics every Egret process publishes about
// itself: its cpu time ("process.cpu.seconds", user+system, a running
// total), resident memory ("process.rss.bytes") and open file descriptors
// ("process.open.fds") from /proc/self, its goroutines
// ("process.goroutines"), and the Go collector's cycles and total
// stop-the-world pause time ("process.gc.cycles", "process.gc.pause.ns",
// running totals), its pid ("process.pid") and start time
// ("process.start.unix", Unix seconds; a change of either means the
// process was restarted, which the tracker counts). Where /proc is missing
// (not Linux) the /proc metrics are left out.
func ProcessMetrics() []*egretpb.Metric {
	var out []*egretpb.Metric
	add := func(name string, v float64) { out = append(out, &egretpb.Metric{Name: name, Value: v}) }
	add("process.pid", float64(os.Getpid()))
	add("process.start.unix", float64(processStart.UnixNano())/1e9)
	if cpu, err := processCPU(); err == nil {
		add("process.cpu.seconds", cpu)
	}
	if rss, err := processRSS(); err == nil {
		add("process.rss.bytes", rss)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		add("process.open.fds", float64(len(fds)-1)) // less the directory being read
	}
	add("process.goroutines", float64(runtime.NumGoroutine()))
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindUint64 {
		add("process.gc.cycles", float64(samples[0].Value.Uint64()))
	}
	if samples[1].Value.Kind() == metrics.KindFloat64Histogram {
		add("process.gc.pause.ns", histogramSum(samples[1].Value.Float64Histogram())*1e9)
	}
	return out
}

// histogramSum estimates the sum of a runtime/metrics histogram from its
// buckets' midpoints (the runtime keeps no exact sum of pauses).
func histogramSum(h *metrics.Float64Histogram) float64 {
	var sum float64
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		switch {
		case math.IsInf(lo, -1):
			lo = hi
		case math.IsInf(hi, 1):
			hi = lo
		}
		sum += float64(n) * (lo + hi) / 2
	}
	return sum
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func processCPU() (float64, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after it are
	// counted from its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/self/stat: unexpected format")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/self/stat: too few fields")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/self/stat: bad cpu times")
	}
	return float64(ut+st) / clockTicks, nil
}

func processRSS() (float64, error) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return 0, err
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/self/statm: unexpected format")
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return float64(pages) * float64(os.Getpagesize()), nil
}
