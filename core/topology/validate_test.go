package topology

import (
	"errors"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/names"
)

// validTopology returns a small valid topology: sentence → split → count.
func validTopology() *Topology {
	return &Topology{
		Name: "wordcount",
		Components: []Component{
			{Name: "sentence", Kind: Spout, Parallelism: 1,
				Outputs: []Stream{{ID: DefaultStream, Fields: []string{"sentence"}}}},
			{Name: "split", Kind: Bolt, Parallelism: 2,
				Outputs: []Stream{{ID: DefaultStream, Fields: []string{"word", "pos"}}},
				Inputs:  []Input{{Component: "sentence", Stream: DefaultStream, Grouping: Shuffle}}},
			{Name: "count", Kind: Bolt, Parallelism: 2,
				Inputs: []Input{{Component: "split", Stream: DefaultStream, Grouping: Fields, Fields: []string{"word"}}}},
		},
	}
}

// problemsOf validates t and returns the problems, failing the test when
// the error is not a *ValidationError.
func problemsOf(t *testing.T, topo *Topology) []string {
	t.Helper()
	err := Validate(topo)
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate returned %T (%v), want *ValidationError", err, err)
	}
	if ve.Topology != topo.Name {
		t.Errorf("ValidationError.Topology = %q, want %q", ve.Topology, topo.Name)
	}
	if got := strings.Count(err.Error(), "\n"); got != len(ve.Problems) {
		t.Errorf("Error() has %d problem lines, want %d:\n%v", got, len(ve.Problems), err)
	}
	return ve.Problems
}

