package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/tuple"
)

// TimeDomain tells event time from processing time.
type TimeDomain uint8

const (
	// EventTime is the time of the data: it advances with the
	// watermark (States.AdvanceWatermark).
	EventTime TimeDomain = iota + 1
	// ProcessingTime is the clock of the task's machine.
	ProcessingTime
)

func (d TimeDomain) String() string {
	switch d {
	case EventTime:
		return "event time"
	case ProcessingTime:
		return "processing time"
	}
	return fmt.Sprintf("TimeDomain(%d)", uint8(d))
}

// Timer is a timer that fired: its domain, its time (Unix milliseconds)
// and the values of the key it was registered for, the current key while
// OnTimer runs.
type Timer struct {
	Domain TimeDomain
	Time   int64
	Key    []any
}

// TimerHandler is implemented by a component that registers timers (as
// Flink's KeyedProcessFunction does). OnTimer runs on the task's goroutine
// with the timer's key current, so it reads and writes that key's keyed
// state and may register more timers; it may emit with the component's
// collector. Processing-time timers fire when the task's clock passes
// their time, event-time timers when the watermark does
// (States.AdvanceWatermark). Timers are keyed state: they are checkpointed
// with it and fire after a restore if they had not fired at the
// checkpoint. A timer fires once; registering the same time for the same
// key twice registers one timer.
type TimerHandler interface {
	OnTimer(t Timer)
}

// Names of the runtime's states that hold the timers, in the reserved
// namespace: key = time (8 bytes, big endian, sign bit flipped so that
// byte order is time order) | key length:uvarint | key bytes; value = the
// key's values (core/tuple encoding).
const (
	eventTimers      = reservedPrefix + "timers.event"
	processingTimers = reservedPrefix + "timers.processing"
)

// timers is the timer service of a task. The timers live in the state
// backend; in memory it keeps the earliest time of each domain in each
// key group the task owns, so finding the timers that are due costs one
// look per group and the timers' number is bounded by the backend, not
// by memory.
type timers struct {
	h        TimerHandler
	wm       int64
	earliest [2][]int64 // by domain-1, by group-Start; math.MaxInt64: none
}

func timerState(d TimeDomain) string {
	if d == EventTime {
		return eventTimers
	}
	return processingTimers
}

// load reads the earliest timer of each group (after a restore).
func (t *timers) load(s *States) error {
	t.wm = math.MinInt64
	for d := range t.earliest {
		t.earliest[d] = make([]int64, s.opt.Groups.Len())
		for i := range t.earliest[d] {
			if err := t.rescan(s, TimeDomain(d+1), s.opt.Groups.Start+i); err != nil {
				return err
			}
		}
	}
	return nil
}

