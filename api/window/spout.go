package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// SpoutWatermarks makes a spout a watermark source (Builder.SetSpout):
// the timestamps of the tuples it emits feed a generator whose watermark
// the spout emits on WatermarkStream to every downstream task.
type SpoutWatermarks struct {
	// Timestamp returns the event time of a tuple the spout emits
	// (required).
	Timestamp func(stream string, values api.Values) time.Time
	// Generator makes the spout task's generator (default Ascending).
	Generator func() Generator
	// Emission is when the watermark is emitted (default Periodic).
	Emission Emission
	// Interval is the period of Periodic emission (default 200ms).
	Interval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (w *SpoutWatermarks) validate() error {
	if w.Timestamp == nil {
		return errors.New("window: SpoutWatermarks.Timestamp is nil")
	}
	return nil
}

func (w *SpoutWatermarks) defaults() {
	if w.Generator == nil {
		w.Generator = Ascending
	}
	if w.Interval <= 0 {
		w.Interval = 200 * time.Millisecond
	}
	if w.Now == nil {
		w.Now = time.Now
	}
}

// WatermarkSpout wraps a spout to emit watermarks (see SpoutWatermarks).
// Periodic watermarks are emitted from NextTuple, so a spout the runtime
// stops calling (deactivated, or at max spout pending) emits none; its
// downstream tasks then mark it idle after their idle timeout.
type WatermarkSpout struct {
	api.Spout
	cfg      SpoutWatermarks
	gen      Generator
	out      api.SpoutCollector
	last     int64
	lastEmit time.Time
	send     bool
	state    *api.State[string, spoutRecord]
}

// NewWatermarkSpout wraps s.
func NewWatermarkSpout(s api.Spout, cfg SpoutWatermarks) (*WatermarkSpout, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	return &WatermarkSpout{Spout: s, cfg: cfg, last: NoWatermark}, nil
}

// Open implements api.Spout.
func (s *WatermarkSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.gen = s.cfg.Generator()
	s.out = out
	s.lastEmit = s.cfg.Now()
	s.send = subscribed(ctx, ctx.ComponentName())
	return s.Spout.Open(ctx, &stampingCollector{SpoutCollector: out, s: s})
}

// NextTuple implements api.Spout.
func (s *WatermarkSpout) NextTuple() {
	s.Spout.NextTuple()
	if s.cfg.Emission == Periodic {
		if now := s.cfg.Now(); now.Sub(s.lastEmit) >= s.cfg.Interval {
			s.lastEmit = now
			s.emitWatermark()
		}
	}
}

func (s *WatermarkSpout) emitWatermark() {
	if wm := s.gen.Watermark(); wm > s.last {
		s.last = wm
		if !s.send {
			return
		}
		s.out.EmitStream(WatermarkStream, api.Values{wm}, nil)
	}
}

func (s *WatermarkSpout) observe(stream string, values api.Values) {
	s.gen.OnEvent(s.cfg.Timestamp(stream, values).UnixMilli())
	if s.cfg.Emission == PerRecord {
		s.emitWatermark()
	}
}

// Watermark is the last watermark the spout emitted.
func (s *WatermarkSpout) Watermark() int64 { return s.last }

// SpoutState is the state in which a watermark spout task keeps its
// generator's progress and the last watermark it emitted, next to the
// states of the spout it wraps.
const SpoutState = "window.spout.watermark"

// spoutRecord is the checkpointed part of a WatermarkSpout.
type spoutRecord struct {
	Generator []byte
	Last      int64
}

// InitState implements api.Stateful: the generator and the last
// watermark are the checkpoint's, and the wrapped spout, when it is
// api.Stateful, gets the states too (so a Kafka spout rewinds to the
// checkpoint's offsets and the watermarks after the replayed records are
// the same as before the rollback).
func (s *WatermarkSpout) InitState(states *api.States) error {
	st, err := api.NewState[string, spoutRecord](states, SpoutState)
	if err != nil {
		return fmt.Errorf("watermark spout: %w", err)
	}
	gen, last := s.cfg.Generator(), NoWatermark
	if r, ok := st.Get(""); ok {
		if err := gen.UnmarshalBinary(r.Generator); err != nil {
			return fmt.Errorf("watermark spout: restore the generator: %w", err)
		}
		last = r.Last
	}
	s.state, s.gen, s.last = st, gen, last
	if inner, ok := s.Spout.(api.Stateful); ok {
		return inner.InitState(states)
	}
	return nil
}

// PreSave implements api.Stateful.
func (s *WatermarkSpout) PreSave(checkpoint int64) error {
	if s.state == nil {
		return errors.New("watermark spout: PreSave before InitState")
	}
	enc, err := s.gen.MarshalBinary()
	if err != nil {
		return fmt.Errorf("watermark spout: save the generator: %w", err)
	}
	s.state.Put("", spoutRecord{Generator: enc, Last: s.last})
	if inner, ok := s.Spout.(api.Stateful); ok {
		return inner.PreSave(checkpoint)
	}
	return nil
}

// NotCheckpointed passes the wrapped spout's answer on
// (api.NotCheckpointed): a watermark spout is as checkpointable as the
// spout it wraps.
func (s *WatermarkSpout) NotCheckpointed() string {
	if nc, ok := s.Spout.(api.NotCheckpointed); ok {
		return nc.NotCheckpointed()
	}
	return ""
}

// CheckpointComplete passes a completed checkpoint to the wrapped spout
// when it listens (api.CheckpointListener).
func (s *WatermarkSpout) CheckpointComplete(checkpoint int64) {
	if l, ok := s.Spout.(api.CheckpointListener); ok {
		l.CheckpointComplete(checkpoint)
	}
}

// DeclareOutputFields implements api.Spout.
func (s *WatermarkSpout) DeclareOutputFields(d api.OutputDeclarer) {
	s.Spout.DeclareOutputFields(d)
	d.DeclareStream(WatermarkStream, WatermarkField)
}

type stampingCollector struct {
	api.SpoutCollector
	s *WatermarkSpout
}

func (c *stampingCollector) Emit(values api.Values, msgID any) {
	c.SpoutCollector.Emit(values, msgID)
	c.s.observe(topology.DefaultStream, values)
}

func (c *stampingCollector) EmitStream(stream string, values api.Values, msgID any) {
	c.SpoutCollector.EmitStream(stream, values, msgID)
	c.s.observe(stream, values)
}

func (c *stampingCollector) EmitDirect(task int, stream string, values api.Values, msgID any) {
	c.SpoutCollector.EmitDirect(task, stream, values, msgID)
	c.s.observe(stream, values)
}

// Reconfigure passes live user settings to the inner spout when it takes
// them (api.Reconfigurable).
func (s *WatermarkSpout) Reconfigure(changed map[string]string) {
	if r, ok := s.Spout.(api.Reconfigurable); ok {
		r.Reconfigure(changed)
	}
}
