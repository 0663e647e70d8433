package scale

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Metric names per report: a stream manager's and an instance's reports
// carry about as many values as the real ones.
const (
	stmgrMetrics    = 24
	instanceMetrics = 16
)

// publishMetrics is one container's metrics manager toward the topology
// manager: every interval, one MetricsPublish for the stream manager and
// one per task, on a connection of its own, until ctx ends.
func publishMetrics(ctx context.Context, addr string, container int32, tasks []int32, components []string, every time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		return fmt.Errorf("container %d metrics: dial: %w", container, err)
	}
	defer conn.Close()
	go func() {
		<-ctx.Done()
		_ = conn.Close()
	}()
	reports := []*egretpb.MetricsPublish{{Source: "stmgr", Container: container, Metrics: metricList("stmgr", stmgrMetrics)}}
	for i, task := range tasks {
		reports = append(reports, &egretpb.MetricsPublish{Source: "instance", Container: container, Component: components[i], TaskId: task,
			Metrics: metricList("instance", instanceMetrics)})
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var b []byte
	for round := 0; ; round++ {
		b = b[:0]
		now := time.Now().UnixNano()
		for _, r := range reports {
			r.UnixNanos = now
			for i, m := range r.Metrics {
				m.Value = float64(round*len(r.Metrics) + i)
			}
			if b, err = wire.AppendMessage(b, r); err != nil {
				return err
			}
		}
		_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write(b); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("container %d metrics: %w", container, err)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
	}
}

func metricList(prefix string, n int) []*egretpb.Metric {
	out := make([]*egretpb.Metric, n)
	for i := range out {
		out[i] = &egretpb.Metric{Name: fmt.Sprintf("%s.metric.%02d", prefix, i)}
	}
	return out
}
