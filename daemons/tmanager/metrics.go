package tmanager

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/egret-stream/egret/proto/egretpb"
)

// Bounds of the strings kept from metrics reports.
const (
	maxNameLen      = 256
	maxMessageLen   = 1 << 10
	maxStackLen     = 8 << 10
	maxComponentLen = 256
)

// metricsStore keeps the latest value of every metric of every source
// (one publishing process) and the latest distinct exceptions per
// component, within fixed bounds.
type metricsStore struct {
	maxSources, maxNames, maxExceptions int

	mu         sync.Mutex
	sources    map[sourceKey]*sourceMetrics
	exceptions map[string]map[exceptionKey]*exceptionEntry
	// Counters of what the bounds made us drop.
	droppedSources, droppedNames, droppedValues int64
	reports                                     int64
	seq                                         uint64
}

type sourceKey struct {
	source    string
	component string
	container int32
	task      int32
}

func (k sourceKey) isInstance() bool { return k.task > 0 && k.component != "" }

type sourceMetrics struct {
	unixNanos int64  // the report's timestamp
	seq       uint64 // order of reception, for eviction
	values    map[string]float64
}

type exceptionKey struct {
	task           int32
	message, stack string
}

type exceptionEntry struct {
	container             int32
	count                 int64
	firstNanos, lastNanos int64
	seq                   uint64
}

func newMetricsStore(l Limits) *metricsStore {
	return &metricsStore{
		maxSources: l.MaxMetricSources, maxNames: l.MaxMetricNames, maxExceptions: l.MaxExceptions,
		sources: map[sourceKey]*sourceMetrics{}, exceptions: map[string]map[exceptionKey]*exceptionEntry{},
	}
}

