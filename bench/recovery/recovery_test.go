package recovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

// series builds a cumulative counter sampled every 100ms from a rate per
// sample interval.
func series(t0 time.Time, rates ...float64) harness.Series {
	var s harness.Series
	v := 0.0
	s = append(s, harness.Sample{At: t0, Value: 0})
	for i, r := range rates {
		v += r / 10
		s = append(s, harness.Sample{At: t0.Add(time.Duration(i+1) * 100 * time.Millisecond), Value: v})
	}
	return s
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestRecoveryOf(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w, hold := 500*time.Millisecond, time.Second
	cases := []struct {
		name      string
		rates     []float64
		wantOK    bool
		wantAfter time.Duration
		wantMin   float64
	}{
		{"no dip: the first window", repeat(1000, 30), true, 500 * time.Millisecond, 1000},
		{"one second at zero", append(repeat(0, 10), repeat(1000, 30)...), true, 1500 * time.Millisecond, 0},
		{"back but not held", append(append(repeat(0, 10), repeat(1000, 5)...), repeat(0, 10)...), false, 0, 0},
		{"back at 85% only", append(repeat(0, 5), repeat(850, 30)...), false, 0, 0},
		{"above the baseline is back", append(repeat(2000, 10), repeat(1000, 30)...), true, 500 * time.Millisecond, 1000},
		{"back at 91%", append(repeat(0, 5), repeat(910, 30)...), true, 1000 * time.Millisecond, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := recoveryOf(series(t0, tc.rates...), t0, 1000, w, hold, 0.10)
			if got.ok != tc.wantOK || (tc.wantOK && got.after != tc.wantAfter) {
				t.Errorf("recovered %v after %s, want %v after %s", got.ok, got.after, tc.wantOK, tc.wantAfter)
			}
			if diff := got.min - tc.wantMin; diff > 1 || diff < -1 {
				t.Errorf("min rate %v, want %v", got.min, tc.wantMin)
			}
		})
	}
	if got := recoveryOf(nil, t0, 1000, w, hold, 0.1); got.ok {
		t.Errorf("no samples: recovered %+v", got)
	}
}

func TestLineCounterFollowsAppendsAndCuts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ackcheck.SinkLog(7))
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	c := newLineCounter(dir, ackcheck.SinkGlob)
	steps := []struct {
		append string
		cut    int64 // truncate to this size first, when ≥ 0
		want   int64
	}{
		{"1 0\n2 0\n3", -1, 2}, // a line being written is not counted
		{" 1\n", -1, 3},        // until its newline comes
		{"4 0\n44", -1, 4},     // a torn line...
		{"5 0\n", 16, 5},       // ...cut by a restarted writer, then a new line
		{"\n\n6 2\n", -1, 6},   // empty lines are not records
		{"", -1, 6},            // nothing new
	}
	for i, s := range steps {
		if s.cut >= 0 {
			if err := os.Truncate(path, s.cut); err != nil {
				t.Fatal(err)
			}
		}
		write(s.append)
		got, err := c.count()
		if err != nil {
			t.Fatal(err)
		}
		if got != s.want {
			b, _ := os.ReadFile(path)
			t.Fatalf("step %d: %d lines, want %d; file %q", i, got, s.want, b)
		}
	}
}

func TestAckTrackerCovers(t *testing.T) {
	dir := t.TempDir()
	// Task 0 owns the even ids, task 1 the odd ones.
	if err := os.WriteFile(filepath.Join(dir, ackcheck.AckedLog(0)), []byte("0\n4\n2\n8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ackcheck.AckedLog(1)), []byte("1\n3\n5\n7"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAckTracker(dir, 2)
	if err := a.poll(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cursors []int64
		want    bool
	}{
		{[]int64{4, 5}, true},
		{[]int64{6, 5}, false}, // 6 missing
		{[]int64{4, 7}, false}, // 7 not complete yet
		{[]int64{-1, -1}, true},
	} {
		if got := a.covers(tc.cursors); got != tc.want {
			t.Errorf("covers(%v) = %v, want %v", tc.cursors, got, tc.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ackcheck.AckedLog(0)), []byte("0\n4\n2\n8\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.poll(); err == nil || !strings.Contains(err.Error(), "not an acked id") {
		t.Errorf("a malformed record: error %v", err)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Faults: []string{"stmgr", "disk"}}, `unknown fault "disk"`},
		{Options{Rate: -1}, "rate -1"},
		{Options{Fraction: 1.5}, "fraction 1.5"},
	} {
		tc.o.defaults()
		err := tc.o.check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.o, err, tc.want)
		}
	}
	o := Options{Quick: true}
	o.defaults()
	if err := o.check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if o.MessageTimeout != 3*time.Second || len(o.Faults) != len(AllFaults) {
		t.Errorf("quick defaults: %+v", o)
	}
}
