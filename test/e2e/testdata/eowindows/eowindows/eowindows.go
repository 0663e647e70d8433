// Package eowindows is the windowed effectively-once verification
// topology: keyed events read from one Kafka partition (records "i key ts
// v") by a Kafka spout wrapped as a per-record watermark source, three
// window bolts — tumbling, sliding and session windows with allowed
// lateness and a late stream — whose results and late elements are
// written to another topic by the two-phase-commit Kafka sink.
//
// With one input partition the order of the elements and watermarks each
// window task sees is fixed, so the output is a function of the input:
// Expected computes it by brute force, and a read_committed consumer of
// the output must see exactly those lines, each once, whatever process
// was killed on the way.
package eowindows

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/connectors/kafka"
	"github.com/egret-stream/egret/core/topology"
)

// Component names.
const (
	Spout    = "events"
	Tumbling = "tumbling"
	Sliding  = "sliding"
	Session  = "session"
	Late     = "late"
	Sink     = "sink"
)

// The windows and the watermark bound, in event-time milliseconds.
const (
	maxDelay        = 200 // the spout's bounded out-of-orderness
	tumblingSize    = 2000
	tumblingLate    = 1000
	slidingSize     = 4000
	slidingSlide    = 2000
	slidingLate     = 500
	sessionGap      = 400
	sessionLateness = 1000
	base            = int64(1_700_000_000_000)
)

// Event is one input element.
type Event struct {
	I     int
	Key   string
	TS, V int64
}

// Record is the Kafka record value of e.
func (e Event) Record() string { return fmt.Sprintf("%d %s %d %d", e.I, e.Key, e.TS, e.V) }

// Events returns the n input elements: mostly within the watermark bound
// of each other, about one in forty far behind (within the allowed
// lateness, or late), keys active in turns (so sessions open and close),
// and a last element far ahead whose watermark closes every window
// before it.
func Events(n int) []Event {
	rng := rand.New(rand.NewPCG(36, 5))
	cur := base
	out := make([]Event, 0, n)
	for i := 0; i < n-1; i++ {
		cur += int64(rng.IntN(11))
		ts := cur - int64(rng.IntN(150))
		if rng.IntN(40) == 0 {
			ts = cur - int64(rng.IntN(4000))
		}
		key := fmt.Sprint("k", (i/150+rng.IntN(3))%12)
		out = append(out, Event{I: i, Key: key, TS: ts, V: int64(1 + rng.IntN(9))})
	}
	return append(out, Event{I: n - 1, Key: "zz-end", TS: cur + 1_000_000, V: 1})
}

