package api

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/tuple"
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
)

type item struct {
	Name string
	N    int64
	Tags []string
	At   time.Time
}

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// openB opens backend name over every group of max parallelism 128, with
// clock now (time.Now when nil), and states on it.
func openB(tb testing.TB, name string, now func() time.Time) (*States, statebackend.Backend, statebackend.Options) {
	tb.Helper()
	o := statebackend.Options{Dir: tb.TempDir(), MaxParallelism: 128, Groups: keygroup.Range{Start: 0, End: 128}, Now: now}
	b, err := statebackend.Open(name, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	s, err := OpenStates(b, o, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s, b, o
}

func open(t *testing.T, name string, clock *fakeClock) (*States, statebackend.Backend, statebackend.Options) {
	if clock == nil {
		return openB(t, name, nil)
	}
	return openB(t, name, clock.now)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var backends = []string{"heap", "pebble"}

// TestKeyedScoping: every kind of keyed state holds one value per current
// key, on both backends; the key comes from SetCurrentKey or from tuple
// fields, and equal logical keys (int32(7), int64(7)) are one key.
func TestKeyedScoping(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			s, _, _ := open(t, be, nil)
			v, err := NewValueState[int64](s, "v")
			must(t, err)
			m, err := NewMapState[string, item](s, "m")
			must(t, err)
			l, err := NewListState[string](s, "l")
			must(t, err)
			r, err := NewReducingState[int64](s, "r", func(a, b int64) int64 { return a + b })
			must(t, err)
			a, err := NewAggregatingState[int64, [2]int64, float64](s, "a", avg{})
			must(t, err)
			for i := 0; i < 50; i++ {
				must(t, s.SetCurrentKey(fmt.Sprint("k", i%5)))
				x, _, err := v.Value()
				must(t, err)
				must(t, v.Update(x+1))
				must(t, m.Put(fmt.Sprint("e", i%3), item{Name: fmt.Sprint(i), N: int64(i)}))
				must(t, l.Add(fmt.Sprint(i)))
				must(t, r.Add(int64(i)))
				must(t, a.Add(int64(i)))
			}
			for k := 0; k < 5; k++ {
				must(t, s.SetCurrentKey(fmt.Sprint("k", k)))
				if x, ok, err := v.Value(); x != 10 || !ok || err != nil {
					t.Fatalf("key k%d: value %d %v %v", k, x, ok, err)
				}
				var keys []string
				must(t, m.Range(func(k string, it item) bool { keys = append(keys, k+"="+it.Name); return true }))
				if len(keys) != 3 || !strings.HasPrefix(keys[0], "e0=") || !strings.HasPrefix(keys[2], "e2=") {
					t.Fatalf("key k%d: map %v", k, keys)
				}
				list, err := l.Get()
				must(t, err)
				sum := int64(0)
				for i := k; i < 50; i += 5 {
					sum += int64(i)
				}
				if len(list) != 10 || list[0] != fmt.Sprint(k) || list[9] != fmt.Sprint(45+k) {
					t.Fatalf("key k%d: list %v", k, list)
				}
				if x, ok, err := r.Get(); x != sum || !ok || err != nil {
					t.Fatalf("key k%d: reduced %d, want %d (%v)", k, x, sum, err)
				}
				if x, ok, err := a.Get(); x != float64(sum)/10 || !ok || err != nil {
					t.Fatalf("key k%d: average %v (%v)", k, x, err)
				}
			}
			// A key with nothing.
			must(t, s.SetCurrentKey("none"))
			if _, ok, err := v.Value(); ok || err != nil {
				t.Fatalf("fresh key has a value (%v)", err)
			}
			if e, err := m.IsEmpty(); !e || err != nil {
				t.Fatalf("fresh key has a map (%v)", err)
			}
			// Integer widths are one key; fields select the key.
			must(t, s.SetCurrentKey(int32(7)))
			must(t, v.Update(70))
			must(t, s.SetKeyFields([]any{"x", int64(7)}, []int{1}))
			if x, _, _ := v.Value(); x != 70 {
				t.Fatalf("int64(7) from a tuple field is not the key int32(7): %d", x)
			}
			if k, ok := s.CurrentKey(); !ok || !reflect.DeepEqual(k, []any{int64(7)}) {
				t.Fatalf("current key %v %v", k, ok)
			}
			// Clearing.
			must(t, s.SetCurrentKey("k1"))
			must(t, v.Clear())
			must(t, m.Delete("e1"))
			must(t, l.Update([]string{"only"}))
			must(t, r.Clear())
			must(t, a.Clear())
			if _, ok, _ := v.Value(); ok {
				t.Fatal("cleared value present")
			}
			if ok, _ := m.Contains("e1"); ok {
				t.Fatal("deleted map entry present")
			}
			if ok, _ := m.Contains("e2"); !ok {
				t.Fatal("map entry e2 gone")
			}
			if list, _ := l.Get(); !slices.Equal(list, []string{"only"}) {
				t.Fatalf("updated list %v", list)
			}
			if _, ok, _ := r.Get(); ok {
				t.Fatal("cleared reducing state present")
			}
			must(t, m.Clear())
			if e, _ := m.IsEmpty(); !e {
				t.Fatal("cleared map not empty")
			}
			must(t, s.SetCurrentKey("k2"))
			if e, _ := m.IsEmpty(); e {
				t.Fatal("clearing k1's map cleared k2's")
			}
		})
	}
}

