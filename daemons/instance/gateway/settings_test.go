package gateway

import (
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/spi"
)

// TestMetricsIntervalFromKey: egret.metrics.export.interval sets how often
// an instance publishes its metrics.
func TestMetricsIntervalFromKey(t *testing.T) {
	c := Config{Topology: &api.Topology{}, TopologyID: "wc-1", Container: 1, StMgrSocket: "/s",
		Settings: spi.Config{KeyMetricsInterval: "3s"}}
	s, err := c.check()
	if err != nil {
		t.Fatal(err)
	}
	if s.metricsEvery != 3*time.Second {
		t.Errorf("metrics every %v, want 3s", s.metricsEvery)
	}
}
