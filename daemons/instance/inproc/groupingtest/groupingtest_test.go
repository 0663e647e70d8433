package groupingtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/topology"
)

func TestCaseNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Cases() {
		if seen[c.Name] {
			t.Errorf("case %q repeated", c.Name)
		}
		seen[c.Name] = true
		if err := names.Check(names.Topology, c.TopologyName()); err != nil {
			t.Errorf("case %q: topology name: %v", c.Name, err)
		}
		if got, err := Lookup(c.Name); err != nil || got != c {
			t.Errorf("Lookup(%q) = %v, %v", c.Name, got, err)
		}
	}
	_, err := Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), "fields") {
		t.Errorf("Lookup of an unknown case: %v, want an error listing the cases", err)
	}
}

// TestAllBuilderCoversEveryCase: a binary that builds AllBuilder has the
// factory of every component of every case, declared the same way.
func TestAllBuilderCoversEveryCase(t *testing.T) {
	all, err := AllBuilder(NewMemory()).Build()
	if err != nil {
		t.Fatalf("AllBuilder: %v", err)
	}
	for _, c := range Cases() {
		topo, err := c.Builder(NewMemory()).Build()
		if err != nil {
			t.Fatalf("case %s: Build: %v", c.Name, err)
		}
		if topo.Logical.Config[KeyCase] != c.Name {
			t.Errorf("case %s: topology setting %s = %q", c.Name, KeyCase, topo.Logical.Config[KeyCase])
		}
		for _, comp := range topo.Logical.Components {
			u, ok := all.Logical.Component(comp.Name)
			if !ok {
				t.Errorf("case %s: component %q missing from AllBuilder", c.Name, comp.Name)
				continue
			}
			if u.Kind != comp.Kind || !slices.EqualFunc(u.Outputs, comp.Outputs, func(a, b topology.Stream) bool {
				return a.ID == b.ID && a.Direct == b.Direct && slices.Equal(a.Fields, b.Fields)
			}) {
				t.Errorf("case %s: component %q differs in AllBuilder: %+v vs %+v", c.Name, comp.Name, u, comp)
			}
			for _, in := range comp.Inputs {
				if in.CustomName != "" && all.CustomGroupings[in.CustomName] == nil {
					t.Errorf("case %s: custom grouping %q missing from AllBuilder", c.Name, in.CustomName)
				}
			}
		}
	}
}

// fakeContext is the part of api.Context the recorders use.
type fakeContext struct {
	api.Context
	component string
	task      int
	config    map[string]string
}

func (c fakeContext) ComponentName() string       { return c.component }
func (c fakeContext) TaskID() int                 { return c.task }
func (c fakeContext) Config(key string) string    { return c.config[key] }
func (c fakeContext) Logger() *zap.Logger         { return zap.NewNop() }
func (c fakeContext) ComponentTasks(string) []int { return []int{c.task} }