// assertProblems checks that problems has exactly len(want) entries and
// that each want entry (a set of substrings) matches a distinct problem.
func assertProblems(t *testing.T, problems []string, want [][]string) {
	t.Helper()
	used := make([]bool, len(problems))
	for _, subs := range want {
		found := false
		for i, p := range problems {
			if used[i] || !containsAll(p, subs) {
				continue
			}
			used[i], found = true, true
			break
		}
		if !found {
			t.Errorf("no problem mentions all of %q; problems:\n  %s", subs, strings.Join(problems, "\n  "))
		}
	}
	if len(problems) != len(want) {
		t.Errorf("got %d problems, want %d:\n  %s", len(problems), len(want), strings.Join(problems, "\n  "))
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestValidateValid(t *testing.T) {
	topo := validTopology()
	topo.Config = map[string]string{
		KeyContainers: "3", KeyDeliveryMode: string(AtLeastOnce), KeyMessageTimeout: "10s",
		KeyContainerRAM: "4GiB", KeyDebug: "true", "my.own.setting": "anything goes",
	}
	topo.Components[0].Config = map[string]string{KeyMaxSpoutPending: "100", KeyCPU: "0.5", KeyRAM: "512MiB"}
	topo.Components[2].Config = map[string]string{KeyTickFrequency: "1s", KeyDisk: "1GB"}
	if err := Validate(topo); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
}

func TestValidateProblems(t *testing.T) {
	long := "a" + strings.Repeat("b", names.MaxLength) // 64 characters
	tests := []struct {
		name   string
		mutate func(*Topology)
		want   [][]string // each entry: substrings one problem must contain
	}{
		{
			name:   "unknown component in input",
			mutate: func(tp *Topology) { tp.Components[2].Inputs[0].Component = "splitter" },
			want:   [][]string{{`component "count"`, "splitter", "unknown component"}},
		},
		{
			name:   "unknown stream",
			mutate: func(tp *Topology) { tp.Components[2].Inputs[0].Stream = "words" },
			want:   [][]string{{`component "count"`, `"words"`, `"split"`, "declared: default"}},
		},
		{
			name:   "fields grouping on undeclared field",
			mutate: func(tp *Topology) { tp.Components[2].Inputs[0].Fields = []string{"wrod"} },
			want:   [][]string{{`component "count"`, `"wrod"`, "undeclared field", "stream fields: word, pos"}},
		},
		{
			name:   "parallelism above the max parallelism",
			mutate: func(tp *Topology) { tp.Components[2].Parallelism = 129 },
			want:   [][]string{{`component "count"`, "parallelism 129 exceeds the max parallelism 128", "topology.max.parallelism"}},
		},
		{
			name: "parallelism above a component's max parallelism",
			mutate: func(tp *Topology) {
				tp.Config = map[string]string{KeyMaxParallelism: "1000"}
				tp.Components[2].Parallelism = 9
				tp.Components[2].Config = map[string]string{KeyMaxParallelism: "8"}
			},
			want: [][]string{{`component "count"`, "parallelism 9 exceeds the max parallelism 8"}},
		},
		{
			name:   "max parallelism above the limit",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyMaxParallelism: "32769"} },
			want:   [][]string{{"topology config topology.max.parallelism", `"32769" is above the maximum 32768`}},
		},
		{
			name:   "fields grouping without fields",
			mutate: func(tp *Topology) { tp.Components[2].Inputs[0].Fields = nil },
			want:   [][]string{{`component "count"`, "at least one field"}},
		},
		{
			name: "duplicate component names",
			mutate: func(tp *Topology) {
				tp.Components = append(tp.Components, Component{Name: "split", Kind: Bolt, Parallelism: 1,
					Inputs: []Input{{Component: "sentence", Stream: DefaultStream, Grouping: Shuffle}}})
			},
			want: [][]string{{`component "split"`, "duplicate component name"}},
		},
		{
			name: "duplicate stream",
			mutate: func(tp *Topology) {
				tp.Components[0].Outputs = append(tp.Components[0].Outputs, Stream{ID: DefaultStream, Fields: []string{"x"}})
			},
			want: [][]string{{`component "sentence"`, `stream "default"`, "declared twice"}},
		},
		{
			name:   "duplicate field",
			mutate: func(tp *Topology) { tp.Components[1].Outputs[0].Fields = []string{"word", "pos", "word"} },
			want:   [][]string{{`component "split"`, `stream "default"`, `field "word"`, "declared twice"}},
		},
		{
			name:   "bad field name",
			mutate: func(tp *Topology) { tp.Components[1].Outputs[0].Fields = []string{"word", "p-os"} },
			want:   [][]string{{`component "split"`, `"p-os"`}},
		},
		{
			name: "cycle of two bolts",
			mutate: func(tp *Topology) {
				tp.Components[2].Outputs = []Stream{{ID: DefaultStream, Fields: []string{"word"}}}
				tp.Components[1].Inputs = append(tp.Components[1].Inputs, Input{Component: "count", Stream: DefaultStream, Grouping: Shuffle})
			},
			want: [][]string{{"cycle", "count, split"}},
		},
		{
			name: "self loop",
			mutate: func(tp *Topology) {
				tp.Components[1].Inputs = append(tp.Components[1].Inputs, Input{Component: "split", Stream: DefaultStream, Grouping: Shuffle})
			},
			want: [][]string{{"cycle through split"}},
		},
		{
			name:   "parallelism 0",
			mutate: func(tp *Topology) { tp.Components[1].Parallelism = 0 },
			want:   [][]string{{`component "split"`, "parallelism 0"}},
		},
		{
			name:   "parallelism -1",
			mutate: func(tp *Topology) { tp.Components[0].Parallelism = -1 },
			want:   [][]string{{`component "sentence"`, "parallelism -1"}},
		},
		{
			name:   "reserved name tmanager",
			mutate: func(tp *Topology) { renameComponent(tp, "count", "tmanager") },
			want:   [][]string{{`component "tmanager"`, "reserved"}},
		},
		{
			name:   "reserved name stmgr, any case",
			mutate: func(tp *Topology) { renameComponent(tp, "count", "StMgr") },
			want:   [][]string{{`component "StMgr"`, "reserved"}},
		},
		{
			name:   "reserved name acker",
			mutate: func(tp *Topology) { renameComponent(tp, "sentence", "acker") },
			want:   [][]string{{`component "acker"`, "reserved"}},
		},
		{
			name:   "empty topology",
			mutate: func(tp *Topology) { tp.Components = nil },
			want:   [][]string{{"no components"}},
		},
		{
			name: "no spout",
			mutate: func(tp *Topology) {
				tp.Components = tp.Components[2:]
				tp.Components[0].Inputs = nil
			},
			want: [][]string{{"no spout"}, {`component "count"`, "subscribes to no stream"}},
		},
		{
			name:   "topology name empty",
			mutate: func(tp *Topology) { tp.Name = "" },
			want:   [][]string{{"topology", "empty"}},
		},
		{
			name:   "topology name with slash",
			mutate: func(tp *Topology) { tp.Name = "word/count" },
			want:   [][]string{{"topology", `"word/count"`}},
		},
		{
			name:   "component name with space",
			mutate: func(tp *Topology) { renameComponent(tp, "split", "my split") },
			want:   [][]string{{"component #2", `"my split"`, "must start with a letter"}},
		},
		{
			name:   "component name with slash",
			mutate: func(tp *Topology) { renameComponent(tp, "split", "a/b") },
			want:   [][]string{{"component #2", `"a/b"`}},
		},
		{
			name:   "component name with leading digit",
			mutate: func(tp *Topology) { renameComponent(tp, "count", "2count") },
			want:   [][]string{{"component #3", `"2count"`}},
		},
		{
			name:   "component name of 64 characters",
			mutate: func(tp *Topology) { renameComponent(tp, "count", long) },
			want:   [][]string{{"component #3", "at most 63 characters"}},
		},
		{
			name:   "component name with unicode",
			mutate: func(tp *Topology) { renameComponent(tp, "count", "zählen") },
			want:   [][]string{{"component #3", `"z\u00e4hlen"`}},
		},
		{
			name:   "stream name invalid",
			mutate: func(tp *Topology) { tp.Components[0].Outputs[0].ID = "a stream" },
			want: [][]string{
				{`component "sentence"`, `"a stream"`},
				// split subscribes to the default stream, which is gone.
				{`component "split"`, `no stream "default"`},
			},
		},
		{
			name: "direct stream subscribed without direct grouping",
			mutate: func(tp *Topology) {
				tp.Components[0].Outputs[0].Direct = true
			},
			want: [][]string{{`component "split"`, "sentence/default", "declared direct", "needs a direct grouping"}},
		},
		{
			name: "direct grouping on a non-direct stream",
			mutate: func(tp *Topology) {
				tp.Components[1].Inputs[0].Grouping = Direct
			},
			want: [][]string{{`component "split"`, "sentence/default", "not declared direct"}},
		},
		{
			name:   "custom grouping without name",
			mutate: func(tp *Topology) { tp.Components[1].Inputs[0].Grouping = Custom },
			want:   [][]string{{`component "split"`, "custom grouping has no name"}},
		},
		{
			name:   "unknown grouping",
			mutate: func(tp *Topology) { tp.Components[1].Inputs[0].Grouping = Grouping(42) },
			want:   [][]string{{`component "split"`, "unknown grouping grouping(42)"}},
		},
		{
			name: "subscribed twice",
			mutate: func(tp *Topology) {
				tp.Components[1].Inputs = append(tp.Components[1].Inputs, Input{Component: "sentence", Stream: DefaultStream, Grouping: All})
			},
			want: [][]string{{`component "split"`, "subscribed twice"}},
		},
		{
			name: "spout with inputs",
			mutate: func(tp *Topology) {
				tp.Components[0].Inputs = []Input{{Component: "split", Stream: DefaultStream, Grouping: Shuffle}}
			},
			// the input also closes a cycle sentence → split → sentence
			want: [][]string{{`component "sentence"`, "spout cannot have inputs"}, {"cycle", "sentence, split"}},
		},
		{
			name:   "unknown kind",
			mutate: func(tp *Topology) { tp.Components[2].Kind = Kind(7) },
			want:   [][]string{{`component "count"`, "unknown kind kind(7)"}},
		},
		{
			name:   "containers not an integer",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyContainers: "x"} },
			want:   [][]string{{"topology config topology.containers", `"x" is not an integer`}},
		},
		{
			name:   "containers zero",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyContainers: "0"} },
			want:   [][]string{{"topology.containers", "below the minimum 1"}},
		},
		{
			name:   "message timeout not a duration",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyMessageTimeout: "abc"} },
			want:   [][]string{{"topology.message.timeout", `"abc" is not a duration`}},
		},
		{
			name:   "message timeout zero",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyMessageTimeout: "0s"} },
			want:   [][]string{{"topology.message.timeout", "below the minimum"}},
		},
		{
			name:   "negative max spout pending",
			mutate: func(tp *Topology) { tp.Components[0].Config = map[string]string{KeyMaxSpoutPending: "-1"} },
			want:   [][]string{{`component "sentence" config topology.max.spout.pending`, "below the minimum"}},
		},
		{
			name:   "bad delivery mode",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyDeliveryMode: "exactly-once"} },
			want:   [][]string{{"topology.delivery.mode", `"exactly-once"`, "at-least-once"}},
		},
		{
			name:   "bad bool",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyDebug: "yes"} },
			want:   [][]string{{"topology.debug", `"yes" is not true or false`}},
		},
		{
			name:   "bad cpu",
			mutate: func(tp *Topology) { tp.Components[1].Config = map[string]string{KeyCPU: "two"} },
			want:   [][]string{{`component "split" config topology.component.cpu`, `"two" is not a number`}},
		},
		{
			name:   "cpu NaN",
			mutate: func(tp *Topology) { tp.Components[1].Config = map[string]string{KeyCPU: "NaN"} },
			want:   [][]string{{`component "split" config topology.component.cpu`, `"NaN"`}},
		},
		{
			name:   "cpu infinite",
			mutate: func(tp *Topology) { tp.Config = map[string]string{KeyContainerCPU: "+Inf"} },
			want:   [][]string{{"topology config topology.container.max.cpu", `"+Inf"`}},
		},
		{
			name:   "bad ram",
			mutate: func(tp *Topology) { tp.Components[1].Config = map[string]string{KeyRAM: "lots"} },
			want:   [][]string{{`component "split" config topology.component.ram`, `"lots" is not a byte size`}},
		},
		{
			name:   "ram NaN",
			mutate: func(tp *Topology) { tp.Components[1].Config = map[string]string{KeyRAM: "NaN"} },
			want:   [][]string{{`component "split" config topology.component.ram`, `"NaN" is not a byte size`}},
		},
		{
			name:   "topology-level key on a component",
			mutate: func(tp *Topology) { tp.Components[1].Config = map[string]string{KeyContainers: "2"} },
			want:   [][]string{{`component "split" config topology.containers`, "topology-level setting"}},
		},
		{
			name:   "unknown topology key",
			mutate: func(tp *Topology) { tp.Config = map[string]string{"topology.workers": "2"} },
			want:   [][]string{{"topology config topology.workers", "unknown topology setting"}},
		},
		{
			name:   "unknown topology key on a component",
			mutate: func(tp *Topology) { tp.Components[2].Config = map[string]string{"topology.bogus": "1"} },
			want:   [][]string{{`component "count" config topology.bogus`, "unknown topology setting"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := validTopology()
			tc.mutate(topo)
			assertProblems(t, problemsOf(t, topo), tc.want)
		})
	}
}

