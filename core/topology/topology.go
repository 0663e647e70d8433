package topology

import (
	"fmt"
	"slices"
	"sort"
)

// Kind says whether a component is a spout or a bolt.
type Kind int

// Component kinds.
const (
	Spout Kind = iota + 1
	Bolt
)

func (k Kind) String() string {
	switch k {
	case Spout:
		return "spout"
	case Bolt:
		return "bolt"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Grouping says how the tuples of a stream are routed to the tasks of a
// subscribing bolt.
type Grouping int

// Groupings.
const (
	// Shuffle spreads tuples evenly over the tasks.
	Shuffle Grouping = iota + 1
	// Fields routes tuples with equal values of the grouping fields to the
	// same task: the one owning the key's key group (core/tuple.FieldsHash
	// mapped by core/keygroup.TaskIndex).
	Fields
	// All sends a copy of every tuple to every task.
	All
	// Global sends every tuple to the task with the lowest id.
	Global
	// None means the subscriber does not care; it behaves as Shuffle.
	None
	// Direct lets the emitter choose the task (EmitDirect); the stream must
	// be declared direct.
	Direct
	// Custom calls a user function, registered under Input.CustomName in the
	// topology binary, with the tuple and the list of tasks.
	Custom
	// LocalOrShuffle prefers tasks in the emitter's container and shuffles
	// over all tasks when there are none.
	LocalOrShuffle
)

var groupingNames = map[Grouping]string{
	Shuffle: "shuffle", Fields: "fields", All: "all", Global: "global", None: "none",
	Direct: "direct", Custom: "custom", LocalOrShuffle: "local-or-shuffle",
}

func (g Grouping) String() string {
	if s, ok := groupingNames[g]; ok {
		return s
	}
	return fmt.Sprintf("grouping(%d)", int(g))
}

// DefaultStream is the id of the stream a component emits to unless it
// names another one.
const DefaultStream = "default"

// Stream is an output stream declared by a component.
type Stream struct {
	ID     string
	Fields []string
	// Direct streams accept only EmitDirect and Direct subscriptions.
	Direct bool
}

// Input is a bolt's subscription to a stream of another component.
type Input struct {
	Component string
	Stream    string
	Grouping  Grouping
	// Fields are the grouping fields of a Fields grouping.
	Fields []string
	// CustomName names the grouping function of a Custom grouping.
	CustomName string
}

// Component is one spout or bolt of a topology.
type Component struct {
	Name        string
	Kind        Kind
	Parallelism int
	Outputs     []Stream
	// Inputs is empty for spouts.
	Inputs []Input
	// Config holds component-level settings that override the topology's
	// (see the Key constants).
	Config map[string]string
}

// Output returns the component's stream with the given id.
func (c *Component) Output(id string) (*Stream, bool) {
	for i := range c.Outputs {
		if c.Outputs[i].ID == id {
			return &c.Outputs[i], true
		}
	}
	return nil, false
}

// Topology is the logical plan of a topology.
type Topology struct {
	Name string
	// ID identifies one submission of the topology; it is set by the
	// launcher (name plus a random suffix) and empty in a definition.
	ID         string
	Components []Component
	// Config holds topology-level settings (see the Key constants).
	Config map[string]string
}

// Component returns the component with the given name.
func (t *Topology) Component(name string) (*Component, bool) {
	for i := range t.Components {
		if t.Components[i].Name == name {
			return &t.Components[i], true
		}
	}
	return nil, false
}

// Spouts returns the names of the spouts in definition order.
func (t *Topology) Spouts() []string { return t.names(Spout) }

// Bolts returns the names of the bolts in definition order.
func (t *Topology) Bolts() []string { return t.names(Bolt) }

func (t *Topology) names(k Kind) []string {
	var out []string
	for _, c := range t.Components {
		if c.Kind == k {
			out = append(out, c.Name)
		}
	}
	return out
}

// Parallelism returns the number of tasks per component.
func (t *Topology) Parallelism() map[string]int {
	out := make(map[string]int, len(t.Components))
	for _, c := range t.Components {
		out[c.Name] = c.Parallelism
	}
	return out
}

// Subscribers returns the inputs that subscribe to stream of component,
// with the subscribing bolt's name, sorted by bolt name.
func (t *Topology) Subscribers(component, stream string) []Subscription {
	var out []Subscription
	for _, c := range t.Components {
		for _, in := range c.Inputs {
			if in.Component == component && in.Stream == stream {
				out = append(out, Subscription{Bolt: c.Name, Input: in})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bolt < out[j].Bolt })
	return out
}

// Consumers returns the bolts with an input from component (any stream),
// sorted: where its checkpoint barriers go.
func (t *Topology) Consumers(component string) []string {
	var out []string
	for _, c := range t.Components {
		for _, in := range c.Inputs {
			if in.Component == component {
				out = append(out, c.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Producers returns the components component has an input from, sorted:
// whose checkpoint barriers it aligns.
func (t *Topology) Producers(component string) []string {
	c, ok := t.Component(component)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, in := range c.Inputs {
		if !seen[in.Component] {
			seen[in.Component] = true
			out = append(out, in.Component)
		}
	}
	sort.Strings(out)
	return out
}

// Subscription is one bolt's input on a stream.
type Subscription struct {
	Bolt string
	Input
}

// Clone returns a deep copy of t.
func (t *Topology) Clone() *Topology {
	out := &Topology{Name: t.Name, ID: t.ID, Config: cloneMap(t.Config)}
	out.Components = slices.Clone(t.Components)
	for i, c := range t.Components {
		cc := c
		cc.Config = cloneMap(c.Config)
		// slices.Clone keeps nil and empty slices apart, so a clone is
		// reflect.DeepEqual to the original.
		cc.Outputs = slices.Clone(c.Outputs)
		for j := range cc.Outputs {
			cc.Outputs[j].Fields = slices.Clone(cc.Outputs[j].Fields)
		}
		cc.Inputs = slices.Clone(c.Inputs)
		for j := range cc.Inputs {
			cc.Inputs[j].Fields = slices.Clone(cc.Inputs[j].Fields)
		}
		out.Components[i] = cc
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