// rescan sets the earliest time of domain d in group g from the backend.
func (t *timers) rescan(s *States, d TimeDomain, g int) error {
	e := int64(math.MaxInt64)
	err := s.b.Scan(g, timerState(d), nil, func(k, _ []byte) bool {
		if len(k) >= 8 {
			e = timeOf(k)
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("timers: %w", err)
	}
	t.earliest[d-1][g-s.opt.Groups.Start] = e
	return nil
}

func timeOf(k []byte) int64 { return int64(binary.BigEndian.Uint64(k) ^ 1<<63) }

// SetTimerHandler sets what OnTimer calls: the runtime sets the component
// when it implements TimerHandler; a component wrapping another (a window
// engine) may set its own.
func (s *States) SetTimerHandler(h TimerHandler) { s.tm.h = h }

// RegisterEventTimeTimer registers a timer of the current key that fires
// when the watermark reaches ts (Unix milliseconds).
func (s *States) RegisterEventTimeTimer(ts int64) error { return s.setTimer(EventTime, ts, true) }

// DeleteEventTimeTimer deletes the current key's event-time timer at ts,
// if there is one.
func (s *States) DeleteEventTimeTimer(ts int64) error { return s.setTimer(EventTime, ts, false) }

// RegisterProcessingTimeTimer registers a timer of the current key that
// fires when the task's clock reaches ts (Unix milliseconds).
func (s *States) RegisterProcessingTimeTimer(ts int64) error {
	return s.setTimer(ProcessingTime, ts, true)
}

// DeleteProcessingTimeTimer deletes the current key's processing-time
// timer at ts, if there is one.
func (s *States) DeleteProcessingTimeTimer(ts int64) error {
	return s.setTimer(ProcessingTime, ts, false)
}

// ProcessingTime returns the task's clock in Unix milliseconds.
func (s *States) ProcessingTime() int64 {
	if s.now == nil {
		return 0
	}
	return s.now().UnixMilli()
}

// Watermark returns the event time the task has reached: the highest
// watermark given to AdvanceWatermark since the task started or was
// restored (math.MinInt64 before any).
func (s *States) Watermark() int64 { return s.tm.wm }

func (s *States) setTimer(d TimeDomain, ts int64, register bool) error {
	if s.b == nil {
		return errNoBackend
	}
	if !s.key.set {
		return fmt.Errorf("timer: %w", errNoKey)
	}
	s.kbuf = s.keyPrefix(binary.BigEndian.AppendUint64(s.kbuf[:0], uint64(ts)^1<<63))
	k := statebackend.Key{Group: s.key.group, State: timerState(d), Key: s.kbuf}
	i := s.key.group - s.opt.Groups.Start
	if !register {
		if err := s.b.Delete(k); err != nil {
			return fmt.Errorf("timer: %w", err)
		}
		if ts == s.tm.earliest[d-1][i] {
			return s.tm.rescan(s, d, s.key.group)
		}
		return nil
	}
	vals, _ := s.CurrentKey()
	var err error
	if s.ebuf, err = tuple.AppendValues(s.ebuf[:0], vals, s.reg); err != nil {
		return fmt.Errorf("timer: encode the key: %w", err)
	}
	if err := s.b.Put(k, s.ebuf, 0); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	s.tm.earliest[d-1][i] = min(s.tm.earliest[d-1][i], ts)
	return nil
}

// next returns the group of the earliest timer of domain d and its time.
func (t *timers) next(s *States, d TimeDomain) (int, int64) {
	es := t.earliest[d-1]
	if len(es) == 0 {
		return 0, math.MaxInt64
	}
	i := 0
	for j, e := range es {
		if e < es[i] {
			i = j
		}
	}
	return s.opt.Groups.Start + i, es[i]
}

// AdvanceWatermark raises the task's event time to wm (a lower wm is
// ignored) and fires, in time order per key group, every event-time timer
// at or before it, calling OnTimer with each timer's key current; the key
// current before is current again afterwards. A window engine calls it
// with the watermark of its input. It is an error when a timer is due and
// no TimerHandler is set (no timer is lost).
func (s *States) AdvanceWatermark(wm int64) error {
	if s.b == nil {
		return errNoBackend
	}
	wm = max(wm, s.tm.wm)
	if _, ts := s.tm.next(s, EventTime); ts <= wm && s.tm.h == nil {
		return errNoHandler // and the watermark stays where it was
	}
	s.tm.wm = wm
	return s.fire(EventTime, wm)
}

// NextProcessingTime returns the time of the earliest processing-time
// timer (Unix milliseconds), and whether there is one: the runtime calls
// FireProcessingTimers then.
func (s *States) NextProcessingTime() (int64, bool) {
	if s.b == nil {
		return 0, false
	}
	_, ts := s.tm.next(s, ProcessingTime)
	return ts, ts != math.MaxInt64
}

// FireProcessingTimers fires every processing-time timer at or before now
// (Unix milliseconds), as AdvanceWatermark does event-time ones. The
// runtime calls it on the task's goroutine.
func (s *States) FireProcessingTimers(now int64) error {
	if s.b == nil {
		return nil
	}
	return s.fire(ProcessingTime, now)
}

var errNoHandler = errors.New("a timer is due but no TimerHandler is set (the component implements no api.TimerHandler)")

func (s *States) fire(d TimeDomain, upto int64) error {
	g, ts := s.tm.next(s, d)
	if ts > upto {
		return nil
	}
	if s.tm.h == nil {
		return errNoHandler
	}
	saved := s.key
	saved.bytes = slices.Clone(saved.bytes)
	saved.vals = slices.Clone(saved.vals)
	defer func() { s.key = saved }()
	name := timerState(d)
	for ; ts <= upto; g, ts = s.tm.next(s, d) {
		t := &s.tm
		var due [][2][]byte // local: OnTimer may advance the watermark again
		err := s.b.Scan(g, name, nil, func(k, v []byte) bool {
			if len(k) < 8 || timeOf(k) > upto {
				return false
			}
			due = append(due, [2][]byte{slices.Clone(k), slices.Clone(v)})
			return true
		})
		if err != nil {
			return fmt.Errorf("timers: %w", err)
		}
		for _, e := range due {
			if err := s.b.Delete(statebackend.Key{Group: g, State: name, Key: e[0]}); err != nil {
				return fmt.Errorf("timers: %w", err)
			}
		}
		// The entries are gone before OnTimer runs: a timer it
		// registers again for the same time is a new one.
		if err := t.rescan(s, d, g); err != nil {
			return err
		}
		for _, e := range due {
			n, k := binary.Uvarint(e[0][8:])
			if k <= 0 || n != uint64(len(e[0])-8-k) {
				return fmt.Errorf("timers: damaged timer key %x", e[0])
			}
			vals, err := tuple.DecodeValues(e[1], nil, s.reg)
			if err != nil {
				return fmt.Errorf("timers: the key of a timer: %w", err)
			}
			s.key = currentKey{set: true, bytes: e[0][8+k:], group: g, vals: vals}
			t.h.OnTimer(Timer{Domain: d, Time: timeOf(e[0]), Key: vals})
		}
	}
	return nil
}
