package window

import (
	"errors"
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

// NotCheckpointed implements api.NotCheckpointed: the watermark is not
// checkpointed, and the wrapper does not pass the wrapped spout's
// checkpointed state through.
func (s *WatermarkSpout) NotCheckpointed() string {
	return "a watermark spout: its watermark is not in checkpointed state yet"
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
