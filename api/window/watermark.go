package window

import (
	"encoding"
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"time"

	"github.com/egret-stream/egret/core/topology"
)

// NoWatermark is the watermark before any: no time has passed.
const NoWatermark int64 = math.MinInt64

// WatermarkStream is the stream on which watermarks travel in-band: every
// task of a watermark-aware component (a spout wrapped by
// Builder.SetSpout, a bolt added with Builder.SetBolt or SetBolt) emits
// its watermark on it, and every downstream task of such a component
// subscribes to it with an all grouping, which the Builder declares. Its
// one field is the watermark in Unix milliseconds (int64). Stream names
// must start with a letter, so it cannot be "__watermark".
const WatermarkStream = "egret_watermark"

// WatermarkField is the field of WatermarkStream.
const WatermarkField = "watermark"

// Generator derives a watermark from the timestamps of elements. A
// watermark W promises that no more elements with a timestamp <= W will
// come (elements that still do are late).
//
// Under effectively-once delivery a generator's progress is checkpointed
// with its task: MarshalBinary encodes it and UnmarshalBinary, called on a
// new generator, restores it, so that a rollback replays the same
// watermarks after the same elements.
type Generator interface {
	// OnEvent observes the timestamp (Unix ms) of an element.
	OnEvent(ts int64)
	// Watermark returns the current watermark (NoWatermark before any).
	Watermark() int64
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Emission says when a spout emits the watermark of its generator.
type Emission uint8

const (
	// Periodic emits the watermark every interval when it advanced.
	Periodic Emission = iota
	// PerRecord emits the watermark after every element that advanced it.
	PerRecord
)

// BoundedOutOfOrderness returns a generator for elements at most maxDelay
// out of order: the watermark is the largest timestamp seen minus
// maxDelay minus 1 ms.
func BoundedOutOfOrderness(maxDelay time.Duration) Generator {
	return &bounded{delay: maxDelay.Milliseconds(), max: NoWatermark}
}

// Ascending is BoundedOutOfOrderness(0): for timestamps that never go
// back.
func Ascending() Generator { return BoundedOutOfOrderness(0) }

type bounded struct {
	delay, max int64
}

func (b *bounded) OnEvent(ts int64) {
	if ts > b.max {
		b.max = ts
	}
}

// MarshalBinary implements Generator: the largest timestamp seen.
func (b *bounded) MarshalBinary() ([]byte, error) { return binary.AppendVarint(nil, b.max), nil }

// UnmarshalBinary implements Generator.
func (b *bounded) UnmarshalBinary(p []byte) error {
	v, n := binary.Varint(p)
	if n <= 0 || n != len(p) {
		return errors.New("window: a bounded out-of-orderness generator's state is not one varint")
	}
	b.max = v
	return nil
}

func (b *bounded) Watermark() int64 {
	if b.max == NoWatermark {
		return NoWatermark
	}
	return b.max - b.delay - 1
}

// Tracker combines the watermarks of a task's inputs: the task's
// watermark is the minimum over its input tasks, leaving out inputs that
// sent nothing (no data, no watermark) for the idle timeout, and it never
// goes back. An idle input becomes active again with its next message;
// its elements behind the combined watermark are then late.
//
// A Tracker is not safe for concurrent use (a task uses it from its one
// goroutine).
type Tracker struct {
	inputs map[int]*trackedInput
	order  []int
	idle   time.Duration
	wm     int64
	marks  int64 // idle transitions, for metrics
}

type trackedInput struct {
	wm   int64
	last time.Time
	idle bool
}

// NewTracker tracks the given input tasks from now. An idle timeout of 0
// never marks an input idle.
func NewTracker(tasks []int, idle time.Duration, now time.Time) *Tracker {
	t := &Tracker{inputs: map[int]*trackedInput{}, idle: idle, wm: NoWatermark}
	for _, id := range tasks {
		t.add(id, now)
	}
	return t
}

func (t *Tracker) add(task int, now time.Time) *trackedInput {
	in := &trackedInput{wm: NoWatermark, last: now}
	t.inputs[task] = in
	t.order = append(t.order, task)
	sort.Ints(t.order)
	return in
}

// Observe records a message (data or watermark) from task: it is active.
// An unknown task is added.
func (t *Tracker) Observe(task int, now time.Time) {
	in, ok := t.inputs[task]
	if !ok {
		in = t.add(task, now)
	}
	in.last = now
	in.idle = false
}

// Update records task's watermark (it never goes back per input).
func (t *Tracker) Update(task int, wm int64, now time.Time) {
	t.Observe(task, now)
	if in := t.inputs[task]; wm > in.wm {
		in.wm = wm
	}
}

// Advance marks inputs silent for the idle timeout as idle and returns
// the combined watermark and whether it moved forward since the last
// call. With every input idle the watermark stays where it was.
func (t *Tracker) Advance(now time.Time) (wm int64, advanced bool) {
	lowest, any := int64(math.MaxInt64), false
	for _, id := range t.order {
		in := t.inputs[id]
		if t.idle > 0 && !in.idle && now.Sub(in.last) >= t.idle {
			in.idle = true
			t.marks++
		}
		if in.idle {
			continue
		}
		any = true
		if in.wm < lowest {
			lowest = in.wm
		}
	}
	if any && lowest > t.wm {
		t.wm = lowest
		return t.wm, true
	}
	return t.wm, false
}

// Watermarks returns the watermark of every input task and the combined
// watermark: what a checkpoint keeps of the tracker.
func (t *Tracker) Watermarks() (inputs map[int]int64, combined int64) {
	inputs = make(map[int]int64, len(t.inputs))
	for id, in := range t.inputs {
		inputs[id] = in.wm
	}
	return inputs, t.wm
}

// Restore sets the watermarks of a checkpoint (see Watermarks): every
// input is active from now, those the checkpoint does not name start
// with no watermark.
func (t *Tracker) Restore(inputs map[int]int64, combined int64, now time.Time) {
	for _, in := range t.inputs {
		in.wm, in.last, in.idle = NoWatermark, now, false
	}
	for id, wm := range inputs {
		in, ok := t.inputs[id]
		if !ok {
			in = t.add(id, now)
		}
		in.wm = wm
	}
	t.wm = combined
}

// Watermark returns the combined watermark of the last Advance.
func (t *Tracker) Watermark() int64 { return t.wm }

// Idle returns the input tasks currently marked idle.
func (t *Tracker) Idle() []int {
	var out []int
	for _, id := range t.order {
		if t.inputs[id].idle {
			out = append(out, id)
		}
	}
	return out
}

// IdleMarks counts the times an input was marked idle.
func (t *Tracker) IdleMarks() int64 { return t.marks }

// subscribed reports whether any component of topo subscribes to
// component's WatermarkStream: a task emits watermarks only then.
func subscribed(ctx interface {
	Topology() *topology.Topology
}, component string) bool {
	topo := ctx.Topology()
	if topo == nil {
		return true
	}
	for _, c := range topo.Components {
		for _, in := range c.Inputs {
			if in.Component == component && in.Stream == WatermarkStream {
				return true
			}
		}
	}
	return false
}
