package scale

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// The reports a container's metrics manager forwards every interval, and
// about as many values as the real ones carry: the executor's container
// report and one per instance process, the stream manager's, the metrics
// manager's and the shell's process reports, and one per instance.
const (
	executorMetrics     = 12
	executorTaskMetrics = 12
	processMetrics      = 10
	stmgrMetrics        = 24
	instanceMetrics     = 16
)

// reportsPerContainer is how many sources a container with tasks tasks
// publishes (see publishMetrics).
func reportsPerContainer(tasks int) int { return 4 + 2*tasks }

// publishMetrics is one container's metrics manager toward the topology
// manager: every interval, the container's reports (reportsPerContainer)
// on a connection of its own, until ctx ends.
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
	reports := []*egretpb.MetricsPublish{
		{Source: "executor", Container: container, Metrics: metricList("executor", executorMetrics)},
		{Source: "stmgr", Container: container, Metrics: metricList("stmgr", stmgrMetrics)},
		{Source: "metricsmgr", Container: container, Metrics: metricList("process", processMetrics)},
		{Source: "shell", Container: container, Metrics: metricList("process", processMetrics)},
	}
	for i, task := range tasks {
		reports = append(reports,
			&egretpb.MetricsPublish{Source: "executor", Container: container, Component: components[i], TaskId: task, Metrics: metricList("executor.task", executorTaskMetrics)},
			&egretpb.MetricsPublish{Source: "instance", Container: container, Component: components[i], TaskId: task, Metrics: metricList("instance", instanceMetrics)})
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