// add records one report.
func (s *metricsStore) add(m *egretpb.MetricsPublish, now time.Time) {
	k := sourceKey{source: truncate(m.GetSource(), maxNameLen), component: truncate(m.GetComponent(), maxComponentLen),
		container: m.GetContainer(), task: m.GetTaskId()}
	ts := m.GetUnixNanos()
	if ts <= 0 {
		ts = now.UnixNano()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports++
	s.seq++
	if len(m.GetMetrics()) > 0 {
		src := s.sources[k]
		if src == nil {
			if len(s.sources) >= s.maxSources {
				s.evictOldestSourceLocked()
			}
			src = &sourceMetrics{values: map[string]float64{}}
			s.sources[k] = src
		}
		src.unixNanos, src.seq = ts, s.seq
		for _, mt := range m.GetMetrics() {
			name, v := mt.GetName(), mt.GetValue()
			if name == "" || len(name) > maxNameLen || math.IsNaN(v) || math.IsInf(v, 0) {
				s.droppedValues++
				continue
			}
			if _, ok := src.values[name]; !ok && len(src.values) >= s.maxNames {
				s.droppedNames++
				continue
			}
			src.values[name] = v
		}
	}
	for _, e := range m.GetExceptions() {
		s.addExceptionLocked(k, e, ts)
	}
}

// setMaxSources changes the source bound, evicting the least recently
// updated sources beyond it.
func (s *metricsStore) setMaxSources(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxSources = n
	if len(s.sources) <= n {
		return
	}
	keys := slices.Collect(maps.Keys(s.sources))
	slices.SortFunc(keys, func(a, b sourceKey) int { return cmp.Compare(s.sources[a].seq, s.sources[b].seq) })
	for _, k := range keys[:len(keys)-n] {
		delete(s.sources, k)
		s.droppedSources++
	}
}

func (s *metricsStore) evictOldestSourceLocked() {
	var oldest sourceKey
	first := true
	var oldestSeq uint64
	for k, v := range s.sources {
		if first || v.seq < oldestSeq {
			oldest, oldestSeq, first = k, v.seq, false
		}
	}
	delete(s.sources, oldest)
	s.droppedSources++
}

func (s *metricsStore) addExceptionLocked(k sourceKey, e *egretpb.ExceptionReport, ts int64) {
	comp := k.component
	if comp == "" {
		comp = k.source
	}
	byKey := s.exceptions[comp]
	if byKey == nil {
		if len(s.exceptions) >= s.maxSources {
			s.droppedSources++
			return
		}
		byKey = map[exceptionKey]*exceptionEntry{}
		s.exceptions[comp] = byKey
	}
	ek := exceptionKey{task: k.task, message: truncate(e.GetMessage(), maxMessageLen), stack: truncate(e.GetStack(), maxStackLen)}
	at := e.GetUnixNanos()
	if at <= 0 {
		at = ts
	}
	n := e.GetCount()
	if n <= 0 {
		n = 1
	}
	ent := byKey[ek]
	if ent == nil {
		if len(byKey) >= s.maxExceptions {
			var oldest exceptionKey
			var oldestSeq uint64
			first := true
			for key, v := range byKey {
				if first || v.seq < oldestSeq {
					oldest, oldestSeq, first = key, v.seq, false
				}
			}
			delete(byKey, oldest)
		}
		ent = &exceptionEntry{container: k.container, firstNanos: at}
		byKey[ek] = ent
	}
	ent.count += n
	ent.lastNanos = max(ent.lastNanos, at)
	ent.firstNanos = min(ent.firstNanos, at)
	ent.seq = s.seq
}

// retainTasks forgets instance sources whose task is not in tasks (after a
// packing plan change removed them).
func (s *metricsStore) retainTasks(tasks map[int]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.sources {
		if k.isInstance() {
			if comp, ok := tasks[int(k.task)]; !ok || comp != k.component {
				delete(s.sources, k)
			}
		}
	}
}

// The JSON of GET /stats.
type statsJSON struct {
	Topology   string                         `json:"topology"`
	TopologyID string                         `json:"topology_id"`
	Components map[string]*componentStatsJSON `json:"components"`
	Containers map[string]map[string]valuesTS `json:"containers"`
	Totals     map[string]float64             `json:"totals"`
	Dropped    map[string]int64               `json:"dropped"`
	Reports    int64                          `json:"reports"`
}

type componentStatsJSON struct {
	Tasks map[string]*taskStatsJSON `json:"tasks"`
	Sums  map[string]float64        `json:"sums"`
}

type taskStatsJSON struct {
	Container int32 `json:"container"`
	// UnixNanos is the newest report of the task (instance or executor);
	// InstanceUnixNanos the instance's own last report, the time its
	// running totals (instance.*, process.*) were read: rates are
	// computed from it.
	UnixNanos         int64              `json:"unix_nanos"`
	InstanceUnixNanos int64              `json:"instance_unix_nanos,omitempty"`
	Metrics           map[string]float64 `json:"metrics"`
}

type valuesTS struct {
	UnixNanos int64              `json:"unix_nanos"`
	Metrics   map[string]float64 `json:"metrics"`
}

// stats aggregates the latest values: per task, summed per component, and
// summed over the topology's instances. components lists the topology's
// components so that those that never reported appear too.
func (s *metricsStore) stats(name, id string, components []string) *statsJSON {
	out := &statsJSON{Topology: name, TopologyID: id, Components: map[string]*componentStatsJSON{},
		Containers: map[string]map[string]valuesTS{}, Totals: map[string]float64{}}
	comp := func(c string) *componentStatsJSON {
		cs := out.Components[c]
		if cs == nil {
			cs = &componentStatsJSON{Tasks: map[string]*taskStatsJSON{}, Sums: map[string]float64{}}
			out.Components[c] = cs
		}
		return cs
	}
	for _, c := range components {
		comp(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, src := range s.sources {
		if k.isInstance() {
			// The instance and its executor (resource.* metrics)
			// both report for a task: their metrics are merged.
			cs := comp(k.component)
			tk := strconv.Itoa(int(k.task))
			ts := cs.Tasks[tk]
			if ts == nil {
				ts = &taskStatsJSON{Container: k.container, Metrics: make(map[string]float64, len(src.values))}
				cs.Tasks[tk] = ts
			}
			ts.UnixNanos = max(ts.UnixNanos, src.unixNanos)
			if k.source == "instance" {
				ts.InstanceUnixNanos = src.unixNanos
			}
			for n, v := range src.values {
				ts.Metrics[n] = v
				cs.Sums[n] += v
				out.Totals[n] += v
			}
			continue
		}
		ck := strconv.Itoa(int(k.container))
		if out.Containers[ck] == nil {
			out.Containers[ck] = map[string]valuesTS{}
		}
		label := k.source
		if label == "" {
			label = "unknown"
		}
		if k.component != "" {
			label += "/" + k.component
		}
		if k.task > 0 {
			label += "/" + strconv.Itoa(int(k.task))
		}
		vt := valuesTS{UnixNanos: src.unixNanos, Metrics: make(map[string]float64, len(src.values))}
		for n, v := range src.values {
			vt.Metrics[n] = v
		}
		out.Containers[ck][label] = vt
	}
	out.Reports = s.reports
	out.Dropped = map[string]int64{"sources": s.droppedSources, "metric_names": s.droppedNames, "values": s.droppedValues}
	return out
}

type exceptionJSON struct {
	Task       int32  `json:"task"`
	Container  int32  `json:"container"`
	Message    string `json:"message"`
	Stack      string `json:"stack,omitempty"`
	Count      int64  `json:"count"`
	FirstNanos int64  `json:"first_unix_nanos"`
	LastNanos  int64  `json:"last_unix_nanos"`
}

// exceptionsOf returns the latest distinct exceptions per component, most
// recent first, at most limit per component ("" component: all).
func (s *metricsStore) exceptionsOf(component string, limit int) map[string][]exceptionJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]exceptionJSON{}
	for comp, byKey := range s.exceptions {
		if component != "" && comp != component {
			continue
		}
		type row struct {
			e   exceptionJSON
			seq uint64
		}
		rows := make([]row, 0, len(byKey))
		for k, v := range byKey {
			rows = append(rows, row{exceptionJSON{Task: k.task, Container: v.container, Message: k.message, Stack: k.stack,
				Count: v.count, FirstNanos: v.firstNanos, LastNanos: v.lastNanos}, v.seq})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].seq > rows[j].seq })
		if limit > 0 && len(rows) > limit {
			rows = rows[:limit]
		}
		list := make([]exceptionJSON, len(rows))
		for i, r := range rows {
			list[i] = r.e
		}
		out[comp] = list
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
