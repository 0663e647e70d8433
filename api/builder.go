package api

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
)

// CustomGroupingFunc chooses the destination tasks of one tuple of a
// custom-grouped stream among tasks (the subscribing bolt's task ids,
// ascending). Returning a task not in tasks is an error reported by the
// runtime; returning none drops the tuple for that bolt. values and tasks
// are valid during the call only (the emitting component may reuse its
// Values slice): keep a copy of anything needed later.
type CustomGroupingFunc func(values []any, tasks []int) []int

// GroupingSpec says how a bolt subscribes to a stream; build one with
// Shuffle, Fields, All, Global, NoGrouping, Direct, LocalOrShuffle or Custom.
type GroupingSpec struct {
	kind   topology.Grouping
	fields []string
	name   string
	fn     CustomGroupingFunc
}

// Shuffle spreads tuples evenly over the bolt's tasks.
func Shuffle() GroupingSpec { return GroupingSpec{kind: topology.Shuffle} }

// Fields sends tuples with equal values of the given fields to the same task.
func Fields(fields ...string) GroupingSpec {
	return GroupingSpec{kind: topology.Fields, fields: fields}
}

// All sends every tuple to every task.
func All() GroupingSpec { return GroupingSpec{kind: topology.All} }

// Global sends every tuple to the task with the lowest id.
func Global() GroupingSpec { return GroupingSpec{kind: topology.Global} }

// NoGrouping means the bolt does not care where tuples go (like Shuffle).
func NoGrouping() GroupingSpec { return GroupingSpec{kind: topology.None} }

// Direct subscribes to a direct stream: the emitter chooses the task.
func Direct() GroupingSpec { return GroupingSpec{kind: topology.Direct} }

// LocalOrShuffle prefers tasks in the emitter's container.
func LocalOrShuffle() GroupingSpec { return GroupingSpec{kind: topology.LocalOrShuffle} }

// Custom routes with a user function; name identifies it in the topology
// definition and must be unique in the topology.
func Custom(name string, fn CustomGroupingFunc) GroupingSpec {
	return GroupingSpec{kind: topology.Custom, name: name, fn: fn}
}

// TopologyBuilder builds a topology. Its methods record problems instead
// of failing at once; Build reports all of them together.
type TopologyBuilder struct {
	name     string
	config   map[string]string
	order    []string
	spouts   map[string]*SpoutDeclarer
	bolts    map[string]*BoltDeclarer
	custom   map[string]CustomGroupingFunc
	types    *tuple.Registry
	problems []string
}

// NewTopologyBuilder starts a topology with the given name.
func NewTopologyBuilder(name string) *TopologyBuilder {
	return &TopologyBuilder{
		name:   name,
		config: map[string]string{},
		spouts: map[string]*SpoutDeclarer{},
		bolts:  map[string]*BoltDeclarer{},
		custom: map[string]CustomGroupingFunc{},
		types:  tuple.NewRegistry(),
	}
}

// RegisterType lets tuples carry values of a user type: values of sample's
// type are encoded with codec under the numeric id, which must be the same
// in every build of the topology binary. Basic Go types need no
// registration.
func (b *TopologyBuilder) RegisterType(id uint16, sample any, codec tuple.Codec) *TopologyBuilder {
	if err := b.types.Register(id, sample, codec); err != nil {
		b.problems = append(b.problems, fmt.Sprintf("topology: RegisterType: %v", err))
	}
	return b
}

// Name returns the topology name.
func (b *TopologyBuilder) Name() string { return b.name }

type componentDecl struct {
	name        string
	parallelism int
	config      map[string]string
}

func (c *componentDecl) set(key, value string) { c.config[key] = value }

// SpoutDeclarer configures a spout.
type SpoutDeclarer struct {
	componentDecl
	factory SpoutFactory
}

// BoltDeclarer configures a bolt and its subscriptions.
type BoltDeclarer struct {
	componentDecl
	factory BoltFactory
	inputs  []topology.Input
	b       *TopologyBuilder
}

