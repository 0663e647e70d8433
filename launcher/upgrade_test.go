package launcher

import (
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

func compatBase() *topology.Topology {
	return &topology.Topology{Name: "wc", Config: map[string]string{"topology.workers": "2"}, Components: []topology.Component{
		{Name: "sentence", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{{ID: "default", Fields: []string{"line"}}}},
		{Name: "split", Kind: topology.Bolt, Parallelism: 2, Outputs: []topology.Stream{{ID: "default", Fields: []string{"word"}}},
			Inputs: []topology.Input{{Component: "sentence", Stream: "default", Grouping: topology.Shuffle}}},
		{Name: "count", Kind: topology.Bolt, Parallelism: 2,
			Inputs: []topology.Input{{Component: "split", Stream: "default", Grouping: topology.Fields, Fields: []string{"word"}}}},
	}}
}

func TestCompatibilityDiff(t *testing.T) {
	tests := []struct {
		name   string
		change func(*topology.Topology)
		want   []string
	}{
		{"same", func(*topology.Topology) {}, nil},
		{"parallelism, settings and order are not compared", func(t *topology.Topology) {
			t.Components[1].Parallelism = 7
			t.Config["x"] = "y"
			t.Components[0], t.Components[2] = t.Components[2], t.Components[0]
		}, nil},
		{"component gone and new", func(t *topology.Topology) {
			t.Components[2].Name = "counter"
		}, []string{`bolt "count" is gone`, `bolt "counter" is new`}},
		{"kind", func(t *topology.Topology) {
			t.Components[0].Kind = topology.Bolt
		}, []string{`component "sentence" is a spout, the new binary makes it a bolt`}},
		{"fields", func(t *topology.Topology) {
			t.Components[1].Outputs[0].Fields = []string{"word", "n"}
		}, []string{"stream split/default has fields [word], the new binary [word n]"}},
		{"stream gone, new, direct", func(t *topology.Topology) {
			t.Components[0].Outputs[0].Direct = true
			t.Components[1].Outputs = append(t.Components[1].Outputs, topology.Stream{ID: "errors", Fields: []string{"e"}})
		}, []string{"stream sentence/default is not direct, the new binary makes it direct", "stream split/errors is new"}},
		{"grouping", func(t *topology.Topology) {
			t.Components[2].Inputs[0] = topology.Input{Component: "split", Stream: "default", Grouping: topology.Shuffle}
		}, []string{`bolt "count" takes split/default by fields grouping on [word], the new binary by shuffle grouping`}},
		{"subscription", func(t *topology.Topology) {
			t.Components[2].Inputs = append(t.Components[2].Inputs, topology.Input{Component: "sentence", Stream: "default", Grouping: topology.All})
			t.Components[1].Inputs = nil
		}, []string{`bolt "count" subscribes to sentence/default (new, all grouping)`, `bolt "split" no longer subscribes to sentence/default`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := compatBase()
			tc.change(next)
			got := CompatibilityDiff(compatBase(), next)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	next := compatBase()
	next.Config["topology.workers"] = "3"
	next.Components[2].Config = map[string]string{"k": "v"}
	if got := configDiff(compatBase(), next); strings.Join(got, ",") != "count:k,topology.workers" {
		t.Errorf("configDiff = %v", got)
	}
}

func TestUpgradeOptionsValidate(t *testing.T) {
	tests := []struct {
		o    UpgradeOptions
		want string // "" valid
	}{
		{UpgradeOptions{Binary: "./v2"}, ""},
		{UpgradeOptions{Binary: "./v2", Containers: []int{3, 1}}, ""},
		{UpgradeOptions{Binary: "./v2", Canary: 1}, ""},
		{UpgradeOptions{Rollback: true}, ""},
		{UpgradeOptions{}, "needs the new topology binary"},
		{UpgradeOptions{Rollback: true, Binary: "./v2"}, "takes no binary"},
		{UpgradeOptions{Rollback: true, Canary: 1}, "drop --containers and --canary"},
		{UpgradeOptions{Rollback: true, Containers: []int{1}}, "drop --containers and --canary"},
		{UpgradeOptions{Binary: "./v2", Canary: 1, Containers: []int{1}}, "exclude each other"},
		{UpgradeOptions{Binary: "./v2", Canary: -1}, "--canary -1"},
		{UpgradeOptions{Binary: "./v2", Containers: []int{0}}, "container 0 runs the topology manager"},
		{UpgradeOptions{Binary: "./v2", Containers: []int{1, 1}}, "twice"},
		{UpgradeOptions{Binary: "./v2", Containers: []int{-2}}, "ids are 1 and up"},
		{UpgradeOptions{Binary: "./v2", WaitHealthy: -time.Second}, "negative"},
		{UpgradeOptions{Binary: "./v2", MaxExceptions: -1}, "negative"},
	}
	for _, tc := range tests {
		err := tc.o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tc.o, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !IsBadInput(err)):
			t.Errorf("%+v: %v, want bad input with %q", tc.o, err, tc.want)
		}
	}
}

func TestParseContainers(t *testing.T) {
	if got, err := ParseContainers("1, 3,2"); err != nil || len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 2 {
		t.Errorf("ParseContainers(1, 3,2) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,", "a", "1;2", "+1", "1-2", "1,,2"} {
		if _, err := ParseContainers(bad); err == nil || !IsBadInput(err) {
			t.Errorf("ParseContainers(%q) = %v, want bad input", bad, err)
		}
	}
}

func TestPackagesSummary(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	es := &egretpb.ExecutionState{PackageUri: "file:///a", PackageSha256: a,
		CurrentPackage:    &egretpb.PackageRef{Uri: "file:///b", Sha256: b},
		ContainerPackages: map[int32]*egretpb.PackageRef{2: {Uri: "file:///a", Sha256: a}}}
	got := PackagesSummary(packageUses(es, []int{1, 2, 3}))
	if want := "bbbbbbbbbbbb on containers 1,3; aaaaaaaaaaaa on 2"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := PackagesSummary(packageUses(&egretpb.ExecutionState{PackageUri: "u", PackageSha256: a}, []int{1})); got != "aaaaaaaaaaaa on container 1" {
		t.Errorf("summary %q", got)
	}
	if uris := referencedURIs(es); len(uris) != 2 || !uris["file:///a"] || !uris["file:///b"] {
		t.Errorf("referenced %v", uris)
	}
}

func TestHealthWait(t *testing.T) {
	since := time.Unix(1000, 0)
	after := since.Add(time.Second).UnixNano()
	before := &health{registered: true, tasks: map[int]taskHealth{
		1: {reported: true, nanos: since.UnixNano() - 1, start: 900, moved: 50},
		2: {reported: true, nanos: since.UnixNano() - 1, start: 900, moved: 0}, // idle before
	}, exceptions: 3}
	w := &healthWait{c: 1, tasks: map[int]string{1: "split", 2: "count"}, before: before, since: since, active: true, maxExc: 5, seen: map[int]float64{}}
	check := func(h *health) (bool, string, bool) { return w.check(h) }

	// The old processes' reports: not yet.
	if ok, why, fatal := check(before); ok || fatal || !strings.Contains(why, "split:1 has not reported from a new process") {
		t.Errorf("old reports: %v %q %v", ok, why, fatal)
	}
	// New processes, split moves nothing yet, the stream manager not back.
	h := &health{tasks: map[int]taskHealth{1: {reported: true, nanos: after, start: 1000.5}, 2: {reported: true, nanos: after, start: 1000.6}}, exceptions: 3}
	if ok, why, fatal := check(h); ok || fatal || !strings.Contains(why, "split:1 moves no tuples yet") || !strings.Contains(why, "stream manager of container 1") {
		t.Errorf("no throughput: %v %q %v", ok, why, fatal)
	}
	// Healthy: count was idle before, so it need not move.
	h.registered = true
	h.tasks[1] = taskHealth{reported: true, nanos: after, start: 1000.5, moved: 10}
	if ok, why, fatal := check(h); !ok || fatal {
		t.Errorf("healthy: %v %q %v", ok, why, fatal)
	}
	// A deactivated topology is not asked to move tuples.
	w2 := *w
	w2.active, w2.seen = false, map[int]float64{}
	h2 := &health{registered: true, tasks: map[int]taskHealth{1: {reported: true, nanos: after, start: 1000.5}, 2: {reported: true, nanos: after, start: 1000.6}}}
	if ok, _, _ := w2.check(h2); !ok {
		t.Error("a deactivated topology's container is not healthy without throughput")
	}
	// An instance that restarts again is beyond hope.
	h.tasks[1] = taskHealth{reported: true, nanos: after + 1, start: 1002, moved: 1}
	if ok, why, fatal := check(h); ok || !fatal || !strings.Contains(why, "split:1 restarted after the upgrade") {
		t.Errorf("restarted again: %v %q %v", ok, why, fatal)
	}
	// An exception storm.
	storm := &health{registered: true, tasks: h.tasks, exceptions: 9, lastException: "boom\nat x"}
	if ok, why, fatal := check(storm); ok || !fatal || !strings.Contains(why, "6 exceptions since the restart (at most 5 allowed), the latest: boom; at x") {
		t.Errorf("storm: %v %q %v", ok, why, fatal)
	}
}
