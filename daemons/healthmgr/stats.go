package healthmgr

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/state"
)

// Metric names the health manager reads.
const (
	metricThrottled       = "stmgr.backpressure.time.throttled.ns"
	metricActive          = "stmgr.backpressure.active"
	metricByLocalInstance = "stmgr.backpressure.time.by.local.instance.ns"
	metricInQueue         = "gateway.in.queue.bytes"
	stmgrTaskPrefix       = "stmgr.instance."
	stmgrQueueSuffix      = ".queue.bytes"
)

// Snapshot is what the health manager reads of the topology manager's
// GET /stats.
type Snapshot struct {
	// StMgrs are the stream managers' latest reports, by container.
	StMgrs map[int]Report
	// Tasks are the instances' latest reports, by task id.
	Tasks map[int]TaskReport
}

// Report is one process's latest metrics.
type Report struct {
	UnixNanos int64
	Metrics   map[string]float64
}

// TaskReport is an instance's latest metrics.
type TaskReport struct {
	Component string
	Container int
	Report
}

// StatsSource reads the topology's metrics.
type StatsSource interface {
	Stats(ctx context.Context) (*Snapshot, error)
}

// TManagerStats reads GET /stats of the topology manager whose location
// the state manager holds.
type TManagerStats struct {
	Store    *state.Store
	Topology string
	Client   *http.Client
}

// Stats implements StatsSource.
func (s *TManagerStats) Stats(ctx context.Context) (*Snapshot, error) {
	loc, err := s.Store.TManagerLocation(ctx, s.Topology)
	if err != nil {
		return nil, fmt.Errorf("locate the topology manager: %w", err)
	}
	u := fmt.Sprintf("http://%s:%d/stats", loc.GetHost(), loc.GetHttpPort())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	snap, err := ParseStats(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return snap, nil
}

// ParseStats decodes the JSON of the topology manager's GET /stats.
func ParseStats(r io.Reader) (*Snapshot, error) {
	type report struct {
		Container int                `json:"container"`
		UnixNanos int64              `json:"unix_nanos"`
		Metrics   map[string]float64 `json:"metrics"`
	}
	var raw struct {
		Components map[string]struct {
			Tasks map[string]report `json:"tasks"`
		} `json:"components"`
		Containers map[string]map[string]report `json:"containers"`
	}
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("bad /stats answer: %w", err)
	}
	out := &Snapshot{StMgrs: map[int]Report{}, Tasks: map[int]TaskReport{}}
	for comp, c := range raw.Components {
		for id, t := range c.Tasks {
			task, err := strconv.Atoi(id)
			if err != nil {
				continue
			}
			out.Tasks[task] = TaskReport{Component: comp, Container: t.Container, Report: Report{UnixNanos: t.UnixNanos, Metrics: t.Metrics}}
		}
	}
	for id, srcs := range raw.Containers {
		ct, err := strconv.Atoi(id)
		if err != nil {
			continue
		}
		if s, ok := srcs["stmgr"]; ok {
			out.StMgrs[ct] = Report{UnixNanos: s.UnixNanos, Metrics: s.Metrics}
		}
	}
	return out, nil
}

// stmgrTaskQueues returns a stream manager's queue bytes per local task.
func stmgrTaskQueues(m map[string]float64) map[int]float64 {
	out := map[int]float64{}
	for k, v := range m {
		if !strings.HasPrefix(k, stmgrTaskPrefix) || !strings.HasSuffix(k, stmgrQueueSuffix) {
			continue
		}
		id, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(k, stmgrTaskPrefix), stmgrQueueSuffix))
		if err == nil {
			out[id] = v
		}
	}
	return out
}