// renameComponent renames a component and the inputs that name it.
func renameComponent(tp *Topology, from, to string) {
	for i := range tp.Components {
		c := &tp.Components[i]
		if c.Name == from {
			c.Name = to
		}
		for j := range c.Inputs {
			if c.Inputs[j].Component == from {
				c.Inputs[j].Component = to
			}
		}
	}
}

// TestValidateCycleNamesEveryComponent uses a graph where a depth-first
// search reaches one member of the cycle (d) only through an edge to an
// already finished component: every component of the strongly connected
// part must still be named.
func TestValidateCycleNamesEveryComponent(t *testing.T) {
	out := []Stream{{ID: DefaultStream, Fields: []string{"v"}}}
	in := func(names ...string) []Input {
		var ins []Input
		for _, n := range names {
			ins = append(ins, Input{Component: n, Stream: DefaultStream, Grouping: Shuffle})
		}
		return ins
	}
	// Edges (publisher → subscriber): s→a, c→a, a→b, d→b, b→c, a→d, and
	// e hangs off the cycle without being on it.
	topo := &Topology{Name: "cyclic", Components: []Component{
		{Name: "s", Kind: Spout, Parallelism: 1, Outputs: out},
		{Name: "a", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: in("s", "c")},
		{Name: "b", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: in("a", "d")},
		{Name: "c", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: in("b")},
		{Name: "d", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: in("a")},
		{Name: "e", Kind: Bolt, Parallelism: 1, Inputs: in("c")},
	}}
	assertProblems(t, problemsOf(t, topo), [][]string{{"subscriptions form a cycle through a, b, c, d"}})
	if p := problemsOf(t, topo); len(p) == 1 && strings.Contains(p[0], "e") && strings.Contains(p[0], ", e") {
		t.Errorf("component e is not on the cycle but is named: %s", p[0])
	}
}

