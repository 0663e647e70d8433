package window

import (
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
