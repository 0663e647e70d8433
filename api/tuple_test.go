package api

import (
	"testing"
	"time"
)

func TestBasicTuple(t *testing.T) {
	now := time.Unix(1700000000, 5).UTC()
	tp := NewTuple("src", "default", 4, []string{"s", "b", "i", "u", "f", "ok", "when", "d"},
		"text", []byte("raw"), int32(-7), uint64(1<<63), float32(1.5), true, now, 3*time.Second)
	if tp.Len() != 8 || tp.SourceComponent() != "src" || tp.SourceStream() != "default" || tp.SourceTask() != 4 || tp.IsTick() {
		t.Fatalf("metadata of %#v", tp)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"String(0)", tp.String(0), "text"},
		{"String(bytes)", tp.String(1), "raw"},
		{"String(int)", tp.String(2), ""},
		{"Bytes(1)", string(tp.Bytes(1)), "raw"},
		{"Bytes(string)", string(tp.Bytes(0)), "text"},
		{"Bytes(int) is nil", tp.Bytes(2) == nil, true},
		{"Int64(int32)", tp.Int64(2), int64(-7)},
		{"Int64(duration)", tp.Int64(7), int64(3 * time.Second)},
		{"Int64(string)", tp.Int64(0), int64(0)},
		{"Uint64(uint64)", tp.Uint64(3), uint64(1 << 63)},
		{"Float64(float32)", tp.Float64(4), 1.5},
		{"Float64(int32)", tp.Float64(2), -7.0},
		{"Bool", tp.Bool(5), true},
		{"Bool(string)", tp.Bool(0), false},
		{"Time", tp.Time(6), now},
		{"Time(string) is zero", tp.Time(0).IsZero(), true},
		{"FieldIndex(i)", tp.FieldIndex("i"), 2},
		{"FieldIndex(missing)", tp.FieldIndex("missing"), -1},
		{"ValueByField(s)", tp.ValueByField("s"), "text"},
		{"ValueByField(missing)", tp.ValueByField("missing"), nil},
		{"Value(-1)", tp.Value(-1), nil},
		{"Value(8)", tp.Value(8), nil},
		{"String(99)", tp.String(99), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v (%T), want %v (%T)", c.name, c.got, c.got, c.want, c.want)
		}
	}
	if len(tp.Values()) != 8 || len(tp.Fields()) != 8 {
		t.Errorf("Values/Fields lengths %d/%d", len(tp.Values()), len(tp.Fields()))
	}
}

func TestNewTupleWithoutFields(t *testing.T) {
	tp := NewTuple("src", "s", 1, nil, "x")
	if tp.FieldIndex("x") != -1 || tp.ValueByField("x") != nil || tp.String(0) != "x" {
		t.Errorf("%#v", tp)
	}
}

func TestTickTuple(t *testing.T) {
	tick := NewTickTuple()
	if !tick.IsTick() || tick.Len() != 0 || tick.SourceComponent() != SystemComponent || tick.SourceStream() != TickStream {
		t.Errorf("tick = %#v", tick)
	}
	if NewTuple(SystemComponent, "default", 1, nil).IsTick() || NewTuple("c", TickStream, 1, nil).IsTick() {
		t.Error("a tuple that is not from __system/__tick is a tick")
	}
}

func TestCounter(t *testing.T) {
	var c Counter
	c.Inc()
	c.Add(41)
	if c.Value() != 42 {
		t.Errorf("Value = %d", c.Value())
	}
}