// parse reads the record value of a Kafka spout tuple's values.
func parse(value []byte) (Event, error) {
	f := bytes.Fields(value)
	if len(f) != 4 {
		return Event{}, fmt.Errorf("eowindows: record %q is not \"i key ts v\"", value)
	}
	i, err1 := strconv.Atoi(string(f[0]))
	ts, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	v, err3 := strconv.ParseInt(string(f[3]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Event{}, fmt.Errorf("eowindows: record %q is not \"i key ts v\"", value)
	}
	return Event{I: i, Key: string(f[1]), TS: ts, V: v}, nil
}

func mustParse(value []byte) Event {
	e, err := parse(value)
	if err != nil {
		panic(err) // only records the test produced are in the topic
	}
	return e
}

// Options tune the topology.
type Options struct {
	Brokers, Input, Output string
	Containers             int
	Parallelism            int // of each window bolt
	CheckpointInterval     time.Duration
}

// Builder returns the topology.
func Builder(o Options) *api.TopologyBuilder {
	if o.Input == "" {
		o.Input = "events"
	}
	if o.Output == "" {
		o.Output = "results"
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 2
	}
	tb := api.NewTopologyBuilder("eowindows")
	tb.SetDeliveryMode(topology.EffectivelyOnce)
	if o.Containers > 0 {
		tb.SetContainers(o.Containers)
	}
	if o.CheckpointInterval > 0 {
		tb.SetConfig(topology.KeyCheckpointInterval, o.CheckpointInterval.String())
	}
	if o.Brokers != "" {
		tb.SetConfig(kafka.KeyBrokers, o.Brokers)
	}
	tb.SetConfig(kafka.KeyTopics, o.Input)
	tb.SetConfig(kafka.KeyTopic, o.Output)
	wb := window.NewBuilder(tb)
	wb.SetSpout(Spout, kafka.NewSpout(kafka.SpoutConfig{}), 1, window.SpoutWatermarks{
		Timestamp: func(_ string, v api.Values) time.Time { return time.UnixMilli(mustParse(v[1].([]byte)).TS) },
		Generator: func() window.Generator { return window.BoundedOutOfOrderness(maxDelay * time.Millisecond) },
		Emission:  window.PerRecord,
	})
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	for _, w := range []struct {
		name     string
		assigner window.Assigner
		lateness int64
	}{
		{Tumbling, window.Tumbling(ms(tumblingSize)), tumblingLate},
		{Sliding, window.Sliding(ms(slidingSize), ms(slidingSlide)), slidingLate},
		{Session, window.Session(ms(sessionGap)), sessionLateness},
	} {
		name := w.name
		window.SetBolt(wb, name, o.Parallelism, window.Spec[string, int64, int64, int64]{
			Assigner:        w.assigner,
			Key:             func(t api.Tuple) string { return mustParse(t.Bytes(1)).Key },
			Value:           func(t api.Tuple) int64 { return mustParse(t.Bytes(1)).V },
			Timestamp:       func(t api.Tuple) time.Time { return time.UnixMilli(mustParse(t.Bytes(1)).TS) },
			Aggregate:       window.Sum[int64](),
			AllowedLateness: ms(w.lateness),
			LateStream:      true,
			IdleTimeout:     -1, // idleness is wall-clock time: not a function of the input
			OutputFields:    []string{kafka.FieldKey, kafka.FieldValue},
			Output: func(r window.Result[string, int64]) api.Values {
				return api.Values{r.Key, resultLine(name, r.Key, r.Window.Start, r.Window.End, r.Value, r.Firing.String())}
			},
		}).FieldsGrouping(Spout, kafka.FieldKey)
	}
	tb.SetBolt(Late, func() api.Bolt { return &lateBolt{} }, 1).
		Input(Tumbling, window.LateStream, api.Shuffle()).
		Input(Sliding, window.LateStream, api.Shuffle()).
		Input(Session, window.LateStream, api.Shuffle())
	tb.SetBolt(Sink, kafka.NewSink(kafka.SinkConfig{}), 1).
		ShuffleGrouping(Tumbling).ShuffleGrouping(Sliding).ShuffleGrouping(Session).ShuffleGrouping(Late)
	return tb
}

func resultLine(comp, key string, start, end, value int64, firing string) string {
	return fmt.Sprintf("%s %s %d %d %d %s", comp, key, start, end, value, firing)
}

func lateLine(comp string, e Event) string {
	return fmt.Sprintf("late %s %d %s %d %d", comp, e.I, e.Key, e.TS, e.V)
}

// lateBolt writes the late elements of the window bolts as lines.
type lateBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

func (b *lateBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }

func (b *lateBolt) Execute(t api.Tuple) {
	values, _ := t.Value(3).([]any)
	if len(values) > 1 {
		if rec, ok := values[1].([]byte); ok {
			e := mustParse(rec)
			b.out.Emit(api.Values{e.Key, lateLine(t.SourceComponent(), e)}, t)
		}
	}
	b.out.Ack(t)
}

func (b *lateBolt) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare(kafka.FieldKey, kafka.FieldValue)
}