func TestValidateTwoCycles(t *testing.T) {
	out := []Stream{{ID: DefaultStream, Fields: []string{"v"}}}
	sub := func(n string) Input { return Input{Component: n, Stream: DefaultStream, Grouping: Shuffle} }
	topo := &Topology{Name: "two", Components: []Component{
		{Name: "s", Kind: Spout, Parallelism: 1, Outputs: out},
		{Name: "x1", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: []Input{sub("s"), sub("x2")}},
		{Name: "x2", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: []Input{sub("x1")}},
		{Name: "y1", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: []Input{sub("s"), sub("y2")}},
		{Name: "y2", Kind: Bolt, Parallelism: 1, Outputs: out, Inputs: []Input{sub("y1")}},
		{Name: "z", Kind: Bolt, Parallelism: 1, Inputs: []Input{sub("x2"), sub("y2")}},
	}}
	assertProblems(t, problemsOf(t, topo), [][]string{{"cycle through x1, x2, y1, y2"}})
}

// TestValidateReportsEverything breaks one topology in many ways at once;
// every problem must be reported, not just the first.
func TestValidateReportsEverything(t *testing.T) {
	topo := validTopology()
	topo.Name = "bad name"
	topo.Config = map[string]string{KeyContainers: "x", "topology.nope": "1"}
	topo.Components[0].Parallelism = 0
	topo.Components[1].Outputs[0].Fields = []string{"word", "word"}
	topo.Components[1].Config = map[string]string{KeyDeliveryMode: string(AtLeastOnce)}
	topo.Components[2].Inputs[0].Fields = []string{"missing"}
	topo.Components = append(topo.Components,
		Component{Name: "count", Kind: Bolt, Parallelism: 1,
			Inputs: []Input{{Component: "ghost", Stream: DefaultStream, Grouping: Shuffle}}},
		Component{Name: "shell", Kind: Bolt, Parallelism: 1,
			Inputs: []Input{{Component: "split", Stream: "other", Grouping: Global}}},
	)
	assertProblems(t, problemsOf(t, topo), [][]string{
		{"topology:", `"bad name"`},
		{"topology config topology.containers", "not an integer"},
		{"topology config topology.nope", "unknown topology setting"},
		{`component "sentence"`, "parallelism 0"},
		{`component "split"`, `field "word" declared twice`},
		{`component "split" config topology.delivery.mode`, "topology-level"},
		{`component "count"`, `undeclared field "missing"`},
		{`component "count"`, "duplicate component name"},
		{`component "count"`, `unknown component "ghost"`},
		{`component "shell"`, "reserved"},
		{`component "shell"`, `no stream "other"`},
	})
}