// SetSpout adds a spout with the given number of tasks.
func (b *TopologyBuilder) SetSpout(name string, f SpoutFactory, parallelism int) *SpoutDeclarer {
	d := &SpoutDeclarer{componentDecl: componentDecl{name: name, parallelism: parallelism, config: map[string]string{}}, factory: f}
	if f == nil {
		b.problems = append(b.problems, fmt.Sprintf("component %q: spout factory is nil", name))
	}
	b.add(name)
	if _, dup := b.spouts[name]; !dup {
		b.spouts[name] = d
	}
	return d
}

// SetBolt adds a bolt with the given number of tasks.
func (b *TopologyBuilder) SetBolt(name string, f BoltFactory, parallelism int) *BoltDeclarer {
	d := &BoltDeclarer{componentDecl: componentDecl{name: name, parallelism: parallelism, config: map[string]string{}}, factory: f, b: b}
	if f == nil {
		b.problems = append(b.problems, fmt.Sprintf("component %q: bolt factory is nil", name))
	}
	b.add(name)
	if _, dup := b.bolts[name]; !dup {
		b.bolts[name] = d
	}
	return d
}

func (b *TopologyBuilder) add(name string) {
	for _, n := range b.order {
		if n == name {
			b.problems = append(b.problems, fmt.Sprintf("component %q: duplicate component name", name))
			return
		}
	}
	b.order = append(b.order, name)
}

// Input subscribes the bolt to stream of component with the given grouping.
func (d *BoltDeclarer) Input(component, stream string, g GroupingSpec) *BoltDeclarer {
	in := topology.Input{Component: component, Stream: stream, Grouping: g.kind, Fields: g.fields, CustomName: g.name}
	if g.kind == topology.Custom {
		switch prev, dup := d.b.custom[g.name]; {
		case g.fn == nil:
			d.b.problems = append(d.b.problems, fmt.Sprintf("component %q input %s/%s: custom grouping %q has a nil function", d.name, component, stream, g.name))
		case dup && reflect.ValueOf(prev).Pointer() != reflect.ValueOf(g.fn).Pointer():
			d.b.problems = append(d.b.problems, fmt.Sprintf("component %q input %s/%s: custom grouping name %q is used for two different functions", d.name, component, stream, g.name))
		default:
			d.b.custom[g.name] = g.fn
		}
	}
	d.inputs = append(d.inputs, in)
	return d
}

// ShuffleGrouping subscribes to the default stream of component, shuffled.
func (d *BoltDeclarer) ShuffleGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, Shuffle())
}

// FieldsGrouping subscribes to the default stream of component, grouped by
// fields.
func (d *BoltDeclarer) FieldsGrouping(component string, fields ...string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, Fields(fields...))
}

// AllGrouping subscribes to the default stream of component; every task
// gets every tuple.
func (d *BoltDeclarer) AllGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, All())
}

// GlobalGrouping subscribes to the default stream of component; the lowest
// task gets every tuple.
func (d *BoltDeclarer) GlobalGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, Global())
}

// NoneGrouping subscribes to the default stream of component without a
// routing preference.
func (d *BoltDeclarer) NoneGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, NoGrouping())
}

// DirectGrouping subscribes to the direct stream of component.
func (d *BoltDeclarer) DirectGrouping(component, stream string) *BoltDeclarer {
	return d.Input(component, stream, Direct())
}

// LocalOrShuffleGrouping subscribes to the default stream of component,
// preferring tasks in the same container.
func (d *BoltDeclarer) LocalOrShuffleGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, LocalOrShuffle())
}

// CustomGrouping subscribes to the default stream of component with a
// user routing function.
func (d *BoltDeclarer) CustomGrouping(component, name string, fn CustomGroupingFunc) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, Custom(name, fn))
}

// SetConfig sets a component setting (see core/topology's Key constants).
func (d *BoltDeclarer) SetConfig(key, value string) *BoltDeclarer { d.set(key, value); return d }

// SetResources sets the cpu (cores), ram and disk (bytes) requested per
// task; zero leaves a value to the packing defaults.
func (d *BoltDeclarer) SetResources(cpu float64, ram, disk int64) *BoltDeclarer {
	setResources(&d.componentDecl, cpu, ram, disk)
	return d
}