// Expected returns the lines the topology writes for events, computed by
// brute force from the definitions of docs/windows.md: each window bolt
// sees element i with the watermark of the elements before it (the
// spout's bounded out-of-orderness watermark, emitted after every record
// that advances it); a window's final result comes when the watermark
// reaches its end − 1, an element added within the allowed lateness emits
// an update, and an element whose every window is past it is late.
func Expected(events []Event) map[string]bool {
	models := []*model{
		{name: Tumbling, size: tumblingSize, slide: tumblingSize, lateness: tumblingLate},
		{name: Sliding, size: slidingSize, slide: slidingSlide, lateness: slidingLate},
		{name: Session, gap: sessionGap, lateness: sessionLateness},
	}
	for _, m := range models {
		m.wins = map[string][]*mwin{}
	}
	wm, top := window.NoWatermark, window.NoWatermark
	for _, e := range events {
		for _, m := range models {
			m.element(e, wm)
		}
		top = max(top, e.TS)
		if next := top - maxDelay - 1; next > wm {
			wm = next
			for _, m := range models {
				m.advance(wm)
			}
		}
	}
	out := map[string]bool{}
	for _, m := range models {
		for _, l := range m.out {
			if out[l] {
				panic("eowindows: the model emits " + l + " twice")
			}
			out[l] = true
		}
	}
	return out
}

// Lines returns the expected lines sorted (for messages).
func Lines(m map[string]bool) []string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	sort.Strings(l)
	return l
}

// mwin is one window of one key in the model.
type mwin struct {
	start, end, sum int64
	fired           bool
}

type model struct {
	name                       string
	size, slide, gap, lateness int64
	wins                       map[string][]*mwin // key → its open windows
	out                        []string
}

func (m *model) emit(key string, w *mwin, firing string) {
	m.out = append(m.out, resultLine(m.name, key, w.start, w.end, w.sum, firing))
}

// open reports whether a window ending at end still takes elements at
// watermark wm.
func (m *model) open(end, wm int64) bool { return end-1+m.lateness > wm }

func (m *model) element(e Event, wm int64) {
	if m.gap > 0 {
		m.session(e, wm)
		return
	}
	accepted := false
	for s := e.TS - m.size + 1; s <= e.TS; s++ {
		if s%m.slide != 0 || !m.open(s+m.size, wm) {
			continue
		}
		accepted = true
		var w *mwin
		for _, x := range m.wins[e.Key] {
			if x.start == s {
				w = x
			}
		}
		if w == nil {
			w = &mwin{start: s, end: s + m.size}
			m.wins[e.Key] = append(m.wins[e.Key], w)
		}
		w.sum += e.V
		if w.fired {
			m.emit(e.Key, w, "update")
		}
	}
	if !accepted {
		m.out = append(m.out, lateLine(m.name, e))
	}
}

// session merges the element's session [ts, ts+gap) with every open
// session of its key it overlaps.
func (m *model) session(e Event, wm int64) {
	merged := &mwin{start: e.TS, end: e.TS + m.gap, sum: e.V}
	var keep []*mwin
	anyFired := false
	for _, w := range m.wins[e.Key] {
		if w.start < e.TS+m.gap && e.TS < w.end {
			merged.start, merged.end = min(merged.start, w.start), max(merged.end, w.end)
			merged.sum += w.sum
			anyFired = anyFired || w.fired
		} else {
			keep = append(keep, w)
		}
	}
	if !m.open(merged.end, wm) {
		m.out = append(m.out, lateLine(m.name, e))
		return
	}
	merged.fired = anyFired && merged.end-1 <= wm
	m.wins[e.Key] = append(keep, merged)
	if merged.fired {
		m.emit(e.Key, merged, "update")
	}
}

func (m *model) advance(wm int64) {
	for key, ws := range m.wins {
		var keep []*mwin
		for _, w := range ws {
			if !w.fired && w.end-1 <= wm {
				w.fired = true
				m.emit(key, w, "final")
			}
			if m.open(w.end, wm) {
				keep = append(keep, w)
			}
		}
		m.wins[key] = keep
	}
}
