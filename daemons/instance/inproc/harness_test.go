package inproc

import (
	"context"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/instance/inproc/groupingtest"
)

// This file runs the shared grouping cases (package groupingtest) with a
// topologyRunner. The cases' bodies are the same against the multi-process
// cluster (test/e2e); only the runner and the Recorder differ.

// caseDeadline bounds how long a case may take to complete.
const caseDeadline = 20 * time.Second

// runResult is what a runner reports besides the records.
type runResult struct {
	Counters    map[string]groupingtest.Counters
	ContainerOf map[int]int
}

// topologyRunner runs topo until ctx ends, then drains in-flight tuples
// (so every emitted tuple has been executed), stops it and returns its
// counters and task layout. It fails t when the topology cannot run.
type topologyRunner func(ctx context.Context, t *testing.T, topo *api.Topology) runResult

// inprocRunner runs the topology with this package's Runner.
func inprocRunner(ctx context.Context, t *testing.T, topo *api.Topology) runResult {
	t.Helper()
	r, err := New(topo, Options{DrainTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("inproc.New: %v", err)
	}
	s, err := r.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s.Undrained != 0 {
		t.Fatalf("%d batches were not drained", s.Undrained)
	}
	res := runResult{Counters: map[string]groupingtest.Counters{}, ContainerOf: r.Layout().ContainerOf}
	for _, c := range s.Components {
		res.Counters[c.Name] = groupingtest.Counters{Emitted: c.Emitted, Executed: c.Executed, Errors: c.Errors, Dropped: c.Dropped}
	}
	return res
}

// runGroupingCase runs the case with runner and checks it.
func runGroupingCase(t *testing.T, runner topologyRunner, tc *groupingtest.Case) {
	t.Helper()
	tc.Check(t, runCase(t, runner, tc))
}

// runCase runs the case with runner until it is complete (the spout
// emitted everything and the case's own condition holds) and returns what
// it observed.
func runCase(t *testing.T, runner topologyRunner, tc *groupingtest.Case) *groupingtest.Result {
	t.Helper()
	rec := groupingtest.NewMemory()
	topo, err := tc.Builder(rec).Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timedOut := make(chan bool, 1)
	go func() {
		deadline := time.NewTimer(caseDeadline)
		defer deadline.Stop()
		defer cancel()
		for {
			select {
			case <-rec.Changed():
				if tc.Complete(&groupingtest.Result{Records: rec.Records()}) {
					timedOut <- false
					return
				}
			case <-deadline.C:
				timedOut <- true
				return
			case <-ctx.Done(): // the runner gave up early
				timedOut <- false
				return
			}
		}
	}()
	res := runner(ctx, t, topo)
	cancel()
	result := &groupingtest.Result{Records: rec.Records(), Counters: res.Counters, ContainerOf: res.ContainerOf}
	if <-timedOut {
		t.Fatalf("the case did not complete within %v (spout emitted %d of %d)", caseDeadline, result.SpoutEmitted(), tc.N)
	}
	return result
}
