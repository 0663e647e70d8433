package tracker

import (
	"maps"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/egret-stream/egret/daemons/wire"
)

// TimelineSeries are the series the timeline keeps per component and per
// task, in the order of a sample's values. Rates are per second over the
// interval that ends at the sample; latencies are the mean over that
// interval in milliseconds; busy is the share of that interval a task
// spent executing tuples (0..1; a component's is its busiest task's, as
// Flink's busy time); the others are levels.
var TimelineSeries = []string{
	"emit_rate", "execute_rate", "ack_rate", "fail_rate", "timeout_rate", "error_rate", "drop_rate",
	"execute_latency_ms", "complete_latency_ms", "cpu_cores", "rss_bytes", "pending_roots",
	"busy", "in_queue_bytes",
}

const nSeries = 14

// Series indexes the console reads.
const (
	sBusy    = 12
	sInQueue = 13
)

// executeNanos is the running total of the time spent executing tuples.
const executeNanos = "instance.execute.nanos"

// Raw metric names the series derive from.
var rateOf = [...]struct {
	series int
	metric string
}{
	{0, "instance.emitted"}, {1, "instance.executed"}, {2, "instance.acked"}, {3, "instance.failed"},
	{4, "instance.timed.out"}, {5, "instance.errors"}, {6, "instance.dropped"}, {9, "process.cpu.seconds"},
}

var latencyOf = [...]struct {
	series        int
	nanos, counts string
}{
	{7, "instance.execute.nanos", "instance.executed"},
	{8, "instance.complete.latency.nanos", "instance.complete.latency.count"},
}

var levelOf = [...]struct {
	series int
	metric string
}{{10, "process.rss.bytes"}, {11, "instance.pending.roots"}, {sInQueue, "gateway.in.queue.bytes"}}

// rawNames are the raw metrics kept between samples.
var rawNames = func() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, r := range rateOf {
		add(r.metric)
	}
	for _, l := range latencyOf {
		add(l.nanos)
		add(l.counts)
	}
	for _, l := range levelOf {
		add(l.metric)
	}
	for _, h := range histograms {
		for _, b := range wire.LatencyBucketNames {
			add(h + ".le." + b)
		}
	}
	return out
}()

type values [nSeries]float64

func nanValues() *values {
	var v values
	for i := range v {
		v[i] = math.NaN()
	}
	return &v
}

// sample is one point of a timeline.
type sample struct {
	at    time.Time
	comps map[string]*values
	tasks map[int]*values
}

// report is one task's running totals and levels as its instance read
// them at a time of its own.
type report struct {
	at time.Time
	m  map[string]float64
}

// raw is what one poll read of a topology: per task, its latest report.
type raw struct {
	at    time.Time
	tasks map[int]report
	comp  map[int]string
}

// procTrack follows one task's process across restarts.
type procTrack struct {
	pid, start float64
	restarts   int
	container  int
}

// topoTrack is the history of one topology (one submission).
//
// Rates are computed per task from two of its reports and their own
// timestamps, never from the times of the polls: instances report every
// export interval (10s by default) and the tracker polls at another pace
// (5s), so two polls may see the same report (no new information, not a
// rate of 0) or two reports apart (not twice the rate).
type topoTrack struct {
	id         string
	spouts     []string
	components []string
	fine       []sample
	coarse     []sample
	last       map[int]report // each task's newest report
	before     map[int]report // each task's report before that
	coarsePrev map[int]report // the reports at the last coarse sample
	coarseAt   time.Time      // the poll of the last coarse sample
	procs      map[int]*procTrack
	taskComp   map[int]string // each task's component at the last poll
	console    consoleTrack
}

// delta is cur-prev of a running total; a smaller value means the
// process restarted and counted from 0.
func delta(cur, prev float64) float64 {
	if cur >= prev {
		return cur - prev
	}
	return cur
}

// derive computes the sample at poll time at from each task's report in
// prev to its report in cur (the rates over the tasks' own intervals).
// A task with no earlier report, or the same one, has unknown rates, and
// so has a task whose newest report is stale (older than three of its
// intervals and 15s: its instance stopped reporting).
func derive(at time.Time, prev, cur map[int]report, comp map[int]string, components []string) sample {
	s := sample{at: at, comps: map[string]*values{}, tasks: map[int]*values{}}
	type acc struct {
		rates       [nSeries]float64
		has         [nSeries]bool
		busy        float64
		nanos, cnts [len(latencyOf)]float64
		levels      [nSeries]float64
	}
	accs := map[string]*acc{}
	for _, c := range components {
		accs[c] = &acc{}
	}
	for task, r := range cur {
		a := accs[comp[task]]
		if a == nil {
			continue
		}
		v := nanValues()
		p, ok := prev[task]
		dt := r.at.Sub(p.at).Seconds()
		stale := at.Sub(r.at).Seconds() > max(3*dt, 15)
		if ok && dt > 0 && !stale {
			m := r.m
			for _, rt := range rateOf {
				c, ok1 := m[rt.metric]
				o, ok2 := p.m[rt.metric]
				if ok1 && ok2 {
					d := delta(c, o)
					v[rt.series] = d / dt
					a.rates[rt.series] += d / dt
					a.has[rt.series] = true
				}
			}
			if c, ok := m[executeNanos]; ok {
				if o, ok := p.m[executeNanos]; ok {
					v[sBusy] = min(1, delta(c, o)/dt/1e9) // sampled: an estimate, one thread at most
					a.busy = max(a.busy, v[sBusy])
					a.has[sBusy] = true
				}
			}
			for i, l := range latencyOf {
				cn, ok1 := m[l.nanos]
				on, ok2 := p.m[l.nanos]
				cc, ok3 := m[l.counts]
				oc, ok4 := p.m[l.counts]
				if ok1 && ok2 && ok3 && ok4 {
					dn, dc := delta(cn, on), delta(cc, oc)
					a.nanos[i] += dn
					a.cnts[i] += dc
					a.has[l.series] = true
					if dc > 0 {
						v[l.series] = dn / dc / 1e6
					}
				}
			}
		}
		for _, l := range levelOf {
			if x, ok := r.m[l.metric]; ok {
				v[l.series] = x
				a.levels[l.series] += x
				a.has[l.series] = true
			}
		}
		s.tasks[task] = v
	}
	for c, a := range accs {
		v := nanValues()
		for _, r := range rateOf {
			if a.has[r.series] {
				v[r.series] = a.rates[r.series]
			}
		}
		for i, l := range latencyOf {
			if a.has[l.series] && a.cnts[i] > 0 {
				v[l.series] = a.nanos[i] / a.cnts[i] / 1e6
			}
		}
		for _, l := range levelOf {
			if a.has[l.series] {
				v[l.series] = a.levels[l.series]
			}
		}
		if a.has[sBusy] {
			v[sBusy] = a.busy
		}
		s.comps[c] = v
	}
	return s
}