type avg struct{}

func (avg) Init() [2]int64                    { return [2]int64{} }
func (avg) Add(a [2]int64, in int64) [2]int64 { return [2]int64{a[0] + in, a[1] + 1} }
func (avg) Merge(a, b [2]int64) [2]int64      { return [2]int64{a[0] + b[0], a[1] + b[1]} }
func (avg) Result(a [2]int64) float64         { return float64(a[0]) / float64(a[1]) }

// TestKeyedErrors: keyed state without a key, without a backend, with a
// key of another task, or bound with other kinds or types is an error
// (never a panic).
func TestKeyedErrors(t *testing.T) {
	s, _, _ := open(t, "heap", nil)
	v, err := NewValueState[int64](s, "v")
	must(t, err)
	if _, _, err := v.Value(); !errors.Is(err, errNoKey) {
		t.Fatalf("no current key: %v", err)
	}
	if err := v.Update(1); !errors.Is(err, errNoKey) {
		t.Fatalf("no current key: %v", err)
	}
	if err := s.RegisterEventTimeTimer(5); !errors.Is(err, errNoKey) {
		t.Fatalf("timer without key: %v", err)
	}
	for name, bind := range map[string]func() error{
		"value string": func() error { _, err := NewValueState[string](s, "v"); return err },
		"map":          func() error { _, err := NewMapState[string, int64](s, "v"); return err },
		"list":         func() error { _, err := NewListState[int64](s, "v"); return err },
		"operator":     func() error { _, err := NewState[string, int64](s, "v"); return err },
		"reserved":     func() error { _, err := NewValueState[int64](s, "egret.timers.event"); return err },
		"empty":        func() error { _, err := NewValueState[int64](s, ""); return err },
		"ser type": func() error {
			_, err := NewValueState[int64](s, "w", WithSerializer(GobSerializer[string]()))
			return err
		},
		"mode":    func() error { _, err := NewValueState[int64](s, "w", WithRestoreMode(UnionRestore)); return err },
		"ttl op":  func() error { _, err := NewState[string, int64](s, "o", WithTTL(time.Second)); return err },
		"refresh": func() error { _, err := NewValueState[int64](s, "w", WithTTLRefreshOnRead()); return err },
	} {
		if err := bind(); err == nil {
			t.Errorf("%s: bound", name)
		}
	}
	if _, err := NewValueState[int64](s, "v"); err != nil {
		t.Fatalf("binding the same state again: %v", err)
	}
	// A restored descriptor is checked.
	b, err := s.MarshalBinary()
	must(t, err)
	r, err := OpenStates(s.b, s.opt, nil, b)
	must(t, err)
	if _, err := NewValueState[string](r, "v"); err == nil || !strings.Contains(err.Error(), "value int64") {
		t.Fatalf("restored as value int64, bound as string: %v", err)
	}
	// No backend.
	if _, err := NewValueState[int64](NewStates(), "v"); !errors.Is(err, errNoBackend) {
		t.Fatalf("no backend: %v", err)
	}
	// A key of another task's group.
	o := statebackend.Options{MaxParallelism: 128, Groups: keygroup.Range{Start: 0, End: 1}}
	hb, err := statebackend.Open("heap", o)
	must(t, err)
	one, err := OpenStates(hb, o, nil, nil)
	must(t, err)
	if err := one.SetCurrentKey("apple"); err == nil { // group 12
		t.Fatal("a key of group 12 accepted by the task of group 0")
	}
	if err := one.SetKeyFields([]any{"apple"}, []int{0}); err == nil {
		t.Fatal("a tuple key of group 12 accepted by the task of group 0")
	}
	if err := one.SetKeyFields([]any{"apple"}, []int{3}); err == nil {
		t.Fatal("a field out of range accepted")
	}
}

