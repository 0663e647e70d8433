package latency

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Topology config keys the benchmark topologies read (free-form user
// settings, so they reach every instance of a cluster).
const (
	// KeyRate is the offered rate in tuples per second of the whole
	// spout component (split evenly over its tasks); 0 or unset means
	// unthrottled.
	KeyRate = "bench.rate"
	// KeyDir is the directory the recorders write their interval
	// histograms to; unset disables recording.
	KeyDir = "bench.latency.dir"
)

// Histogram range: 1 µs to 10 minutes, 3 significant digits, in
// microseconds.
const (
	lowestMicros  = 1
	highestMicros = int64(10 * time.Minute / time.Microsecond)
	sigFigs       = 3
)

// NewHistogram returns an empty histogram of latencies in microseconds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(lowestMicros, highestMicros, sigFigs)
}

// Pacer schedules tuples at a fixed rate: tuple i is due at t0 + i/rate.
// It never skips a scheduled tuple: when the spout falls behind, Due
// returns every overdue one, each with its own scheduled time.
type Pacer struct {
	t0   time.Time
	rate float64
	next int64
}

// NewPacer starts a schedule of rate tuples per second at t0; rate must be
// positive.
func NewPacer(t0 time.Time, rate float64) (*Pacer, error) {
	if !(rate > 0) {
		return nil, fmt.Errorf("latency: the rate must be positive, got %v", rate)
	}
	return &Pacer{t0: t0, rate: rate}, nil
}

// Scheduled returns the scheduled time of tuple i in Unix nanoseconds.
func (p *Pacer) Scheduled(i int64) int64 {
	return p.t0.UnixNano() + int64(float64(i)*1e9/p.rate)
}

// Due returns how many tuples are due at now (at most limit) and the index
// of the first; the caller emits them and calls Advance with their count.
func (p *Pacer) Due(now time.Time, limit int) (first int64, n int) {
	elapsed := now.Sub(p.t0).Seconds()
	if elapsed < 0 {
		return p.next, 0
	}
	due := int64(elapsed*p.rate) + 1 - p.next
	if due <= 0 {
		return p.next, 0
	}
	return p.next, int(min(due, int64(limit)))
}

// Advance marks n more tuples emitted.
func (p *Pacer) Advance(n int) { p.next += int64(n) }

// Emitted is the number of tuples emitted so far.
func (p *Pacer) Emitted() int64 { return p.next }

// Interval is one recorded interval as written to a file.
type Interval struct {
	// Name says what was measured (e.g. "count" for the latency at the
	// count bolt, "sentence.complete" for the spout's complete latency);
	// Task is the task that recorded it.
	Name string `json:"name"`
	Task int    `json:"task"`
	// StartNanos and EndNanos bound the interval (Unix nanoseconds).
	StartNanos int64 `json:"start_ns"`
	EndNanos   int64 `json:"end_ns"`
	// Count is the number of values; Histogram the HdrHistogram V2
	// compressed encoding (base64) of latencies in microseconds.
	Count     int64  `json:"count"`
	Histogram string `json:"hist"`
}

// Recorder collects latencies into interval histograms and appends them
// to a file. It is used from one goroutine (a component's).
type Recorder struct {
	name  string
	task  int
	path  string
	h     *hdrhistogram.Histogram
	start time.Time
	// Errors counts values out of range and failed writes.
	Errors int64
	// Err is the last write error.
	Err error
}

// NewRecorder returns a recorder writing to dir/<name>-<task>.hlog.jsonl.
// dir must exist.
func NewRecorder(dir, name string, task int) *Recorder {
	return &Recorder{
		name:  name,
		task:  task,
		path:  filepath.Join(dir, fmt.Sprintf("%s-%d.hlog.jsonl", name, task)),
		h:     NewHistogram(),
		start: time.Now(),
	}
}

// Record records the latency of a tuple scheduled at scheduledNanos (Unix
// nanoseconds) and done at now.
func (r *Recorder) Record(now time.Time, scheduledNanos int64) {
	us := (now.UnixNano() - scheduledNanos) / 1e3
	if us < lowestMicros {
		us = lowestMicros
	}
	if r.h.RecordValue(min(us, highestMicros)) != nil {
		r.Errors++
	}
}

