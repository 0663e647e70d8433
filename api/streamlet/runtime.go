package streamlet

import (
	"errors"
	"fmt"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
)

// watermarkEvery is how often a component that generates watermarks
// sends its latest one (at most; and at least, while it advances).
const watermarkEvery = 20 * time.Millisecond

// watermarks generates a component's watermarks from the event times of
// the elements it emits and sends them on window.WatermarkStream, at most
// every watermarkEvery (flush sends a pending one).
type watermarks struct {
	gen      window.Generator
	delay    time.Duration
	stamp    func(any) time.Time
	sent     int64
	lastSent time.Time
	send     func(wm int64)
	state    *api.State[string, watermarkRecord]
}

func newWatermarks(o output, send func(int64)) *watermarks {
	if o.stamp == nil {
		return nil
	}
	return &watermarks{gen: window.BoundedOutOfOrderness(o.delay), delay: o.delay, stamp: o.stamp, sent: window.NoWatermark, send: send}
}

// WatermarkState is the state in which a component that generates a
// window's watermarks keeps its generator's progress and the last
// watermark it sent.
const WatermarkState = "streamlet.watermark"

type watermarkRecord struct {
	Generator []byte
	Sent      int64
}

// restore binds the state and takes the generator and the last sent
// watermark from it (a new generator when it is empty).
func (w *watermarks) restore(states *api.States) error {
	st, err := api.NewState[string, watermarkRecord](states, WatermarkState)
	if err != nil {
		return err
	}
	gen, sent := window.BoundedOutOfOrderness(w.delay), window.NoWatermark
	if r, ok := st.Get(""); ok {
		if err := gen.UnmarshalBinary(r.Generator); err != nil {
			return fmt.Errorf("restore the watermark generator: %w", err)
		}
		sent = r.Sent
	}
	w.state, w.gen, w.sent = st, gen, sent
	return nil
}

func (w *watermarks) save() error {
	if w.state == nil {
		return errors.New("PreSave before InitState")
	}
	enc, err := w.gen.MarshalBinary()
	if err != nil {
		return fmt.Errorf("save the watermark generator: %w", err)
	}
	w.state.Put("", watermarkRecord{Generator: enc, Sent: w.sent})
	return nil
}

// observe takes the event time of an emitted element (a keyValue).
func (w *watermarks) observe(v any) {
	w.gen.OnEvent(w.stamp(v.(keyValue).value).UnixMilli())
	w.flush(time.Now())
}

func (w *watermarks) flush(now time.Time) {
	if wm := w.gen.Watermark(); wm > w.sent && now.Sub(w.lastSent) >= watermarkEvery {
		w.sent, w.lastSent = wm, now
		w.send(wm)
	}
}

// sourceSpout runs a source stage and the stages fused after it.
type sourceSpout struct {
	api.BaseSpout
	members []*node
	out     output
	next    func() (any, bool)
	push    func(any)
	cleanup func()
	wm      *watermarks
	emitted bool
}

// maxPerNextTuple bounds the elements one NextTuple call takes from the
// supplier while the fused stages emit nothing (a filter dropping them):
// the runtime backs off a spout call that emits nothing.
const maxPerNextTuple = 4096

func (s *sourceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	sup, err := s.members[0].newSource(ctx)
	if err != nil {
		return err
	}
	last := func(any) {}
	s.wm = newWatermarks(s.out, func(wm int64) { out.EmitStream(window.WatermarkStream, api.Values{wm}, nil) })
	if s.out.encode != nil {
		enc, wm := s.out.encode, s.wm
		last = func(v any) {
			out.Emit(enc(v), nil)
			s.emitted = true
			if wm != nil {
				wm.observe(v)
			}
		}
	}
	push, cleanup, err := chain(ctx, s.members, last)
	if err != nil {
		return err
	}
	s.next, s.push, s.cleanup = sup, push, cleanup
	return nil
}

func (s *sourceSpout) NextTuple() {
	s.emitted = false
	for i := 0; i < maxPerNextTuple && !s.emitted; i++ {
		v, ok := s.next()
		if !ok {
			break
		}
		s.push(v)
	}
	if s.wm != nil {
		s.wm.flush(time.Now())
	}
}

func (s *sourceSpout) Close() {
	if s.cleanup != nil {
		s.cleanup()
	}
}

// NotCheckpointed implements api.NotCheckpointed: a Supplier keeps its
// position itself, so a rollback cannot rewind it.
func (s *sourceSpout) NotCheckpointed() string {
	return "a streamlet source: its supplier's position is not checkpointed"
}

func (s *sourceSpout) DeclareOutputFields(d api.OutputDeclarer) { declare(d, s.out) }

func declare(d api.OutputDeclarer, o output) {
	if o.fields != nil {
		d.Declare(o.fields...)
	}
	if o.stamp != nil {
		d.DeclareStream(window.WatermarkStream, window.WatermarkField)
	}
}

// chainBolt runs a component of fused op stages: each received element
// goes through every stage, and what the last emits is anchored to the
// received tuple.
type chainBolt struct {
	api.BaseBolt
	members  []*node
	out      output
	decoders map[string]inputDecoder
	collect  api.BoltCollector
	push     func(any)
	cleanup  func()
	cur      api.Tuple
	wm       *watermarks
}

func (b *chainBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.collect = out
	last := func(any) {}
	b.wm = newWatermarks(b.out, func(wm int64) { out.EmitStream(window.WatermarkStream, api.Values{wm}) })
	if b.out.encode != nil {
		enc := b.out.encode
		last = func(v any) {
			out.Emit(enc(v), b.cur)
			if b.wm != nil {
				b.wm.observe(v)
			}
		}
	}
	push, cleanup, err := chain(ctx, b.members, last)
	if err != nil {
		return err
	}
	b.push, b.cleanup = push, cleanup
	return nil
}

func (b *chainBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		if b.wm != nil {
			b.wm.flush(time.Now())
		}
		return
	}
	if dec := b.decoders[t.SourceComponent()]; dec != nil {
		b.cur = t
		dec(t.Values(), b.push)
		b.cur = nil
	}
	b.collect.Ack(t)
}

// InitState implements api.Stateful: the watermark generator of a
// component that feeds an event-time window is checkpointed, so a
// rollback sends the same watermarks after the same elements.
func (b *chainBolt) InitState(states *api.States) error {
	if b.wm == nil {
		return nil
	}
	return b.wm.restore(states)
}

// PreSave implements api.Stateful.
func (b *chainBolt) PreSave(int64) error {
	if b.wm == nil {
		return nil
	}
	return b.wm.save()
}

// NotCheckpointed implements api.NotCheckpointed: a Transformer keeps its
// state itself, so a rollback cannot restore it.
func (b *chainBolt) NotCheckpointed() string {
	for _, m := range b.members {
		if m.op == "transform" {
			return fmt.Sprintf("a streamlet Transform stage (%s): its Transformer's state is not checkpointed", m.label())
		}
	}
	return ""
}

func (b *chainBolt) Cleanup() {
	if b.cleanup != nil {
		b.cleanup()
	}
}

func (b *chainBolt) DeclareOutputFields(d api.OutputDeclarer) { declare(d, b.out) }
