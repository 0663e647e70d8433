package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/egret-stream/egret/api"
)

// ForwardingBolt wraps an ordinary bolt so that watermarks pass through
// it: it tracks the watermarks of its inputs (minimum over input tasks,
// idle inputs left out) and emits the combined watermark on
// WatermarkStream whenever it advances, after the inner bolt has
// processed the tuple that moved it. An inner bolt that emits later than
// in Execute (on ticks, say) may emit results behind the watermark it
// forwarded; downstream window bolts treat those as late.
type ForwardingBolt struct {
	api.Bolt
	idle    time.Duration
	now     func() time.Time
	tracker *Tracker
	out     api.BoltCollector
	last    int64
	send    bool
	state   *api.State[string, forwardRecord]
}

// NewForwardingBolt wraps b; inputs silent for idle are marked idle (0:
// 10s, negative: never).
func NewForwardingBolt(b api.Bolt, idle time.Duration, now func() time.Time) *ForwardingBolt {
	if idle == 0 {
		idle = 10 * time.Second
	}
	if idle < 0 {
		idle = 0
	}
	if now == nil {
		now = time.Now
	}
	return &ForwardingBolt{Bolt: b, idle: idle, now: now, last: NoWatermark}
}

// Prepare implements api.Bolt.
func (f *ForwardingBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	f.out = out
	var tasks []int
	if topo := ctx.Topology(); topo != nil {
		if c, ok := topo.Component(ctx.ComponentName()); ok {
			for _, in := range c.Inputs {
				if in.Stream == WatermarkStream {
					tasks = append(tasks, ctx.ComponentTasks(in.Component)...)
				}
			}
		}
	}
	f.tracker = NewTracker(tasks, f.idle, f.now())
	f.send = subscribed(ctx, ctx.ComponentName())
	return f.Bolt.Prepare(ctx, out)
}

// Execute implements api.Bolt.
func (f *ForwardingBolt) Execute(t api.Tuple) {
	now := f.now()
	if t.SourceStream() == WatermarkStream && !t.IsTick() {
		f.tracker.Update(t.SourceTask(), t.Int64(0), now)
		f.out.Ack(t)
	} else {
		if !t.IsTick() {
			f.tracker.Observe(t.SourceTask(), now)
		}
		f.Bolt.Execute(t)
	}
	if wm, moved := f.tracker.Advance(now); moved && wm > f.last && f.send {
		f.last = wm
		f.out.EmitStream(WatermarkStream, api.Values{wm})
	}
}

// ForwardState is the state in which a forwarding bolt task keeps its
// inputs' watermarks, next to the states of the bolt it wraps.
const ForwardState = "window.forward.watermark"

// forwardRecord is the checkpointed part of a ForwardingBolt.
type forwardRecord struct {
	Inputs         map[int]int64
	Combined, Last int64
}

// InitState implements api.Stateful: the inputs' watermarks are the
// checkpoint's, and the wrapped bolt, when it is api.Stateful, gets the
// states too.
func (f *ForwardingBolt) InitState(states *api.States) error {
	// Watermarks are broadcast: after a rescale every new task takes an
	// old task's.
	st, err := api.NewState[string, forwardRecord](states, ForwardState, api.WithRestoreMode(api.UnionRestore))
	if err != nil {
		return fmt.Errorf("forwarding bolt: %w", err)
	}
	r, ok := st.Get("")
	if !ok {
		r = forwardRecord{Combined: NoWatermark, Last: NoWatermark}
	}
	f.state = st
	f.tracker.Restore(r.Inputs, r.Combined, f.now())
	f.last = r.Last
	if inner, ok := f.Bolt.(api.Stateful); ok {
		return inner.InitState(states)
	}
	return nil
}

// PreSave implements api.Stateful.
func (f *ForwardingBolt) PreSave(checkpoint int64) error {
	if f.state == nil {
		return errors.New("forwarding bolt: PreSave before InitState")
	}
	r := forwardRecord{Last: f.last}
	r.Inputs, r.Combined = f.tracker.Watermarks()
	f.state.Put("", r)
	if inner, ok := f.Bolt.(api.Stateful); ok {
		return inner.PreSave(checkpoint)
	}
	return nil
}

// CheckpointComplete passes a completed checkpoint to the wrapped bolt
// when it listens (api.CheckpointListener).
func (f *ForwardingBolt) CheckpointComplete(checkpoint int64) {
	if l, ok := f.Bolt.(api.CheckpointListener); ok {
		l.CheckpointComplete(checkpoint)
	}
}

// Sync passes a drain or barrier to the wrapped bolt when it processes
// tuples outside Execute (api.Syncer).
func (f *ForwardingBolt) Sync() {
	if s, ok := f.Bolt.(api.Syncer); ok {
		s.Sync()
	}
}

// NotCheckpointed passes the wrapped bolt's answer on
// (api.NotCheckpointed): a forwarding bolt is as checkpointable as the
// bolt it wraps.
func (f *ForwardingBolt) NotCheckpointed() string {
	if nc, ok := f.Bolt.(api.NotCheckpointed); ok {
		return nc.NotCheckpointed()
	}
	return ""
}

// DeclareOutputFields implements api.Bolt.
func (f *ForwardingBolt) DeclareOutputFields(d api.OutputDeclarer) {
	f.Bolt.DeclareOutputFields(d)
	d.DeclareStream(WatermarkStream, WatermarkField)
}

// Reconfigure passes live user settings to the inner bolt when it takes
// them (api.Reconfigurable).
func (f *ForwardingBolt) Reconfigure(changed map[string]string) {
	if r, ok := f.Bolt.(api.Reconfigurable); ok {
		r.Reconfigure(changed)
	}
}

// Wake and Pump pass the inner bolt's own work through (api.Pumper); for
// an inner bolt without any, Wake is a channel that never fires.
func (f *ForwardingBolt) Wake() <-chan struct{} {
	if p, ok := f.Bolt.(api.Pumper); ok {
		return p.Wake()
	}
	return nil
}

// Pump implements api.Pumper.
func (f *ForwardingBolt) Pump() {
	if p, ok := f.Bolt.(api.Pumper); ok {
		p.Pump()
	}
}