func TestValidationErrorMessage(t *testing.T) {
	err := &ValidationError{Topology: "t", Problems: []string{"one", "two"}}
	want := "topology \"t\" is invalid (2 problems):\n  one\n  two"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestValidateDoesNotModify(t *testing.T) {
	topo := validTopology()
	topo.Components[2].Inputs[0].Fields = []string{"nope"}
	before := topo.Clone()
	_ = Validate(topo)
	assertTopologyEqual(t, topo, before)
}

func TestCheckEffectivelyOnce(t *testing.T) {
	topo := func(mode DeliveryMode, cfg map[string]string) *Topology {
		return &Topology{Name: "t", Config: map[string]string{KeyDeliveryMode: string(mode)}, Components: []Component{
			{Name: "s", Kind: Spout, Parallelism: 1, Config: map[string]string{}, Outputs: []Stream{{ID: DefaultStream, Fields: []string{"x"}}}},
			{Name: "b", Kind: Bolt, Parallelism: 1, Config: cfg, Inputs: []Input{{Component: "s", Stream: DefaultStream, Grouping: Shuffle}}},
			{Name: "c", Kind: Bolt, Parallelism: 1, Config: map[string]string{KeyNotCheckpointed: "a shell bolt"}, Inputs: []Input{{Component: "s", Stream: DefaultStream, Grouping: Shuffle}}},
		}}
	}
	if err := CheckEffectivelyOnce(topo(AtLeastOnce, map[string]string{KeyNotCheckpointed: "x"})); err != nil {
		t.Errorf("at-least-once refused: %v", err)
	}
	err := CheckEffectivelyOnce(topo(EffectivelyOnce, map[string]string{KeyNotCheckpointed: "a window bolt"}))
	if err == nil || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), `component "b" cannot be checkpointed (a window bolt)`) ||
		!strings.Contains(err.Error(), `component "c" cannot be checkpointed (a shell bolt)`) ||
		!strings.Contains(err.Error(), "SetStateless") {
		t.Errorf("want one line naming b and c, got %v", err)
	}
	err = CheckEffectivelyOnce(topo(EffectivelyOnce, map[string]string{KeyNotCheckpointed: "a window bolt", KeyStateless: "true"}))
	if err == nil || strings.Contains(err.Error(), `"b"`) || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("b is marked stateless; want only c named, got %v", err)
	}
	tp := topo(EffectivelyOnce, map[string]string{KeyStateless: "true"})
	tp.Components[2].Config[KeyStateless] = "true"
	if err := CheckEffectivelyOnce(tp); err != nil {
		t.Errorf("every component stateless or checkpointable, refused: %v", err)
	}
	if err := Validate(tp); err != nil {
		t.Errorf("the keys do not validate: %v", err)
	}
}
