package window

import (
	"fmt"
	"math"
	"time"
)

// Window is a half-open interval [Start, End). For time windows the bounds
// are Unix milliseconds; for count windows they are element positions of
// the key (0-based), so [10, 20) holds a key's 11th to 20th elements; the
// global window is [math.MinInt64, math.MaxInt64).
type Window struct {
	Start, End int64
}

// MaxTimestamp is the last timestamp the window holds (End-1): a time
// window fires when the watermark reaches it.
func (w Window) MaxTimestamp() int64 { return w.End - 1 }

func (w Window) String() string { return fmt.Sprintf("[%d,%d)", w.Start, w.End) }

// GlobalWindow is the one window of the Global assigner.
var GlobalWindow = Window{Start: math.MinInt64, End: math.MaxInt64}

// Firing says what an emitted result is.
type Firing uint8

const (
	// Partial is an early result of a window that is still open.
	Partial Firing = iota + 1
	// Final is the result emitted when the window closes (the watermark
	// passed its end, its count is complete, or its trigger purged it).
	Final
	// Update is a corrected result: a late element arrived within the
	// allowed lateness after the final result and was added.
	Update
)

func (f Firing) String() string {
	switch f {
	case Partial:
		return "partial"
	case Final:
		return "final"
	case Update:
		return "update"
	}
	return fmt.Sprintf("Firing(%d)", uint8(f))
}

// Time is the notion of time that assigns elements to time windows and
// closes them.
type Time uint8

const (
	// EventTime takes each element's timestamp from the element (a
	// timestamp extractor per stream) and closes windows by watermarks.
	EventTime Time = iota
	// ProcessingTime assigns an element to windows by the wall clock of
	// the window bolt when it arrives and closes windows by that clock.
	ProcessingTime
	// IngestionTime stamps an element when it enters the window bolt (the
	// first windowed stage; Egret's tuples carry no source timestamp) and
	// then treats the stamp as an event time with an ascending watermark;
	// unlike ProcessingTime, the stamp travels with the results.
	IngestionTime
)

func (t Time) String() string {
	switch t {
	case EventTime:
		return "event time"
	case ProcessingTime:
		return "processing time"
	case IngestionTime:
		return "ingestion time"
	}
	return fmt.Sprintf("Time(%d)", uint8(t))
}

type assignerKind uint8

const (
	kindNone assignerKind = iota
	kindTumbling
	kindSliding
	kindSession
	kindCount
	kindGlobal
)

// Assigner assigns elements to windows. Build one with Tumbling,
// Sliding, Session, TumblingCount, SlidingCount or Global.
type Assigner struct {
	kind        assignerKind
	size, slide int64 // ms for time windows, elements for count windows
	gap         int64
	trigger     Trigger
}

// Tumbling assigns every element to one window of the given length,
// aligned to the Unix epoch.
func Tumbling(size time.Duration) Assigner {
	return Assigner{kind: kindTumbling, size: size.Milliseconds(), slide: size.Milliseconds()}
}

// Sliding assigns every element to the size/slide overlapping windows of
// length size that start every slide, aligned to the Unix epoch.
func Sliding(size, slide time.Duration) Assigner {
	return Assigner{kind: kindSliding, size: size.Milliseconds(), slide: slide.Milliseconds()}
}

// Session groups a key's elements into sessions: a session closes when no
// element of the key arrives for gap (in the chosen time). Sessions that
// an element bridges are merged with AggregateFunc.Merge.
func Session(gap time.Duration) Assigner {
	return Assigner{kind: kindSession, gap: gap.Milliseconds()}
}

// TumblingCount closes a key's window after every n elements of the key,
// in arrival order (count windows ignore time).
func TumblingCount(n int) Assigner {
	return Assigner{kind: kindCount, size: int64(n), slide: int64(n)}
}

// SlidingCount emits, after every slide elements of a key, the result of
// the key's last n elements (fewer at the start), in arrival order.
func SlidingCount(n, slide int) Assigner {
	return Assigner{kind: kindCount, size: int64(n), slide: int64(slide)}
}

