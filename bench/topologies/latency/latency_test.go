package latency

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPacerSchedulesEveryTuple(t *testing.T) {
	t0 := time.Unix(100, 0)
	p, err := NewPacer(t0, 1000) // one tuple per millisecond
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at        time.Duration
		limit     int
		first     int64
		n         int
		scheduled int64
	}{
		{-time.Millisecond, 10, 0, 0, 0},
		{0, 10, 0, 1, t0.UnixNano()},                                // tuple 0 is due at t0
		{500 * time.Microsecond, 10, 1, 0, 0},                       // tuple 1 not yet
		{10 * time.Millisecond, 4, 1, 4, t0.UnixNano() + 1e6},       // a stall: overdue tuples, capped
		{10 * time.Millisecond, 100, 5, 6, t0.UnixNano() + 5e6},     // the rest, each with its own time
		{10*time.Millisecond + 1, 100, 11, 0, t0.UnixNano() + 11e6}, // caught up
	} {
		first, n := p.Due(t0.Add(tc.at), tc.limit)
		if first != tc.first || n != tc.n {
			t.Fatalf("at %s: Due = %d, %d; want %d, %d", tc.at, first, n, tc.first, tc.n)
		}
		if n > 0 && p.Scheduled(first) != tc.scheduled {
			t.Errorf("at %s: scheduled %d, want %d", tc.at, p.Scheduled(first), tc.scheduled)
		}
		p.Advance(n)
	}
	if p.Emitted() != 11 {
		t.Errorf("emitted %d, want 11", p.Emitted())
	}
	if _, err := NewPacer(t0, 0); err == nil {
		t.Error("rate 0: want an error")
	}
}

func TestRecordFlushMerge(t *testing.T) {
	dir := t.TempDir()
	base := time.Unix(1000, 0)
	a, b := NewRecorder(dir, "count", 3), NewRecorder(dir, "count", 4)
	other := NewRecorder(dir, "count.other", 1)
	a.start, b.start, other.start = base, base, base
	// Interval 1 (in the window): task 3 sees 1..99 ms, task 4 one 200-ms stall.
	for ms := int64(1); ms <= 99; ms++ {
		a.Record(base.Add(time.Second), base.Add(time.Second).UnixNano()-ms*1e6)
	}
	b.Record(base.Add(time.Second), base.Add(time.Second).UnixNano()-200e6)
	other.Record(base.Add(time.Second), base.UnixNano())
	for _, r := range []*Recorder{a, b, other} {
		if err := r.Flush(base.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// Interval 2 (after the window): a huge latency that must not count.
	a.Record(base.Add(3*time.Second), base.UnixNano())
	if err := a.Flush(base.Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// A torn last line is ignored.
	f, err := os.OpenFile(filepath.Join(dir, "count-3.hlog.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"name":"count","task":3,"start_ns":`)
	f.Close()

	s, found, err := Merge(dir, "count", base, base.Add(1500*time.Millisecond))
	if err != nil || !found {
		t.Fatalf("Merge: %v, found %v", err, found)
	}
	if s.Count != 100 || s.Intervals != 2 {
		t.Errorf("count %d intervals %d, want 100 and 2", s.Count, s.Intervals)
	}
	near := func(got, want float64) bool { return got >= want*0.99 && got <= want*1.01 }
	if !near(s.P50, 50) || !near(s.P99, 99) || !near(s.Max, 200) {
		t.Errorf("p50 %v p99 %v max %v, want about 50, 99, 200", s.P50, s.P99, s.Max)
	}
	if len(s.P99ByInterval) != 1 {
		t.Errorf("p99 by interval %v, want one slot", s.P99ByInterval)
	}
	if _, found, err := Merge(dir, "count", base.Add(time.Hour), base.Add(2*time.Hour)); err != nil || found {
		t.Errorf("empty window: found %v err %v", found, err)
	}
}

func TestFlushReportsAnUnwritableDirectory(t *testing.T) {
	r := NewRecorder(filepath.Join(t.TempDir(), "missing"), "count", 1)
	r.Record(time.Now(), time.Now().UnixNano())
	if err := r.Flush(time.Now()); err == nil || !strings.Contains(err.Error(), "latency log") || r.Errors != 1 {
		t.Errorf("err = %v, errors %d", err, r.Errors)
	}
}