// SetTickFrequency makes the runtime send the bolt's tasks a tick tuple at
// this interval.
func (d *BoltDeclarer) SetTickFrequency(every time.Duration) *BoltDeclarer {
	d.set(topology.KeyTickFrequency, every.String())
	return d
}

// SetStateless marks the bolt as keeping no state outside the
// checkpointed states (see NotCheckpointed): an effectively-once
// topology then accepts it although it declares that it cannot be
// checkpointed. A bolt that does keep such state would count the tuples
// replayed after a rollback twice.
func (d *BoltDeclarer) SetStateless() *BoltDeclarer {
	d.set(topology.KeyStateless, "true")
	return d
}

// SetStateless marks the spout as keeping no state outside the
// checkpointed states (see BoltDeclarer.SetStateless). A spout that
// cannot rewind to a checkpoint's position loses or repeats the tuples
// it emitted after it.
func (d *SpoutDeclarer) SetStateless() *SpoutDeclarer {
	d.set(topology.KeyStateless, "true")
	return d
}

// SetConfig sets a component setting.
func (d *SpoutDeclarer) SetConfig(key, value string) *SpoutDeclarer { d.set(key, value); return d }

// SetResources sets the cpu (cores), ram and disk (bytes) requested per
// task; zero leaves a value to the packing defaults.
func (d *SpoutDeclarer) SetResources(cpu float64, ram, disk int64) *SpoutDeclarer {
	setResources(&d.componentDecl, cpu, ram, disk)
	return d
}

// SetMaxSpoutPending bounds the spout's pending tuples per task in
// at-least-once mode.
func (d *SpoutDeclarer) SetMaxSpoutPending(n int) *SpoutDeclarer {
	d.set(topology.KeyMaxSpoutPending, strconv.Itoa(n))
	return d
}

// SetMessageTimeout sets how long the spout's tuples may stay pending.
func (d *SpoutDeclarer) SetMessageTimeout(timeout time.Duration) *SpoutDeclarer {
	d.set(topology.KeyMessageTimeout, timeout.String())
	return d
}

func setResources(c *componentDecl, cpu float64, ram, disk int64) {
	if cpu != 0 {
		c.set(topology.KeyCPU, strconv.FormatFloat(cpu, 'f', -1, 64))
	}
	if ram != 0 {
		c.set(topology.KeyRAM, strconv.FormatInt(ram, 10))
	}
	if disk != 0 {
		c.set(topology.KeyDisk, strconv.FormatInt(disk, 10))
	}
}

// SetConfig sets a topology setting (see core/topology's Key constants);
// keys not starting with "topology." are free-form user settings that
// components read with Context.Config.
func (b *TopologyBuilder) SetConfig(key, value string) *TopologyBuilder {
	b.config[key] = value
	return b
}

// SetContainers sets the number of containers holding instances.
func (b *TopologyBuilder) SetContainers(n int) *TopologyBuilder {
	return b.SetConfig(topology.KeyContainers, strconv.Itoa(n))
}

// SetDeliveryMode sets the delivery guarantee.
func (b *TopologyBuilder) SetDeliveryMode(m topology.DeliveryMode) *TopologyBuilder {
	return b.SetConfig(topology.KeyDeliveryMode, string(m))
}

// SetContainerMode chooses how containers run their instances: a process
// each (topology.ProcessPerInstance, the default) or all in the stream
// manager's process (topology.ProcessPerContainer).
func (b *TopologyBuilder) SetContainerMode(m topology.ContainerMode) *TopologyBuilder {
	return b.SetConfig(topology.KeyContainerMode, string(m))
}

// SetMaxSpoutPending bounds every spout task's pending tuples.
func (b *TopologyBuilder) SetMaxSpoutPending(n int) *TopologyBuilder {
	return b.SetConfig(topology.KeyMaxSpoutPending, strconv.Itoa(n))
}

