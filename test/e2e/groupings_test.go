package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/instance/gateway"
	"github.com/egret-stream/egret/daemons/instance/inproc/groupingtest"
)

func init() { packages["groupings"] = "./test/e2e/testdata/groupings" }

// groupingContainers is the container count of every grouping topology:
// two, so that tuples cross stream managers and local-or-shuffle has local
// and remote tasks.
const groupingContainers = 2

// groupingCaseDeadline bounds how long one case may take to deliver and
// count everything once submitted.
const groupingCaseDeadline = 3 * time.Minute

// TestGroupingsAcrossContainers runs every case of package groupingtest
// (the same cases and checks as the in-process runner's TestGroupings) on
// a local cluster with two containers, one topology after the other on one
// cluster.
func TestGroupingsAcrossContainers(t *testing.T) {
	c := newCluster(t, "local")
	for _, tc := range groupingtest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			sub := *c // the same EGRET_HOME; failures go to the subtest
			sub.t = t
			runClusterGroupingCase(t, &sub, tc)
		})
	}
}

// runClusterGroupingCase submits the case, waits until its records and
// counters pass the case's check, kills the topology and checks the final
// records.
func runClusterGroupingCase(t *testing.T, c *cluster, tc *groupingtest.Case) {
	name := tc.TopologyName()
	// Under EGRET_HOME, so that the records are kept when the test fails.
	records := filepath.Join(c.home, "records", name)
	t.Cleanup(func() {
		if t.Failed() {
			c.egret("kill", c.name, name) // idempotent; leaves the cluster clean for the next case
		}
	})
	bin := binary(t, "groupings")
	start := time.Now()
	c.mustEgret("submit", c.name, bin, "--",
		"--case", tc.Name, "--containers", fmt.Sprint(groupingContainers), "--record-dir", records)

	submitted := time.Since(start)
	st := c.store()
	pp, _, err := st.PackingPlan(context.Background(), name)
	if err != nil {
		t.Fatalf("packing plan: %v", err)
	}
	if len(pp.Containers) != groupingContainers {
		t.Fatalf("packing plan has %d containers, want %d", len(pp.Containers), groupingContainers)
	}
	layout := pp.Layout()
	if tc.Name == "local-or-shuffle" {
		requireLocalAndRemoteTasks(t, layout, "local")
	}

	// Records and metrics arrive over time: wait until the same check as
	// in-process passes.
	var counters map[string]groupingtest.Counters
	deadline := time.Now().Add(groupingCaseDeadline)
	for {
		res, why := observeGroupingCase(st, name, records, layout)
		if why == "" {
			var ok bool
			if ok, why = groupingtest.Passes(tc, res); ok {
				counters = res.Counters
				break
			}
			if !tc.Complete(res) {
				why = fmt.Sprintf("the spout emitted %d of %d: %s", res.SpoutEmitted(), tc.N, why)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("case %s did not pass within %s; last: %s (records in %s, logs under %s)", tc.Name, groupingCaseDeadline, why, records, c.workDir(name))
		}
		time.Sleep(100 * time.Millisecond)
	}

	passed := time.Since(start)
	c.mustEgret("kill", c.name, name)
	c.waitGone(t)
	t.Logf("submitted in %s, passed after %s, all gone after %s", submitted.Round(time.Millisecond), passed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// Every process is gone: the records are final. Nothing may have
	// arrived after the check passed (no duplicate or stray delivery).
	final, err := groupingtest.ReadDir(records)
	if err != nil {
		t.Fatalf("read the records: %v", err)
	}
	tc.Check(t, &groupingtest.Result{Records: final, Counters: counters, ContainerOf: layout.ContainerOf})
}

// observeGroupingCase reads the records and the topology manager's
// counters of every component; why says what is not available yet.
func observeGroupingCase(st *state.Store, topology, records string, layout *plan.Layout) (res *groupingtest.Result, why string) {
	recs, err := groupingtest.ReadDir(records)
	if err != nil {
		return nil, fmt.Sprintf("read the records: %v", err)
	}
	loc, err := st.TManagerLocation(context.Background(), topology)
	if err != nil {
		return nil, fmt.Sprintf("topology manager location: %v", err)
	}
	var stats struct {
		Components map[string]struct {
			Sums map[string]float64 `json:"sums"`
		} `json:"components"`
	}
	if err := getJSON(fmt.Sprintf("http://%s:%d/stats", loc.GetHost(), loc.GetHttpPort()), &stats); err != nil {
		return nil, fmt.Sprintf("stats: %v", err)
	}
	counters := map[string]groupingtest.Counters{}
	for component := range layout.Tasks {
		s := stats.Components[component].Sums
		counters[component] = groupingtest.Counters{
			Emitted:  int64(s[gateway.MetricEmitted]),
			Executed: int64(s[gateway.MetricExecuted]),
			Errors:   int64(s[gateway.MetricErrors]),
			Dropped:  int64(s[gateway.MetricDropped]),
		}
	}
	return &groupingtest.Result{Records: recs, Counters: counters, ContainerOf: layout.ContainerOf}, ""
}

// requireLocalAndRemoteTasks fails unless bolt has tasks both in the
// spout's container and in another one, so that local-or-shuffle has a
// real choice to make.
func requireLocalAndRemoteTasks(t *testing.T, layout *plan.Layout, bolt string) {
	t.Helper()
	spout := layout.Tasks[groupingtest.Spout]
	if len(spout) != 1 {
		t.Fatalf("spout tasks %v, want one", spout)
	}
	home := layout.ContainerOf[spout[0]]
	var containers []int
	local := 0
	for _, task := range layout.Tasks[bolt] {
		containers = append(containers, layout.ContainerOf[task])
		if layout.ContainerOf[task] == home {
			local++
		}
	}
	if local == 0 || local == len(containers) {
		t.Fatalf("the packing put the spout in container %d and the %q tasks in containers %v: the case needs tasks in both (did the packing algorithm change?)",
			home, bolt, slices.Compact(slices.Sorted(slices.Values(containers))))
	}
}
