package inproc

import (
	"slices"

	"testing"

	"github.com/egret-stream/egret/daemons/instance/inproc/groupingtest"
)

// TestGroupings runs every shared grouping case (fields, shuffle, none,
// local-or-shuffle, all, global, direct, custom with an invalid task
// dropped and counted, named streams, tick tuples, a panicking bolt, bad
// emits, two hops) in this process. test/e2e runs the same cases across
// the containers of a local cluster.
func TestGroupings(t *testing.T) {
	for _, tc := range groupingtest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			runGroupingCase(t, inprocRunner, tc)
		})
	}
}

// TestGroupingChecksCatchMistakes: the shared checks fail when a runtime
// loses, duplicates or misroutes a tuple.
func TestGroupingChecksCatchMistakes(t *testing.T) {
	for _, tc := range groupingtest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			res := runCase(t, inprocRunner, tc)
			if ok, why := groupingtest.Passes(tc, res); !ok {
				t.Fatalf("the unchanged run fails: %s", why)
			}
			last := slices.IndexFunc(res.Records, func(r groupingtest.Record) bool { return r.Kind == groupingtest.KindTuple })
			if last < 0 {
				t.Fatal("no tuple recorded")
			}
			for _, m := range []struct {
				what    string
				records func([]groupingtest.Record) []groupingtest.Record
			}{
				{"a lost tuple", func(rs []groupingtest.Record) []groupingtest.Record {
					return slices.Delete(slices.Clone(rs), last, last+1)
				}},
				{"a duplicated tuple", func(rs []groupingtest.Record) []groupingtest.Record {
					return slices.Insert(slices.Clone(rs), last, rs[last])
				}},
				{"a tuple at a task of another bolt", func(rs []groupingtest.Record) []groupingtest.Record {
					rs = slices.Clone(rs)
					rs[last].Task = 1 << 20
					return rs
				}},
			} {
				mutated := &groupingtest.Result{Records: m.records(res.Records), Counters: res.Counters, ContainerOf: res.ContainerOf}
				if ok, _ := groupingtest.Passes(tc, mutated); ok {
					t.Errorf("the check passes with %s", m.what)
				}
			}
		})
	}
}
