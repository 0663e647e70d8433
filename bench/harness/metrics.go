package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/proto/egretpb"
)

// Sample is one published value of a counter.
type Sample struct {
	At    time.Time
	Value float64
}

// Series are the samples of one counter of one task, in time order.
type Series []Sample

// errNoSamples says a series cannot answer for an instant.
var errNoSamples = errors.New("no metrics samples around that instant")

// At interpolates the counter linearly at t between the samples around it.
// t must lie within the series: a counter is not extrapolated.
func (s Series) At(t time.Time) (float64, error) {
	i := sort.Search(len(s), func(i int) bool { return !s[i].At.Before(t) })
	switch {
	case len(s) == 0 || i == len(s):
		return 0, errNoSamples
	case s[i].At.Equal(t):
		return s[i].Value, nil
	case i == 0:
		return 0, errNoSamples
	}
	a, b := s[i-1], s[i]
	f := float64(t.Sub(a.At)) / float64(b.At.Sub(a.At))
	return a.Value + f*(b.Value-a.Value), nil
}

// rate returns the counter's increase per second over [t0, t1]: from
// values interpolated at both ends when the series brackets them, else
// from the first and last samples within the interval when they span at
// least half of it. ok is false when neither is possible yet.
func (s Series) rate(t0, t1 time.Time) (v float64, ok bool) {
	if !t1.After(t0) {
		return 0, false
	}
	a, errA := s.At(t0)
	b, errB := s.At(t1)
	if errA == nil && errB == nil {
		return (b - a) / t1.Sub(t0).Seconds(), true
	}
	var in Series
	for _, x := range s {
		if !x.At.Before(t0) && !x.At.After(t1) {
			in = append(in, x)
		}
	}
	if len(in) < 2 {
		return 0, false
	}
	first, last := in[0], in[len(in)-1]
	if span := last.At.Sub(first.At); span*2 < t1.Sub(t0) {
		return 0, false
	}
	return (last.Value - first.Value) / last.At.Sub(first.At).Seconds(), true
}

// Last returns the latest sample, or false when there is none.
func (s Series) Last() (Sample, bool) {
	if len(s) == 0 {
		return Sample{}, false
	}
	return s[len(s)-1], true
}

// Source selects the reports of one kind of process in a metrics file.
type Source struct {
	// Kind is the report's source: "instance", "stmgr", ...
	Kind string
	// Component, for instances, selects one component's tasks.
	Component string
}

// ReadSeries reads a metrics file of a metrics manager (JSON lines of
// MetricsPublish) and returns the named metric of every process of src:
// by task id for instances, by container for other processes.
func ReadSeries(path string, src Source, metric string) (map[int]Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSeries(f, src, metric)
}

func readSeries(r io.Reader, src Source, metric string) (map[int]Series, error) {
	out := map[int]Series{}
	br := bufio.NewReaderSize(r, 64<<10)
	var m egretpb.MetricsPublish
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			// A line without its newline is being written: skip it.
			if uerr := protojson.Unmarshal(line, &m); uerr != nil {
				return nil, fmt.Errorf("metrics line %d: %w", n, uerr)
			}
			if m.GetSource() == src.Kind && (src.Component == "" || m.GetComponent() == src.Component) {
				key := int(m.GetContainer())
				if src.Kind == "instance" {
					key = int(m.GetTaskId())
				}
				for _, x := range m.GetMetrics() {
					if x.GetName() == metric {
						out[key] = append(out[key], Sample{At: time.Unix(0, m.GetUnixNanos()), Value: x.GetValue()})
						break
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	for task, s := range out {
		sort.SliceStable(s, func(i, j int) bool { return s[i].At.Before(s[j].At) })
		out[task] = s
	}
	return out, nil
}

// tailer follows a metrics file as it grows and collects one metric of
// one instance task.
type tailer struct {
	path   string
	task   int
	metric string
	off    int64
	rest   []byte
	series Series
}

// poll reads what was appended since the last poll.
func (t *tailer) poll() error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < t.off {
		// Rotated: start over.
		t.off, t.rest = 0, nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	t.off += int64(len(b))
	data := append(t.rest, b...)
	var m egretpb.MetricsPublish
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		if err := protojson.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("%s: %w", t.path, err)
		}
		if m.GetSource() != "instance" || int(m.GetTaskId()) != t.task {
			continue
		}
		for _, x := range m.GetMetrics() {
			if x.GetName() == t.metric {
				t.series = append(t.series, Sample{At: time.Unix(0, m.GetUnixNanos()), Value: x.GetValue()})
				break
			}
		}
	}
	t.rest = append([]byte(nil), data...)
	return nil
}

// next polls until a sample later than after arrives and returns it.
func (t *tailer) next(ctx context.Context, after, deadline time.Time) (Sample, error) {
	for {
		if err := t.poll(); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Sample{}, err
		}
		if s, ok := t.series.Last(); ok && s.At.After(after) {
			return s, nil
		}
		if time.Now().After(deadline) {
			return Sample{}, fmt.Errorf("task %d published no %s after %s in %s", t.task, t.metric, after.Format(time.RFC3339Nano), t.path)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return Sample{}, err
		}
	}
}

// interval is the median gap between the samples seen, or def.
func (t *tailer) interval(def time.Duration) time.Duration {
	var gaps []float64
	for i := 1; i < len(t.series); i++ {
		gaps = append(gaps, float64(t.series[i].At.Sub(t.series[i-1].At)))
	}
	if len(gaps) == 0 {
		return def
	}
	return time.Duration(Summarize(gaps).Median)
}
