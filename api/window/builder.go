package window

import (
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// Builder adds watermark-aware components to a TopologyBuilder and
// declares the watermark subscriptions: whenever a bolt added through it
// subscribes to a component that emits watermarks (a spout added with
// SetSpout, a bolt added with SetBolt or the generic SetBolt), it is also
// subscribed to that component's WatermarkStream with an all grouping, so
// every upstream task's watermark reaches every downstream task. Declare
// a component before the bolts that subscribe to it.
type Builder struct {
	tb      *api.TopologyBuilder
	sources map[string]bool
}

// NewBuilder wraps tb.
func NewBuilder(tb *api.TopologyBuilder) *Builder {
	return &Builder{tb: tb, sources: map[string]bool{}}
}

// Topology returns the wrapped builder (for plain components and
// settings).
func (b *Builder) Topology() *api.TopologyBuilder { return b.tb }

// EmitsWatermarks reports whether component was added as a watermark
// source.
func (b *Builder) EmitsWatermarks(component string) bool { return b.sources[component] }

// SetSpout adds a spout that emits watermarks derived from the timestamps
// of its tuples.
func (b *Builder) SetSpout(name string, f api.SpoutFactory, parallelism int, w SpoutWatermarks) *api.SpoutDeclarer {
	b.sources[name] = true
	err := w.validate()
	return b.tb.SetSpout(name, func() api.Spout {
		if err != nil {
			panic(err) // reported by Build as a problem of the component
		}
		s, _ := NewWatermarkSpout(f(), w)
		return s
	}, parallelism)
}

// SetBolt adds an ordinary bolt that forwards the watermarks of its
// inputs (see ForwardingBolt); idle is its idle timeout (0: 10s).
func (b *Builder) SetBolt(name string, f api.BoltFactory, parallelism int, idle time.Duration) *BoltDeclarer {
	b.sources[name] = true
	d := b.tb.SetBolt(name, func() api.Bolt { return NewForwardingBolt(f(), idle, nil) }, parallelism)
	return &BoltDeclarer{BoltDeclarer: d, b: b, wm: map[string]bool{}}
}

// SetBolt adds a window bolt built from spec and sets its tick frequency
// (Spec.TickEvery). An invalid spec is reported by Build.
func SetBolt[K comparable, IN, ACC, OUT any](b *Builder, name string, parallelism int, spec Spec[K, IN, ACC, OUT]) *BoltDeclarer {
	b.sources[name] = true
	err := spec.validate()
	every := spec.TickEvery
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	d := b.tb.SetBolt(name, func() api.Bolt {
		if err != nil {
			panic(err) // reported by Build as a problem of the component
		}
		wb, _ := NewBolt(spec)
		return wb
	}, parallelism).SetTickFrequency(every)
	return &BoltDeclarer{BoltDeclarer: d, b: b, wm: map[string]bool{}}
}

// BoltDeclarer is an api.BoltDeclarer whose subscriptions also subscribe
// to the watermarks of watermark-emitting inputs.
type BoltDeclarer struct {
	*api.BoltDeclarer
	b  *Builder
	wm map[string]bool
}

// Input subscribes to stream of component (and to its watermarks).
func (d *BoltDeclarer) Input(component, stream string, g api.GroupingSpec) *BoltDeclarer {
	d.BoltDeclarer.Input(component, stream, g)
	if d.b.sources[component] && !d.wm[component] {
		d.wm[component] = true
		d.BoltDeclarer.Input(component, WatermarkStream, api.All())
	}
	return d
}

// ShuffleGrouping subscribes to component's default stream, shuffled.
func (d *BoltDeclarer) ShuffleGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, api.Shuffle())
}

// FieldsGrouping subscribes to component's default stream by fields.
func (d *BoltDeclarer) FieldsGrouping(component string, fields ...string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, api.Fields(fields...))
}

// GlobalGrouping subscribes to component's default stream; one task gets
// every tuple.
func (d *BoltDeclarer) GlobalGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, api.Global())
}

// AllGrouping subscribes to component's default stream; every task gets
// every tuple.
func (d *BoltDeclarer) AllGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, api.All())
}

// LocalOrShuffleGrouping subscribes to component's default stream,
// preferring local tasks.
func (d *BoltDeclarer) LocalOrShuffleGrouping(component string) *BoltDeclarer {
	return d.Input(component, topology.DefaultStream, api.LocalOrShuffle())
}