// Global puts all elements of a key into one window that trigger fires.
func Global(trigger Trigger) Assigner {
	return Assigner{kind: kindGlobal, trigger: trigger}
}

func (a Assigner) String() string {
	switch a.kind {
	case kindTumbling:
		return fmt.Sprintf("tumbling %dms", a.size)
	case kindSliding:
		return fmt.Sprintf("sliding %dms every %dms", a.size, a.slide)
	case kindSession:
		return fmt.Sprintf("session gap %dms", a.gap)
	case kindCount:
		return fmt.Sprintf("count %d every %d", a.size, a.slide)
	case kindGlobal:
		return "global"
	}
	return "no assigner"
}

func (a Assigner) validate() error {
	switch a.kind {
	case kindNone:
		return fmt.Errorf("no assigner: use Tumbling, Sliding, Session, TumblingCount, SlidingCount or Global")
	case kindTumbling, kindSliding:
		if a.size <= 0 || a.slide <= 0 {
			return fmt.Errorf("%v: size and slide must be at least 1ms", a)
		}
		if a.slide > a.size {
			return fmt.Errorf("%v: slide must not exceed size", a)
		}
	case kindSession:
		if a.gap <= 0 {
			return fmt.Errorf("%v: the gap must be at least 1ms", a)
		}
	case kindCount:
		if a.size <= 0 || a.slide <= 0 || a.slide > a.size {
			return fmt.Errorf("%v: need 0 < slide <= n", a)
		}
	case kindGlobal:
		if a.trigger == nil {
			return fmt.Errorf("global window without a trigger never fires")
		}
	}
	return nil
}

// isTime reports whether the assigner's windows are closed by time.
func (a Assigner) isTime() bool {
	return a.kind == kindTumbling || a.kind == kindSliding || a.kind == kindSession
}

// assign appends the time windows holding timestamp ts (sessions: the
// element's own session before merging).
func (a Assigner) assign(dst []Window, ts int64) []Window {
	switch a.kind {
	case kindSession:
		return append(dst, Window{ts, ts + a.gap})
	case kindTumbling, kindSliding:
		last := floorDiv(ts, a.slide) * a.slide
		for s := last; s > ts-a.size; s -= a.slide {
			dst = append(dst, Window{s, s + a.size})
		}
	}
	return dst
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// Action is what a Trigger decides.
type Action uint8

const (
	// Continue does nothing.
	Continue Action = iota
	// Fire emits the window's current result as Partial and keeps it.
	Fire
	// FireAndPurge emits the result as Final and clears the window.
	FireAndPurge
)

// TriggerState is what a trigger sees of one key's global window.
type TriggerState struct {
	// Count is the number of elements since the window was last purged.
	Count int64
	// Watermark is the bolt's watermark, Now its clock (Unix ms).
	Watermark, Now int64
	// First and Last are the smallest and largest element timestamps
	// since the last purge.
	First, Last int64
}

// Trigger decides when a global window fires. OnElement is called after
// each element is added; OnTime on every watermark advance and tick.
type Trigger interface {
	OnElement(s TriggerState) Action
	OnTime(s TriggerState) Action
}

// TriggerFuncs adapts two functions to a Trigger; a nil one continues.
type TriggerFuncs struct {
	Element func(TriggerState) Action
	Time    func(TriggerState) Action
}

// OnElement implements Trigger.
func (t TriggerFuncs) OnElement(s TriggerState) Action {
	if t.Element == nil {
		return Continue
	}
	return t.Element(s)
}

// OnTime implements Trigger.
func (t TriggerFuncs) OnTime(s TriggerState) Action {
	if t.Time == nil {
		return Continue
	}
	return t.Time(s)
}

// CountTrigger fires and purges a key's global window every n elements.
func CountTrigger(n int64) Trigger {
	return TriggerFuncs{Element: func(s TriggerState) Action {
		if s.Count >= n {
			return FireAndPurge
		}
		return Continue
	}}
}
