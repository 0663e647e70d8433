package topology

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/proto/egretpb"
)

func assertTopologyEqual(t *testing.T, got, want *Topology) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("topologies differ:\n got: %s\nwant: %s", dump(got), dump(want))
	}
}

// normalized returns a copy of t with empty maps and slices set to nil.
func normalized(t *Topology) *Topology {
	n := t.Clone()
	if len(n.Config) == 0 {
		n.Config = nil
	}
	if len(n.Components) == 0 {
		n.Components = nil
	}
	for i := range n.Components {
		c := &n.Components[i]
		if len(c.Config) == 0 {
			c.Config = nil
		}
		if len(c.Outputs) == 0 {
			c.Outputs = nil
		}
		if len(c.Inputs) == 0 {
			c.Inputs = nil
		}
		for j := range c.Outputs {
			if len(c.Outputs[j].Fields) == 0 {
				c.Outputs[j].Fields = nil
			}
		}
		for j := range c.Inputs {
			if len(c.Inputs[j].Fields) == 0 {
				c.Inputs[j].Fields = nil
			}
		}
	}
	return n
}

func dump(t *Topology) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{Name:%q ID:%q Config:%#v", t.Name, t.ID, t.Config)
	for _, c := range t.Components {
		fmt.Fprintf(&b, "\n   %#v", c)
	}
	b.WriteString("}")
	return b.String()
}

// everyGroupingTopology uses every grouping kind, named and direct streams,
// and topology and component config.
func everyGroupingTopology() *Topology {
	out := func(id string, direct bool, fields ...string) Stream {
		return Stream{ID: id, Fields: fields, Direct: direct}
	}
	return &Topology{
		Name: "all-groupings",
		ID:   "all-groupings-1a2b3c",
		Config: map[string]string{
			KeyContainers: "2", KeyDeliveryMode: string(AtLeastOnce), KeyMessageTimeout: "45s",
			"user.setting": "x=y", "z": "",
		},
		Components: []Component{
			{Name: "src", Kind: Spout, Parallelism: 3,
				Outputs: []Stream{out(DefaultStream, false, "key", "value"), out("direct", true, "n"), out("empty", false)},
				Config:  map[string]string{KeyMaxSpoutPending: "1000", KeyCPU: "0.25"}},
			{Name: "shuffle", Kind: Bolt, Parallelism: 2, Outputs: []Stream{out(DefaultStream, false, "key")},
				Inputs: []Input{{Component: "src", Stream: DefaultStream, Grouping: Shuffle}}},
			{Name: "fields", Kind: Bolt, Parallelism: 4,
				Inputs: []Input{{Component: "src", Stream: DefaultStream, Grouping: Fields, Fields: []string{"key", "value"}}},
				Config: map[string]string{KeyTickFrequency: "1s", KeyRAM: "256MiB"}},
			{Name: "all", Kind: Bolt, Parallelism: 1, Inputs: []Input{{Component: "src", Stream: DefaultStream, Grouping: All}}},
			{Name: "global", Kind: Bolt, Parallelism: 2, Inputs: []Input{{Component: "shuffle", Stream: DefaultStream, Grouping: Global}}},
			{Name: "none", Kind: Bolt, Parallelism: 1, Inputs: []Input{
				{Component: "src", Stream: DefaultStream, Grouping: None},
				{Component: "src", Stream: "empty", Grouping: Shuffle},
			}},
			{Name: "direct", Kind: Bolt, Parallelism: 2, Inputs: []Input{{Component: "src", Stream: "direct", Grouping: Direct}}},
			{Name: "custom", Kind: Bolt, Parallelism: 2, Inputs: []Input{{Component: "src", Stream: DefaultStream, Grouping: Custom, CustomName: "by-key"}}},
			{Name: "local", Kind: Bolt, Parallelism: 2, Inputs: []Input{{Component: "shuffle", Stream: DefaultStream, Grouping: LocalOrShuffle}}},
		},
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for name, topo := range map[string]*Topology{
		"every grouping": everyGroupingTopology(),
		"wordcount":      validTopology(),
	} {
		t.Run(name, func(t *testing.T) {
			if err := Validate(topo); err != nil {
				t.Fatalf("test topology is invalid: %v", err)
			}
			b, err := Marshal(topo)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			assertTopologyEqual(t, got, topo)
		})
	}
}

func TestMarshalEveryGroupingAndKind(t *testing.T) {
	for g := range groupingNames {
		if _, ok := groupingToPB[g]; !ok {
			t.Errorf("grouping %v has no protobuf value", g)
		}
	}
	seen := map[Grouping]bool{}
	for _, c := range everyGroupingTopology().Components {
		for _, in := range c.Inputs {
			seen[in.Grouping] = true
		}
	}
	if len(seen) != len(groupingNames) {
		t.Errorf("round-trip topology uses %d of the %d groupings", len(seen), len(groupingNames))
	}
}

func TestMarshalDeterministic(t *testing.T) {
	topo := everyGroupingTopology()
	for i := 0; i < 50; i++ {
		topo.Config[fmt.Sprintf("user.key%02d", i)] = fmt.Sprint(i)
	}
	first, err := Marshal(topo)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		// A clone has freshly built maps, so iteration order differs.
		again, err := Marshal(topo.Clone())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("Marshal is not deterministic (attempt %d)", i)
		}
	}
}