// rawFromStats extracts the latest report of every task of a /stats
// answer, stamped with the instance's own report time (the poll's time
// when the topology manager gives none).
func rawFromStats(st *tmStats, at time.Time, maxTasks int) *raw {
	r := &raw{at: at, tasks: map[int]report{}, comp: map[int]string{}}
	comps := make([]string, 0, len(st.Components))
	for c := range st.Components {
		comps = append(comps, c)
	}
	sort.Strings(comps)
	for _, c := range comps {
		for tk, ts := range st.Components[c].Tasks {
			task, err := strconv.Atoi(tk)
			if err != nil || len(r.tasks) >= maxTasks {
				continue
			}
			m := make(map[string]float64, len(rawNames))
			for _, n := range rawNames {
				if v, ok := ts.Metrics[n]; ok {
					m[n] = v
				}
			}
			when := at
			switch {
			case ts.InstanceUnixNanos > 0:
				when = time.Unix(0, ts.InstanceUnixNanos)
			case ts.UnixNanos > 0:
				when = time.Unix(0, ts.UnixNanos)
			}
			r.tasks[task], r.comp[task] = report{at: when, m: m}, c
		}
	}
	return r
}

// record adds one poll to the track: a fine sample, a coarse one once a
// minute has passed since the last, and the restart counts.
func (tt *topoTrack) record(st *tmStats, at time.Time, o *Options) {
	cur := rawFromStats(st, at, o.MaxTasks)
	for c := range st.Components {
		if !contains(tt.components, c) {
			tt.components = append(tt.components, c)
			sort.Strings(tt.components)
		}
	}
	tt.taskComp = cur.comp
	tt.recordConsole(st, at, o.MaxTasks)
	tt.recordProcs(st, o, at)
	if tt.last == nil {
		tt.last, tt.before = map[int]report{}, map[int]report{}
	}
	newer := false
	for task, r := range cur.tasks {
		l, ok := tt.last[task]
		switch {
		case !ok:
			tt.last[task] = r
		case !r.at.Equal(l.at):
			tt.before[task], tt.last[task] = l, r
			newer = true
		}
	}
	for task := range tt.last {
		if _, ok := cur.tasks[task]; !ok { // gone (rescaled away)
			delete(tt.last, task)
			delete(tt.before, task)
		}
	}
	if newer || len(tt.fine) > 0 {
		tt.fine = appendRing(tt.fine, derive(at, tt.before, tt.last, cur.comp, tt.components), o.fineLen())
	}
	if tt.coarsePrev == nil {
		tt.coarsePrev, tt.coarseAt = maps.Clone(tt.last), at
	} else if at.Sub(tt.coarseAt) >= coarseStep {
		tt.coarse = appendRing(tt.coarse, derive(at, tt.coarsePrev, tt.last, cur.comp, tt.components), o.coarseLen())
		tt.coarsePrev, tt.coarseAt = maps.Clone(tt.last), at
	}
}

// recordProcs counts the restarts of every task's process.
func (tt *topoTrack) recordProcs(st *tmStats, o *Options, at time.Time) {
	for _, cs := range st.Components {
		for tk, ts := range cs.Tasks {
			task, err := strconv.Atoi(tk)
			if err != nil {
				continue
			}
			pid, ok1 := ts.Metrics["process.pid"]
			start, ok2 := ts.Metrics["process.start.unix"]
			if !ok1 || !ok2 {
				continue
			}
			p := tt.procs[task]
			if p == nil {
				if len(tt.procs) >= o.MaxTasks {
					continue
				}
				tt.procs[task] = &procTrack{pid: pid, start: start, container: int(ts.Container)}
				continue
			}
			if p.pid != pid || p.start != start {
				p.restarts++
				p.pid, p.start = pid, start
				rt := append(tt.console.restartTimes[task], at)
				if len(rt) > maxRestartTimes {
					rt = rt[len(rt)-maxRestartTimes:]
				}
				tt.console.restartTimes[task] = rt
			}
			p.container = int(ts.Container)
		}
	}
}

// coarseStep is the resolution of the coarse timeline.
const coarseStep = time.Minute

func appendRing(r []sample, s sample, n int) []sample {
	if len(r) >= n {
		copy(r, r[len(r)-n+1:])
		r = r[:n-1]
	}
	return append(r, s)
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// point is a value of the timeline JSON: null for an unknown value.
func point(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