// TestKeyedTTL: entries expire by the processing-time clock; writes renew
// them, and reads too with WithTTLRefreshOnRead.
func TestKeyedTTL(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1000, 0)}
			s, _, _ := open(t, be, clock)
			v, err := NewValueState[string](s, "v", WithTTL(10*time.Second))
			must(t, err)
			rv, err := NewValueState[string](s, "rv", WithTTL(10*time.Second), WithTTLRefreshOnRead())
			must(t, err)
			m, err := NewMapState[int, int](s, "m", WithTTL(10*time.Second))
			must(t, err)
			forever, err := NewValueState[string](s, "f")
			must(t, err)
			must(t, s.SetCurrentKey("k"))
			must(t, v.Update("x"))
			must(t, rv.Update("x"))
			must(t, m.Put(1, 1))
			must(t, forever.Update("x"))
			clock.t = clock.t.Add(6 * time.Second)
			must(t, m.Put(2, 2))
			if _, ok, _ := rv.Value(); !ok {
				t.Fatal("refreshing value gone early")
			}
			clock.t = clock.t.Add(6 * time.Second) // 12s after the first writes
			if _, ok, _ := v.Value(); ok {
				t.Fatal("value alive after its time to live")
			}
			if _, ok, _ := rv.Value(); !ok {
				t.Fatal("value read 6s ago expired")
			}
			var keys []int
			must(t, m.Range(func(k, _ int) bool { keys = append(keys, k); return true }))
			if !slices.Equal(keys, []int{2}) {
				t.Fatalf("map entries alive %v, want [2]", keys)
			}
			clock.t = clock.t.Add(time.Hour)
			if _, ok, _ := forever.Value(); !ok {
				t.Fatal("a state without time to live expired")
			}
		})
	}
}

