package source

import (
	"fmt"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/examples/nexmark/generator"
)

// Configuration keys the spout reads (topology or component settings).
const (
	// KeyEvents is the number of events of the run, all tasks together
	// (default 0: unbounded).
	KeyEvents = "nexmark.events"
	// KeySeed is the generator's seed (default 1).
	KeySeed = "nexmark.seed"
	// KeyEventRate is the event-time rate, events per second of event time
	// (default 10,000,000, as the nexmark project's 100 M suite).
	KeyEventRate = "nexmark.event.rate"
	// KeyRate is the emission rate of all tasks together, events per
	// second of wall-clock time (default 0: as fast as the topology takes
	// them).
	KeyRate = "nexmark.rate"
	// KeyOutOfOrder is the generator's OutOfOrderGroupSize (default 1).
	KeyOutOfOrder = "nexmark.out.of.order.group"
)

// Settings are the spout's settings.
type Settings struct {
	Events int64 // 0: unbounded
	Rate   float64
	Gen    generator.Config
}

// Config returns the topology settings that make spouts run with s.
func (s Settings) Config() map[string]string {
	return map[string]string{
		KeyEvents:     strconv.FormatInt(s.Events, 10),
		KeySeed:       strconv.FormatUint(s.Gen.Seed, 10),
		KeyEventRate:  strconv.FormatFloat(s.Gen.Rate, 'f', -1, 64),
		KeyRate:       strconv.FormatFloat(s.Rate, 'f', -1, 64),
		KeyOutOfOrder: strconv.FormatInt(s.Gen.OutOfOrderGroupSize, 10),
	}
}

// ReadSettings reads the settings from a component's configuration:
// absent keys take their defaults, malformed ones are an error naming
// the key.
func ReadSettings(get func(key string) string) (Settings, error) {
	s := Settings{Gen: generator.Default()}
	parse := func(key string, set func(string) error) error {
		v := get(key)
		if v == "" {
			return nil
		}
		if err := set(v); err != nil {
			return fmt.Errorf("setting %s=%q: %w", key, v, err)
		}
		return nil
	}
	integer := func(dst *int64) func(string) error {
		return func(v string) (err error) { *dst, err = strconv.ParseInt(v, 10, 64); return err }
	}
	float := func(dst *float64) func(string) error {
		return func(v string) (err error) { *dst, err = strconv.ParseFloat(v, 64); return err }
	}
	for _, p := range []struct {
		key string
		set func(string) error
	}{
		{KeyEvents, integer(&s.Events)},
		{KeySeed, func(v string) (err error) { s.Gen.Seed, err = strconv.ParseUint(v, 10, 64); return err }},
		{KeyEventRate, float(&s.Gen.Rate)},
		{KeyRate, float(&s.Rate)},
		{KeyOutOfOrder, integer(&s.Gen.OutOfOrderGroupSize)},
	} {
		if err := parse(p.key, p.set); err != nil {
			return s, err
		}
	}
	if s.Events < 0 || s.Rate < 0 {
		return s, fmt.Errorf("settings %s=%d and %s=%v must not be negative", KeyEvents, s.Events, KeyRate, s.Rate)
	}
	return s, s.Gen.Validate()
}

// burst is the most events one NextTuple emits.
const burst = 256

// Spout emits the Nexmark events of its task's split. Make one per task
// with NewSpout.
type Spout struct {
	out      api.SpoutCollector
	gen      *generator.Generator
	split    generator.Split
	next     int64 // index in the split of the next new event
	rate     float64
	start    time.Time
	tracked  bool
	replay   []int64 // positions to emit again (failed)
	ended    bool
	vals     api.Values
	position *api.State[string, int64]
	emitted  *api.Counter
}

var (
	_ api.Spout    = (*Spout)(nil)
	_ api.Stateful = (*Spout)(nil)
)

// NewSpout returns a spout; its settings come from the configuration in
// Open.
func NewSpout() api.Spout { return &Spout{} }

// Open implements api.Spout.
func (s *Spout) Open(ctx api.Context, out api.SpoutCollector) error {
	st, err := ReadSettings(ctx.Config)
	if err != nil {
		return err
	}
	if s.gen, err = generator.New(st.Gen); err != nil {
		return err
	}
	tasks := len(ctx.ComponentTasks(ctx.ComponentName()))
	total := st.Events
	if total == 0 {
		total = -1
	}
	s.split = generator.SplitOf(ctx.TaskIndex(), tasks, total)
	s.rate = st.Rate / float64(tasks)
	s.out = out
	s.tracked = ctx.Topology().DeliveryMode() == topology.AtLeastOnce
	s.emitted = ctx.Counter("nexmark.events")
	return nil
}

// InitState implements api.Stateful: the position is the task's state.
func (s *Spout) InitState(states *api.States) error {
	var err error
	if s.position, err = api.NewState[string, int64](states, "position"); err != nil {
		return err
	}
	s.next, _ = s.position.Get("next")
	s.ended, s.replay = false, nil
	return nil
}

// PreSave implements api.Stateful.
func (s *Spout) PreSave(int64) error {
	s.position.Put("next", s.next)
	return nil
}

// NextTuple implements api.Spout.
func (s *Spout) NextTuple() {
	n := burst
	if s.rate > 0 {
		if s.start.IsZero() {
			s.start = time.Now()
		}
		due := int64(time.Since(s.start).Seconds()*s.rate) + 1 - s.next
		n = int(min(due, burst))
	}
	for ; n > 0 && len(s.replay) > 0; n-- {
		pos := s.replay[len(s.replay)-1]
		s.replay = s.replay[:len(s.replay)-1]
		s.emit(pos)
	}
	count := s.split.Count()
	for ; n > 0 && s.next < count; n-- {
		s.emit(s.split.Position(s.next))
		s.next++
	}
	if s.next >= count && !s.ended {
		s.ended = true
		s.out.EmitStream(EndStream, api.Values{EndOfInput}, nil)
	}
}

func (s *Spout) emit(pos int64) {
	e := s.gen.At(pos)
	s.vals = AppendValues(s.vals[:0], &e)
	var id any
	if s.tracked {
		id = pos
	}
	s.out.EmitStream(StreamOf(e.Kind), s.vals, id)
	s.emitted.Inc()
}

// Ack implements api.Spout.
func (s *Spout) Ack(any) {}

// Fail implements api.Spout: the event is generated and emitted again.
func (s *Spout) Fail(id any) {
	if pos, ok := id.(int64); ok {
		s.replay = append(s.replay, pos)
	}
}

// Activate implements api.Spout.
func (s *Spout) Activate() {}

// Deactivate implements api.Spout.
func (s *Spout) Deactivate() {}

// Close implements api.Spout.
func (s *Spout) Close() {}

// DeclareOutputFields implements api.Spout.
func (s *Spout) DeclareOutputFields(d api.OutputDeclarer) {
	d.DeclareStream(PersonStream, PersonFields...)
	d.DeclareStream(AuctionStream, AuctionFields...)
	d.DeclareStream(BidStream, BidFields...)
	d.DeclareStream(EndStream, EndFields...)
}