// Flush appends the interval since the last flush to the file and starts
// a new one. Intervals without values are written too, so a stalled sink
// is visible as empty intervals.
func (r *Recorder) Flush(now time.Time) error {
	enc, err := r.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		r.Errors++
		r.Err = fmt.Errorf("encode the latency histogram: %w", err)
		return r.Err
	}
	line, err := json.Marshal(Interval{Name: r.name, Task: r.task, StartNanos: r.start.UnixNano(), EndNanos: now.UnixNano(), Count: r.h.TotalCount(), Histogram: string(enc)})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.Errors++
		r.Err = fmt.Errorf("open the latency log: %w", err)
		return r.Err
	}
	_, werr := f.Write(append(line, '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		r.Errors++
		r.Err = fmt.Errorf("write the latency log %s: %w", r.path, err)
		return r.Err
	}
	r.h.Reset()
	r.start = now
	return nil
}

// Summary is a merged latency distribution, in milliseconds.
type Summary struct {
	Count     int64   `json:"count"`
	Intervals int     `json:"intervals"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	P999      float64 `json:"p99_9_ms"`
	Max       float64 `json:"max_ms"`
	Mean      float64 `json:"mean_ms"`
	// P99ByInterval is the p99 of each merged interval (all tasks of an
	// interval merged), in time order: a p99 that trends upward means the
	// offered rate was not sustained.
	P99ByInterval []float64 `json:"p99_by_interval_ms,omitempty"`
}

// Summarize returns the percentiles of h (microseconds) in milliseconds.
func Summarize(h *hdrhistogram.Histogram) Summary {
	ms := func(us int64) float64 { return float64(us) / 1e3 }
	return Summary{
		Count: h.TotalCount(),
		P50:   ms(h.ValueAtPercentile(50)),
		P99:   ms(h.ValueAtPercentile(99)),
		P999:  ms(h.ValueAtPercentile(99.9)),
		Max:   ms(h.Max()),
		Mean:  h.Mean() / 1e3,
	}
}

// Merge reads every file of dir written by recorders named name and
// merges the intervals whose midpoint lies in [from, to]. It returns the
// summary of the merged histogram; found is false when no interval
// matched.
func Merge(dir, name string, from, to time.Time) (s Summary, found bool, err error) {
	files, err := filepath.Glob(filepath.Join(dir, name+"-*.hlog.jsonl"))
	if err != nil {
		return Summary{}, false, err
	}
	total := NewHistogram()
	bySlot := map[int64]*hdrhistogram.Histogram{}
	intervals := 0
	for _, path := range files {
		// name-<task>: skip files of a longer name sharing the prefix.
		task := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), name+"-"), ".hlog.jsonl")
		if _, err := strconv.Atoi(task); err != nil {
			continue
		}
		if err := readIntervals(path, func(iv Interval) error {
			mid := time.Unix(0, iv.StartNanos+(iv.EndNanos-iv.StartNanos)/2)
			if mid.Before(from) || mid.After(to) {
				return nil
			}
			h, err := hdrhistogram.Decode([]byte(iv.Histogram))
			if err != nil {
				return fmt.Errorf("decode an interval of %s: %w", path, err)
			}
			total.Merge(h)
			slot := iv.EndNanos / int64(time.Second)
			if bySlot[slot] == nil {
				bySlot[slot] = NewHistogram()
			}
			bySlot[slot].Merge(h)
			intervals++
			return nil
		}); err != nil {
			return Summary{}, false, err
		}
	}
	if intervals == 0 {
		return Summary{}, false, nil
	}
	s = Summarize(total)
	s.Intervals = intervals
	slots := make([]int64, 0, len(bySlot))
	for k := range bySlot {
		slots = append(slots, k)
	}
	slices.Sort(slots)
	for _, k := range slots {
		s.P99ByInterval = append(s.P99ByInterval, float64(bySlot[k].ValueAtPercentile(99))/1e3)
	}
	return s, true, nil
}

func readIntervals(path string, fn func(Interval) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var iv Interval
		if err := json.Unmarshal(sc.Bytes(), &iv); err != nil {
			// A line being written is incomplete: ignore a bad last line.
			continue
		}
		if err := fn(iv); err != nil {
			return err
		}
	}
	return sc.Err()
}