// SetMessageTimeout sets how long spout tuples may stay pending.
func (b *TopologyBuilder) SetMessageTimeout(d time.Duration) *TopologyBuilder {
	return b.SetConfig(topology.KeyMessageTimeout, d.String())
}

// SetTickFrequency sends every bolt task a tick tuple at this interval.
func (b *TopologyBuilder) SetTickFrequency(d time.Duration) *TopologyBuilder {
	return b.SetConfig(topology.KeyTickFrequency, d.String())
}

// Topology is a built topology: the logical plan plus what only the
// topology binary has (component factories, custom grouping functions).
type Topology struct {
	Logical         *topology.Topology
	Spouts          map[string]SpoutFactory
	Bolts           map[string]BoltFactory
	CustomGroupings map[string]CustomGroupingFunc
	// Types holds the codecs of user value types.
	Types *tuple.Registry
}

// Build creates one instance of every component to collect its declared
// streams, then validates the topology. The error lists every problem.
func (b *TopologyBuilder) Build() (*Topology, error) {
	problems := append([]string(nil), b.problems...)
	t := &Topology{
		Logical:         &topology.Topology{Name: b.name, Config: cloneStrings(b.config)},
		Spouts:          map[string]SpoutFactory{},
		Bolts:           map[string]BoltFactory{},
		CustomGroupings: map[string]CustomGroupingFunc{},
		Types:           b.types,
	}
	for name, fn := range b.custom {
		t.CustomGroupings[name] = fn
	}
	for _, name := range b.order {
		var c topology.Component
		var create func() any
		if s, ok := b.spouts[name]; ok && s.factory != nil {
			c = topology.Component{Name: name, Kind: topology.Spout, Parallelism: s.parallelism, Config: cloneStrings(s.config)}
			create = func() any { return s.factory() }
			t.Spouts[name] = s.factory
		} else if bd, ok := b.bolts[name]; ok && bd.factory != nil {
			c = topology.Component{Name: name, Kind: topology.Bolt, Parallelism: bd.parallelism, Config: cloneStrings(bd.config), Inputs: bd.inputs}
			create = func() any { return bd.factory() }
			t.Bolts[name] = bd.factory
		} else {
			continue
		}
		outputs, why, err := describe(create)
		if err != nil {
			problems = append(problems, fmt.Sprintf("component %q: %v", name, err))
		}
		c.Outputs = outputs
		if why != "" {
			c.Config[topology.KeyNotCheckpointed] = why
		}
		t.Logical.Components = append(t.Logical.Components, c)
	}
	if err := topology.Validate(t.Logical); err != nil {
		problems = append(problems, err.(*topology.ValidationError).Problems...)
	}
	if len(problems) > 0 {
		return nil, &topology.ValidationError{Topology: b.name, Problems: problems}
	}
	return t, nil
}

// describe creates one component and collects its declared streams and
// why it cannot be checkpointed (NotCheckpointed); a panicking factory,
// DeclareOutputFields or NotCheckpointed becomes an error.
func describe(create func() any) (streams []topology.Stream, notCheckpointed string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while creating the component or declaring its outputs: %v", r)
		}
	}()
	comp := create()
	d := &recordingDeclarer{}
	comp.(interface{ DeclareOutputFields(OutputDeclarer) }).DeclareOutputFields(d)
	if nc, ok := comp.(NotCheckpointed); ok {
		notCheckpointed = nc.NotCheckpointed()
	}
	return d.streams, notCheckpointed, nil
}

type recordingDeclarer struct{ streams []topology.Stream }

func (d *recordingDeclarer) Declare(fields ...string) {
	d.DeclareStream(topology.DefaultStream, fields...)
}

func (d *recordingDeclarer) DeclareStream(stream string, fields ...string) {
	d.streams = append(d.streams, topology.Stream{ID: stream, Fields: append([]string(nil), fields...)})
}

func (d *recordingDeclarer) DeclareDirectStream(stream string, fields ...string) {
	d.streams = append(d.streams, topology.Stream{ID: stream, Fields: append([]string(nil), fields...), Direct: true})
}

func cloneStrings(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