func TestUnmarshalGarbage(t *testing.T) {
	good, err := Marshal(validTopology())
	if err != nil {
		t.Fatal(err)
	}
	wrongVersion, _ := proto.Marshal(&egretpb.Topology{FormatVersion: 2, Name: "x"})
	noVersion, _ := proto.Marshal(&egretpb.Topology{Name: "x"})
	badKind, _ := proto.Marshal(&egretpb.Topology{FormatVersion: FormatVersion, Components: []*egretpb.Component{{Name: "c", Kind: 9}}})
	unspecifiedKind, _ := proto.Marshal(&egretpb.Topology{FormatVersion: FormatVersion, Components: []*egretpb.Component{{Name: "c"}}})
	badGrouping, _ := proto.Marshal(&egretpb.Topology{FormatVersion: FormatVersion, Components: []*egretpb.Component{{
		Name: "c", Kind: egretpb.ComponentKind_COMPONENT_KIND_BOLT, Inputs: []*egretpb.Input{{Component: "s", Stream: "default", Grouping: 77}},
	}}})
	tests := map[string]struct {
		data []byte
		want string
	}{
		"random":           {[]byte("this is not a protobuf message at all"), "decode topology definition"},
		"truncated":        {good[:len(good)-3], "decode topology definition"},
		"all ones":         {bytes.Repeat([]byte{0xff}, 64), "decode topology definition"},
		"invalid utf-8":    {mustMarshalRaw(t, 2, []byte{0xff, 0xfe}), "decode topology definition"},
		"empty":            {nil, "format version 0"},
		"wrong version":    {wrongVersion, "format version 2"},
		"no version":       {noVersion, "format version 0"},
		"unknown kind":     {badKind, `component "c": unknown kind`},
		"unspecified kind": {unspecifiedKind, `component "c": unknown kind`},
		"unknown grouping": {badGrouping, `component "c" input s/default: unknown grouping`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Unmarshal(tc.data)
			if err == nil {
				t.Fatalf("Unmarshal = %+v, want an error", got)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// mustMarshalRaw encodes one length-delimited field by hand (protobuf
// refuses to marshal invalid UTF-8 itself).
func mustMarshalRaw(t *testing.T, field byte, payload []byte) []byte {
	t.Helper()
	b := []byte{field<<3 | 2, byte(len(payload))}
	return append(b, payload...)
}

func TestCloneIsDeep(t *testing.T) {
	orig := everyGroupingTopology()
	c := orig.Clone()
	assertTopologyEqual(t, c, orig)
	c.Config[KeyContainers] = "9"
	c.Components[0].Config[KeyCPU] = "9"
	c.Components[0].Outputs[0].Fields[0] = "changed"
	c.Components[2].Inputs[0].Fields[0] = "changed"
	assertTopologyEqual(t, orig, everyGroupingTopology())
}

func FuzzUnmarshal(f *testing.F) {
	for _, topo := range []*Topology{everyGroupingTopology(), validTopology(), {Name: "empty"}} {
		b, err := Marshal(topo)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := Unmarshal(data)
		if err != nil {
			return
		}
		_ = Validate(topo) // must not panic, valid or not
		_ = topo.Spouts()
		_ = topo.Containers()
		b, err := Marshal(topo)
		if err != nil {
			t.Fatalf("Marshal of a decoded topology: %v", err)
		}
		again, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("Unmarshal(Marshal(t)): %v", err)
		}
		// protobuf does not tell an empty map from a missing one, so compare
		// with empty maps and slices as nil.
		assertTopologyEqual(t, normalized(again), normalized(topo))
		b2, err := Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, b2) {
			t.Fatal("Marshal is not stable across a round trip")
		}
	})
}
