package tmanager

import (
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

// TestLimitsFollowThePackingPlan: unset bounds grow with the topology
// (at 1,000 containers the fixed 4096 sources held a third of what the
// containers publish: docs/benchmarks.md §Scale); set ones are kept.
func TestLimitsFollowThePackingPlan(t *testing.T) {
	sm := memory.NewStore().NewSession()
	defer sm.Close()
	resolve := func(l Limits) *settings {
		s, err := Config{TopologyName: "wc", TopologyID: "wc-1", StateManager: sm, Settings: spi.Config{}, Limits: l}.resolve()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	small := resolve(Limits{})
	small.sizeLimits(2, 4)
	if small.Limits.MaxMetricSources != DefaultMaxMetricSources || small.Limits.MaxConnections != DefaultMaxConnections {
		t.Errorf("2 containers: bounds %d sources, %d connections; want the defaults", small.Limits.MaxMetricSources, small.Limits.MaxConnections)
	}
	big := resolve(Limits{})
	big.sizeLimits(1000, 2000)
	// A container publishes about 5 + 2×tasks sources and holds 2 connections.
	if got, need := big.Limits.MaxMetricSources, 1000*(5+2*2); got < need {
		t.Errorf("1000 containers of 2 tasks: %d sources kept, they publish %d", got, need)
	}
	if got, need := big.Limits.MaxConnections, 2*1000; got < need {
		t.Errorf("1000 containers: %d connections allowed, they open %d", got, need)
	}
	set := resolve(Limits{MaxMetricSources: 10, MaxConnections: 20})
	set.sizeLimits(1000, 2000)
	if set.Limits.MaxMetricSources != 10 || set.Limits.MaxConnections != 20 {
		t.Errorf("explicit bounds changed to %d and %d", set.Limits.MaxMetricSources, set.Limits.MaxConnections)
	}

	// Every source of 1,000 containers is kept, and a smaller plan evicts
	// down to its bound, the least recently updated first.
	ms := newMetricsStore(big.Limits)
	now := time.Now()
	for c := int32(1); c <= 1000; c++ {
		for _, src := range []string{"executor", "stmgr", "metricsmgr", "shell", "ckptmgr"} {
			ms.add(&egretpb.MetricsPublish{Source: src, Container: c, Metrics: []*egretpb.Metric{{Name: "x", Value: 1}}}, now)
		}
		for task := 2*c - 1; task <= 2*c; task++ {
			for _, src := range []string{"executor", "instance"} {
				ms.add(&egretpb.MetricsPublish{Source: src, Container: c, Component: "words", TaskId: task, Metrics: []*egretpb.Metric{{Name: "x", Value: 1}}}, now)
			}
		}
	}
	if len(ms.sources) != 9000 || ms.droppedSources != 0 {
		t.Fatalf("kept %d of 9000 sources, dropped %d", len(ms.sources), ms.droppedSources)
	}
	ms.setMaxSources(sourcesFor(2, 4))
	if len(ms.sources) != DefaultMaxMetricSources {
		t.Fatalf("after shrinking: %d sources, want %d", len(ms.sources), DefaultMaxMetricSources)
	}
	if _, ok := ms.sources[sourceKey{source: "instance", component: "words", container: 1000, task: 2000}]; !ok {
		t.Error("the most recently updated source was evicted")
	}
}