// TestSerializers: every default serializer and the CBOR and gob ones
// round-trip their values, and refuse bytes that are not one value.
func TestSerializers(t *testing.T) {
	now := time.Unix(1700000000, 123456789)
	roundTrip(t, DefaultSerializer[int](), math.MinInt, -1, 0, math.MaxInt)
	roundTrip(t, DefaultSerializer[int8](), math.MinInt8, math.MaxInt8)
	roundTrip(t, DefaultSerializer[int16](), math.MinInt16, math.MaxInt16)
	roundTrip(t, DefaultSerializer[int32](), math.MinInt32, math.MaxInt32)
	roundTrip(t, DefaultSerializer[int64](), math.MinInt64, 0, math.MaxInt64)
	roundTrip(t, DefaultSerializer[uint](), 0, math.MaxUint)
	roundTrip(t, DefaultSerializer[uint8](), 0, math.MaxUint8)
	roundTrip(t, DefaultSerializer[uint16](), 0, math.MaxUint16)
	roundTrip(t, DefaultSerializer[uint32](), 0, math.MaxUint32)
	roundTrip(t, DefaultSerializer[uint64](), 0, math.MaxUint64)
	roundTrip(t, DefaultSerializer[float64](), 0, -1.5, math.Inf(1), math.MaxFloat64)
	roundTrip(t, DefaultSerializer[float32](), 0, -1.5, math.MaxFloat32)
	roundTrip(t, DefaultSerializer[string](), "", "héllo", strings.Repeat("x", 1000))
	roundTrip(t, DefaultSerializer[[]byte](), []byte{}, []byte{0, 1, 255})
	roundTrip(t, DefaultSerializer[bool](), false, true)
	roundTrip(t, DefaultSerializer[time.Time](), now, time.Unix(-5, 3))
	roundTrip(t, DefaultSerializer[time.Duration](), -time.Second, time.Hour)
	it := item{Name: "a", N: -3, Tags: []string{"x", "y"}, At: now}
	roundTrip(t, DefaultSerializer[item](), it, item{})
	roundTrip(t, GobSerializer[item](), it)
	roundTrip(t, CBORSerializer[map[string]int](), map[string]int{"b": 2, "a": 1})
	roundTrip(t, DefaultSerializer[[2]int64](), [2]int64{1, -1})
	// Tuple values held as `any` come back with the types of tuple values.
	row := []any{int64(-3), int64(1) << 40, 2.5, "s", []byte{1}, true, now, []any{int64(1), "x"}, map[string]any{"k": int64(2)}, nil}
	roundTrip(t, DefaultSerializer[[]any](), row)
	// Deterministic: a map encodes equally whatever its iteration order.
	ms := DefaultSerializer[map[string]int]()
	big := map[string]int{}
	for i := 0; i < 100; i++ {
		big[fmt.Sprint(i)] = i
	}
	a, _ := ms.Append(nil, big)
	for i := 0; i < 10; i++ {
		if b, _ := ms.Append(nil, big); !bytes.Equal(a, b) {
			t.Fatal("a map encodes differently")
		}
	}
	// Damaged bytes.
	for name, err := range map[string]error{
		"int64 trailing": errOf(DefaultSerializer[int64]().Decode([]byte{2, 0})),
		"int64 empty":    errOf(DefaultSerializer[int64]().Decode(nil)),
		"int8 overflow":  errOf(DefaultSerializer[int8]().Decode(mustAppend(DefaultSerializer[int64](), 300))),
		"uint8 overflow": errOf(DefaultSerializer[uint8]().Decode(mustAppend(DefaultSerializer[uint64](), 300))),
		"float short":    errOf(DefaultSerializer[float64]().Decode([]byte{1})),
		"bool":           errOf(DefaultSerializer[bool]().Decode([]byte{2})),
		"time":           errOf(DefaultSerializer[time.Time]().Decode([]byte{0, 0xff, 0xff, 0xff, 0xff, 0x0f})),
		"cbor":           errOf(DefaultSerializer[item]().Decode([]byte{0xff})),
	} {
		if err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

func mustAppend[T any](s Serializer[T], v T) []byte {
	b, err := s.Append(nil, v)
	if err != nil {
		panic(err)
	}
	return b
}

func roundTrip[T any](t *testing.T, s Serializer[T], vals ...T) {
	t.Helper()
	for _, v := range vals {
		b, err := s.Append([]byte("pre"), v)
		if err != nil || !bytes.HasPrefix(b, []byte("pre")) {
			t.Fatalf("%T: append %v: %v", s, v, err)
		}
		got, err := s.Decode(b[3:])
		if err != nil {
			t.Fatalf("%T: decode %v: %v", s, v, err)
		}
		if gt, ok := any(got).(time.Time); ok {
			if !gt.Equal(any(v).(time.Time)) {
				t.Fatalf("%T: %v came back as %v", s, v, got)
			}
			continue
		}
		if gr, ok := any(got).([]any); ok {
			vr := any(v).([]any)
			for i := range vr {
				if reflect.TypeOf(gr[i]) != reflect.TypeOf(vr[i]) || !tuple.Equal(gr[i], vr[i]) {
					t.Fatalf("%T: element %d %#v came back as %#v", s, i, vr[i], gr[i])
				}
			}
			continue
		}
		if gi, ok := any(got).(item); ok {
			vi := any(v).(item)
			if !gi.At.Equal(vi.At) || gi.Name != vi.Name || gi.N != vi.N || !slices.Equal(gi.Tags, vi.Tags) {
				t.Fatalf("%T: %+v came back as %+v", s, v, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("%T: %v came back as %v", s, v, got)
		}
	}
}

// timerLog records fired timers with the state they saw.
type timerLog struct {
	s     *States
	v     *ValueState[string]
	fired []string
	then  func(Timer)
}

func (h *timerLog) OnTimer(tm Timer) {
	x, _, err := h.v.Value()
	if err != nil {
		panic(err)
	}
	h.fired = append(h.fired, fmt.Sprintf("%s %d %v %s", tm.Domain, tm.Time, tm.Key[0], x))
	if h.then != nil {
		h.then(tm)
	}
}

// TestTimers: event-time timers fire as the watermark passes them, in
// time order per key group, with their key current (and the key before
// current again after); deleted timers do not fire; processing-time
// timers fire by the clock; timers survive a snapshot and restore into
// another backend, and a restore with fewer groups keeps only its own.
func TestTimers(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			clock := &fakeClock{t: time.UnixMilli(5000)}
			s, b, o := open(t, be, clock)
			v, err := NewValueState[string](s, "v")
			must(t, err)
			h := &timerLog{s: s, v: v}
			must(t, s.AdvanceWatermark(10)) // nothing registered: no handler needed
			for i, k := range []string{"a", "b", "c", "d"} {
				must(t, s.SetCurrentKey(k))
				must(t, v.Update("state-"+k))
				must(t, s.RegisterEventTimeTimer(int64(100-10*i)))
				must(t, s.RegisterEventTimeTimer(int64(100-10*i))) // one timer
			}
			must(t, s.SetCurrentKey("c"))
			must(t, s.DeleteEventTimeTimer(80))
			must(t, s.SetCurrentKey("a"))
			must(t, s.RegisterProcessingTimeTimer(5100))
			if err := s.AdvanceWatermark(95); err == nil {
				t.Fatal("timers fired without a handler")
			}
			s.SetTimerHandler(h)
			must(t, s.SetCurrentKey("zz"))
			must(t, s.AdvanceWatermark(90))
			if want := []string{"event time 70 d state-d", "event time 90 b state-b"}; !slices.Equal(h.fired, want) {
				t.Fatalf("fired %q, want %q", h.fired, want)
			}
			if k, _ := s.CurrentKey(); k[0] != "zz" {
				t.Fatalf("current key after firing: %v", k)
			}
			must(t, s.AdvanceWatermark(50)) // lower: ignored
			if s.Watermark() != 90 {
				t.Fatalf("watermark %d", s.Watermark())
			}
			if ts, ok := s.NextProcessingTime(); !ok || ts != 5100 {
				t.Fatalf("next processing time %d %v", ts, ok)
			}
			must(t, s.FireProcessingTimers(5099))
			if len(h.fired) != 2 {
				t.Fatal("a processing-time timer fired early")
			}
			// OnTimer registers a later timer for its key.
			h.then = func(tm Timer) {
				if tm.Time < 1000 {
					must(t, s.RegisterEventTimeTimer(tm.Time+1000))
				}
			}
			// Snapshot, restore into another backend, continue there.
			op, err := s.MarshalBinary()
			must(t, err)
			snap, err := b.Snapshot()
			must(t, err)
			var stream bytes.Buffer
			_, err = snap.WriteTo(&stream)
			must(t, err)
			snap.Release()
			o2 := o
			o2.Dir = t.TempDir()
			b2, err := statebackend.Open(be, o2)
			must(t, err)
			defer b2.Close()
			must(t, b2.Restore(bytes.NewReader(stream.Bytes())))
			s2, err := OpenStates(b2, o2, nil, op)
			must(t, err)
			v2, err := NewValueState[string](s2, "v")
			must(t, err)
			h2 := &timerLog{s: s2, v: v2}
			s2.SetTimerHandler(h2)
			must(t, s2.AdvanceWatermark(100))
			must(t, s2.FireProcessingTimers(6000))
			if want := []string{"event time 100 a state-a", "processing time 5100 a state-a"}; !slices.Equal(h2.fired, want) {
				t.Fatalf("restored fired %q, want %q", h2.fired, want)
			}
			// The original goes on: a fires, then registers 1100.
			must(t, s.AdvanceWatermark(2000))
			if want := "event time 1100 a state-a"; h.fired[len(h.fired)-1] != want {
				t.Fatalf("fired %q, want last %q", h.fired, want)
			}
			if _, ok := s.NextProcessingTime(); !ok {
				t.Fatal("the processing-time timer is gone from the original")
			}
			// A task of the lower half of the groups keeps its timers.
			o3 := statebackend.Options{Dir: t.TempDir(), MaxParallelism: 128, Groups: keygroup.RangeOf(0, 2, 128)}
			b3, err := statebackend.Open(be, o3)
			must(t, err)
			defer b3.Close()
			must(t, b3.Restore(bytes.NewReader(stream.Bytes())))
			s3, err := OpenStates(b3, o3, nil, op)
			must(t, err)
			v3, _ := NewValueState[string](s3, "v")
			h3 := &timerLog{s: s3, v: v3}
			s3.SetTimerHandler(h3)
			must(t, s3.AdvanceWatermark(1000))
			for _, f := range h3.fired {
				k := strings.Fields(f)[3]
				if err := s3.SetCurrentKey(k); err != nil {
					t.Fatalf("task of groups %v fired a timer of key %s: %v", o3.Groups, k, err)
				}
			}
		})
	}
}

// TestOperatorRedistribute: split gives each entry to exactly one new
// task, union gives every task all of them; keyed descriptors are kept;
// disagreeing old tasks are an error.
func TestOperatorRedistribute(t *testing.T) {
	var olds [][]byte
	for task := 0; task < 3; task++ {
		s := NewStates()
		sp, err := NewState[string, int64](s, "split")
		must(t, err)
		un, err := NewState[string, int64](s, "union", WithRestoreMode(UnionRestore))
		must(t, err)
		for i := 0; i < 10; i++ {
			sp.Put(fmt.Sprint(task, "-", i), int64(i))
		}
		un.Put(fmt.Sprint("p", task), int64(task))
		s.keyed["counts"] = "value int64"
		b, err := s.MarshalBinary()
		must(t, err)
		olds = append(olds, b)
	}
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		b, err := RedistributeStates(olds, i, 4)
		must(t, err)
		s, err := UnmarshalStates(b)
		must(t, err)
		sp, err := NewState[string, int64](s, "split")
		must(t, err)
		if n := sp.Len(); n < 7 || n > 8 {
			t.Errorf("task %d got %d of 30 split entries", i, n)
		}
		sp.Range(func(k string, _ int64) bool { seen[k]++; return true })
		un, err := NewState[string, int64](s, "union")
		must(t, err)
		if un.Len() != 3 || un.mode != UnionRestore {
			t.Errorf("task %d: union of %d entries, mode %v", i, un.Len(), un.mode)
		}
		if s.keyed["counts"] != "value int64" {
			t.Errorf("task %d: keyed descriptors %v", i, s.keyed)
		}
	}
	if len(seen) != 30 {
		t.Fatalf("split entries restored: %d of 30", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("split entry %s restored %d times", k, n)
		}
	}
	other := NewStates()
	x, _ := NewState[string, string](other, "split")
	x.Put("a", "b")
	ob, _ := other.MarshalBinary()
	if _, err := RedistributeStates(append(olds, ob), 0, 2); err == nil {
		t.Fatal("old tasks with other types merged")
	}
	if _, err := RedistributeStates(olds, 2, 2); err == nil {
		t.Fatal("task index 2 of 2 accepted")
	}
}