func TestFilesRecorder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "records")
	ctx := fakeContext{component: "bolt", task: 7, config: map[string]string{KeyRecordDir: dir}}
	sink, err := Files{}.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Kind: KindPrepared, Component: "bolt", Task: 7, Tasks: []int{7, 8}},
		tupleRecord("bolt", 7, api.NewTuple("src", "default", 1, nil, "k001", 1)),
	}
	for _, r := range want {
		if err := sink.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	// A line still being written is not read.
	f, err := os.OpenFile(filepath.Join(dir, "bolt-7.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"tuple","comp`)
	f.Close()
	got, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Key != "k001" || got[1].N != 1 || got[1].SourceTask != 1 || !slices.Equal(got[0].Tasks, []int{7, 8}) {
		t.Errorf("ReadDir = %+v, want %+v", got, want)
	}
	// A whole line that does not decode is an error.
	if err := os.WriteFile(filepath.Join(dir, "other-1.jsonl"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), "other-1.jsonl line 1") {
		t.Errorf("ReadDir of a garbage line: %v", err)
	}
	// Without the setting, Open says which setting is missing.
	if _, err := (Files{}).Open(fakeContext{component: "bolt", task: 1}); err == nil || !strings.Contains(err.Error(), KeyRecordDir) {
		t.Errorf("Open without %s: %v", KeyRecordDir, err)
	}
}

func TestTupleRecord(t *testing.T) {
	tick := tupleRecord("b", 2, api.NewTickTuple())
	if tick.Kind != KindTick || tick.Arity != 0 || tick.Values != "" {
		t.Errorf("tick: %+v", tick)
	}
	direct := tupleRecord("b", 2, api.NewTuple("src", "d", 1, nil, "k", int64(5), 2))
	if direct.Kind != KindTuple || direct.N != 5 || direct.To != 2 || direct.Arity != 3 || direct.Values != "" {
		t.Errorf("direct: %+v", direct)
	}
	bad := tupleRecord("b", 2, api.NewTuple("src", "default", 1, nil, "k", struct{ X int }{1}))
	if bad.Values == "" {
		t.Errorf("a tuple of unexpected values is not described: %+v", bad)
	}
}

// localResult is a run of the local-or-shuffle case in which the spout
// (task 1, container 1) sent tuple i to task to(i), with the bolt's tasks
// 2 and 4 in container 1 and 3 and 5 in container 2.
func localResult(t *testing.T, layout bool, to func(i int) int) *Result {
	t.Helper()
	c, err := Lookup("local-or-shuffle")
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Records: []Record{
		{Kind: KindPrepared, Component: Spout, Task: 1, Tasks: []int{1}},
		{Kind: KindSpoutDone, Component: Spout, Task: 1, N: c.N},
	}}
	if layout {
		r.ContainerOf = map[int]int{1: 1, 2: 1, 3: 2, 4: 1, 5: 2}
	}
	for task := 2; task <= 5; task++ {
		r.Records = append(r.Records, Record{Kind: KindPrepared, Component: "local", Task: task, Tasks: []int{2, 3, 4, 5}})
	}
	for i := range c.N {
		r.Records = append(r.Records, Record{Kind: KindTuple, Component: "local", Task: to(i), Source: Spout, SourceTask: 1, Stream: "default", Arity: 2, Key: Key(i), N: i})
	}
	return r
}

func TestLocalOrShuffleCheckUsesTheLayout(t *testing.T) {
	c, _ := Lookup("local-or-shuffle")
	local := func(i int) int { return []int{2, 4}[i%2] }
	everywhere := func(i int) int { return 2 + i%4 }
	leaks := func(i int) int {
		if i == 10 {
			return 3
		}
		return local(i)
	}
	for _, tc := range []struct {
		name   string
		layout bool
		to     func(int) int
		ok     bool
		why    string
	}{
		{"two containers, local tasks only", true, local, true, ""},
		{"two containers, a tuple leaves the container", true, leaks, false, "tuple 10 from container 1 reached task 3 in container 2"},
		{"two containers, spread everywhere", true, everywhere, false, "reached task 3"},
		{"one container, spread everywhere", false, everywhere, true, ""},
		{"one container, half the tasks unused", false, local, false, "task 3 got 0 tuples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := localResult(t, tc.layout, tc.to)
			if !c.Complete(r) {
				t.Fatal("not complete")
			}
			ok, why := Passes(c, r)
			if ok != tc.ok || !strings.Contains(why, tc.why) {
				t.Errorf("Passes = %v, %q; want %v and a reason containing %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}

func TestTasksNeedsEveryTaskStarted(t *testing.T) {
	r := localResult(t, true, func(i int) int { return []int{2, 4}[i%2] })
	r.Records = slices.DeleteFunc(r.Records, func(rec Record) bool { return rec.Kind == KindPrepared && rec.Task == 5 })
	c, _ := Lookup("local-or-shuffle")
	if ok, why := Passes(c, r); ok || !strings.Contains(why, "task 5") {
		t.Errorf("Passes = %v, %q; want a failure naming task 5", ok, why)
	}
}
