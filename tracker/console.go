package tracker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/wire"
)

// The console's views of one topology, computed from the samples the
// tracker keeps (see topoTrack): /topologies/overview (the health signal,
// every component's rates, busy-ness and back pressure, every container's
// CPU and memory), /topologies/component (the per-task table) and
// /topologies/checkpoints (the history of an effectively-once topology's
// checkpoints).

// histograms are the latency histograms instances publish
// (<name>.le.<bucket>, running counts per bucket; see daemons/wire).
var histograms = [...]string{"instance.execute.latency", "instance.complete.latency"}

// Metric names of the daemons the console reads.
const (
	mThrottled     = "stmgr.backpressure.time.throttled.ns"
	mBPActive      = "stmgr.backpressure.active"
	mBPByLocal     = "stmgr.backpressure.time.by.local.instance.ns"
	mCPUSeconds    = "process.cpu.seconds"
	mRSS           = "process.rss.bytes"
	mOOMKills      = "resource.memory.oom.kills"
	mThrottledSecs = "resource.cpu.throttled.seconds"
	mMemLimit      = "resource.memory.limit.bytes"
	stmgrTask      = "stmgr.instance."
	queueSuffix    = ".queue.bytes"
	ckptPrefix     = "checkpoint."
)

// Health levels, worst last.
const (
	healthUnknown  = "unknown"
	healthHealthy  = "healthy"
	healthWarning  = "warning"
	healthCritical = "critical"
)

// Thresholds of the health signal.
const (
	// recentWindow is how far back restarts and exceptions count as
	// recent.
	recentWindow = 10 * time.Minute
	// crashLoop restarts of one component within recentWindow are
	// critical.
	crashLoop = 3
	// maxCheckpoints and maxCheckpointEvents bound the history.
	maxCheckpoints      = 120
	maxCheckpointEvents = 120
	// maxRestartTimes bounds the restart times kept per task.
	maxRestartTimes = 16
)

// daemonKey names one daemon process of a container in /stats:
// container and label ("stmgr", "executor", "tmanager", ...).
type daemonKey struct {
	container int
	label     string
}

// checkpointJSON is one completed checkpoint as the tracker saw it.
type checkpointJSON struct {
	ID            int64   `json:"id"`
	CompletedUnix float64 `json:"completed_unix"`
	DurationMs    float64 `json:"duration_ms"`
	// AlignmentMs is the longest barrier alignment of a task.
	AlignmentMs float64 `json:"alignment_ms"`
	SizeBytes   float64 `json:"size_bytes"`
}

// checkpointEventJSON is a change of a checkpoint counter between two
// samples: checkpoints aborted or failed, restores.
type checkpointEventJSON struct {
	Unix  float64 `json:"unix"`
	Kind  string  `json:"kind"`
	Count float64 `json:"count"`
}

// consoleTrack is what the console keeps of a topology beyond the
// timeline: the latest /stats answer, the daemons' last two reports, and
// the checkpoint history.
type consoleTrack struct {
	stats          *tmStats
	statsAt        time.Time
	dlast, dbefore map[daemonKey]report
	checkpoints    []checkpointJSON
	ckptEvents     []checkpointEventJSON
	ckptLastID     float64
	ckptCounters   map[string]float64
	tlast, tbefore map[int]report // every task's full reports (for histograms and totals)
	restartTimes   map[int][]time.Time
}

// recordConsole keeps what the console needs of one poll.
func (tt *topoTrack) recordConsole(st *tmStats, at time.Time, maxTasks int) {
	c := &tt.console
	if c.dlast == nil {
		c.dlast, c.dbefore = map[daemonKey]report{}, map[daemonKey]report{}
		c.tlast, c.tbefore = map[int]report{}, map[int]report{}
		c.restartTimes = map[int][]time.Time{}
	}
	c.stats, c.statsAt = st, at
	seen := map[daemonKey]bool{}
	for ck, srcs := range st.Containers {
		ct, err := strconv.Atoi(ck)
		if err != nil {
			continue
		}
		for label, r := range srcs {
			k := daemonKey{ct, label}
			seen[k] = true
			shift(c.dlast, c.dbefore, k, report{at: time.Unix(0, r.UnixNanos), m: r.Metrics})
		}
	}
	for k := range c.dlast {
		if !seen[k] {
			delete(c.dlast, k)
			delete(c.dbefore, k)
		}
	}
	tasks := map[int]bool{}
	for _, cs := range st.Components {
		for tk, ts := range cs.Tasks {
			task, err := strconv.Atoi(tk)
			if err != nil || len(tasks) >= maxTasks {
				continue
			}
			tasks[task] = true
			when := time.Unix(0, ts.UnixNanos)
			if ts.InstanceUnixNanos > 0 {
				when = time.Unix(0, ts.InstanceUnixNanos)
			}
			shift(c.tlast, c.tbefore, task, report{at: when, m: ts.Metrics})
		}
	}
	for k := range c.tlast {
		if !tasks[k] {
			delete(c.tlast, k)
			delete(c.tbefore, k)
		}
	}
	c.recordCheckpoints(at)
}

// shift makes r the newest report of k when it is newer than the last.
func shift[K comparable](last, before map[K]report, k K, r report) {
	l, ok := last[k]
	switch {
	case !ok:
		last[k] = r
	case !r.at.Equal(l.at):
		before[k], last[k] = l, r
	}
}

// recordCheckpoints adds a newly completed checkpoint to the history and
// the counters that moved to the events.
func (c *consoleTrack) recordCheckpoints(at time.Time) {
	tm, ok := c.dlast[daemonKey{0, "tmanager"}]
	if !ok {
		return
	}
	m := tm.m
	if id, ok := m["checkpoint.last.complete.id"]; ok && id > c.ckptLastID {
		completed := tm.at.Add(-time.Duration(m["checkpoint.last.complete.age.seconds"] * float64(time.Second)))
		c.checkpoints = append(c.checkpoints, checkpointJSON{ID: int64(id), CompletedUnix: unixSeconds(completed),
			DurationMs: m["checkpoint.last.duration.ms"], AlignmentMs: m["checkpoint.last.alignment.ms"], SizeBytes: m["checkpoint.last.size.bytes"]})
		if len(c.checkpoints) > maxCheckpoints {
			c.checkpoints = slices.Delete(c.checkpoints, 0, len(c.checkpoints)-maxCheckpoints)
		}
		c.ckptLastID = id
	}
	if c.ckptCounters != nil {
		for _, kind := range []string{"aborted", "failed", "restores", "restore.failures"} {
			name := ckptPrefix + kind
			if d := m[name] - c.ckptCounters[name]; d > 0 {
				c.ckptEvents = append(c.ckptEvents, checkpointEventJSON{Unix: unixSeconds(at), Kind: kind, Count: d})
			}
		}
		if len(c.ckptEvents) > maxCheckpointEvents {
			c.ckptEvents = slices.Delete(c.ckptEvents, 0, len(c.ckptEvents)-maxCheckpointEvents)
		}
	}
	c.ckptCounters = map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, ckptPrefix) {
			c.ckptCounters[k] = v
		}
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1e3 }

// rateOver is the per-second change of a running total between two
// reports; ok is false when either lacks it or no time passed.
func rateOver(prev, cur report, name string) (float64, bool) {
	c, ok1 := cur.m[name]
	p, ok2 := prev.m[name]
	dt := cur.at.Sub(prev.at).Seconds()
	if !ok1 || !ok2 || dt <= 0 {
		return 0, false
	}
	return delta(c, p) / dt, true
}

// percentiles returns the p50, p90 and p99 (milliseconds) of a histogram
// between two reports (or since the process started when prev has no
// buckets), interpolated within the bucket; nil when nothing was counted.
func percentiles(prev, cur map[string]float64, hist string) map[string]float64 {
	n := len(wire.LatencyBucketNames)
	counts := make([]float64, n)
	var total float64
	for i, b := range wire.LatencyBucketNames {
		name := hist + ".le." + b
		c, ok := cur[name]
		if !ok {
			return nil
		}
		counts[i] = c
		if p, ok := prev[name]; ok {
			counts[i] = delta(c, p)
		}
		total += counts[i]
	}
	if total <= 0 {
		return nil
	}
	out := map[string]float64{}
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}} {
		want := q.q * total
		var seen float64
		for i, c := range counts {
			if seen+c < want || c == 0 {
				seen += c
				continue
			}
			lo, hi := 0.0, 0.0
			if i > 0 {
				lo = float64(wire.LatencyBounds[i-1]) / 1e6
			}
			if i < len(wire.LatencyBounds) {
				hi = float64(wire.LatencyBounds[i]) / 1e6
			} else {
				hi = lo // beyond the last bound: its lower bound
			}
			out[q.name] = lo + (hi-lo)*(want-seen)/c
			break
		}
	}
	return out
}

// ---- /topologies/overview

type healthJSON struct {
	Level   string   `json:"level"`
	Reasons []string `json:"reasons"`
}

type backPressureJSON struct {
	Active     bool     `json:"active"`
	Containers []int    `json:"containers"`
	Culprits   []string `json:"culprits"`
}

type checkpointSummaryJSON struct {
	LastID          int64   `json:"last_id"`
	AgeSeconds      float64 `json:"age_seconds"`
	DurationMs      float64 `json:"duration_ms"`
	AlignmentMs     float64 `json:"alignment_ms"`
	SizeBytes       float64 `json:"size_bytes"`
	Completed       float64 `json:"completed"`
	Failed          float64 `json:"failed"`
	Aborted         float64 `json:"aborted"`
	Restores        float64 `json:"restores"`
	IntervalSeconds float64 `json:"interval_seconds"`
}

// componentStatusJSON is one component's line of the overview: figures
// of the latest sample (null when unknown).
type componentStatusJSON struct {
	Name              string   `json:"name"`
	Kind              string   `json:"kind"`
	Parallelism       int      `json:"parallelism"`
	Reporting         int      `json:"reporting"`
	EmitRate          *float64 `json:"emit_rate"`
	ExecuteRate       *float64 `json:"execute_rate"`
	AckRate           *float64 `json:"ack_rate"`
	FailRate          *float64 `json:"fail_rate"`
	ExecuteLatencyMs  *float64 `json:"execute_latency_ms"`
	CompleteLatencyMs *float64 `json:"complete_latency_ms"`
	// Busy is the busiest task's share of time executing (0..1).
	Busy *float64 `json:"busy"`
	// BackPressure is the share of the last interval during which this
	// component's tasks (bolts) caused back pressure, or (spouts) were
	// throttled by it (0..1); BackPressureNow whether it does now.
	BackPressure    float64  `json:"backpressure"`
	BackPressureNow bool     `json:"backpressure_now"`
	InQueueBytes    *float64 `json:"in_queue_bytes"`
	CPUCores        *float64 `json:"cpu_cores"`
	RSSBytes        *float64 `json:"rss_bytes"`
	Restarts        int      `json:"restarts"`
	RecentRestarts  int      `json:"recent_restarts"`
	OOMKills        float64  `json:"oom_kills"`
	Exceptions      int64    `json:"exceptions"`
}

// containerStatusJSON is one container's resources: every process of it
// (instances and daemons) summed.
type containerStatusJSON struct {
	ID               int      `json:"id"`
	Instances        int      `json:"instances"`
	CPUCores         *float64 `json:"cpu_cores"`
	RSSBytes         float64  `json:"rss_bytes"`
	MemoryLimitBytes float64  `json:"memory_limit_bytes"`
	OOMKills         float64  `json:"oom_kills"`
	// ThrottledCores is the CPU time the cgroups of its instances were
	// throttled, per second.
	ThrottledCores  *float64          `json:"throttled_cores"`
	BackPressure    float64           `json:"backpressure"`
	BackPressureNow bool              `json:"backpressure_now"`
	Processes       []processStatJSON `json:"processes"`
}

type processStatJSON struct {
	Name     string   `json:"name"`
	CPUCores *float64 `json:"cpu_cores"`
	RSSBytes float64  `json:"rss_bytes"`
}

// bpShares computes the back pressure of the last interval of each
// stream manager: the share of time it throttled its spouts, and the
// share a local instance caused, attributed (as the health manager does)
// to the bolt task with the most bytes queued toward and in it.
func (c *consoleTrack) bpShares(kinds map[string]topology.Kind) (throttled map[int]float64, now map[int]bool, caused map[string]float64, causedNow map[string]bool) {
	throttled, now = map[int]float64{}, map[int]bool{}
	caused, causedNow = map[string]float64{}, map[string]bool{}
	if c.stats == nil {
		return
	}
	for k, r := range c.dlast {
		if k.label != "stmgr" {
			continue
		}
		now[k.container] = r.m[mBPActive] == 1
		p, ok := c.dbefore[k]
		if !ok {
			continue
		}
		if v, ok := rateOver(p, r, mThrottled); ok {
			throttled[k.container] = min(1, v/1e9)
		}
		local, _ := rateOver(p, r, mBPByLocal)
		if local <= 0 && !now[k.container] {
			continue
		}
		best, bestBytes, bestComp := -1, 0.0, ""
		for comp, cs := range c.stats.Components {
			if kinds[comp] != topology.Bolt {
				continue
			}
			for tk, ts := range cs.Tasks {
				task, err := strconv.Atoi(tk)
				if err != nil || int(ts.Container) != k.container {
					continue
				}
				b := r.m[stmgrTask+tk+queueSuffix] + ts.Metrics["gateway.in.queue.bytes"]
				if b > bestBytes || (b == bestBytes && best >= 0 && task < best) {
					best, bestBytes, bestComp = task, b, comp
				}
			}
		}
		if best < 0 || bestBytes == 0 {
			continue
		}
		caused[bestComp] = max(caused[bestComp], min(1, local/1e9))
		if now[k.container] {
			causedNow[bestComp] = true
		}
	}
	return
}

func ptr(v float64) *float64 { return point(v) }

// overview builds the overview of the track (the caller holds t.mu).
func (t *Tracker) overviewLocked(tt *topoTrack, r *resolved, state string, exc []exceptionJSON, now time.Time) map[string]any {
	kinds := map[string]topology.Kind{}
	for _, c := range r.topo.Components {
		kinds[c.Name] = c.Kind
	}
	var last *sample
	c := &consoleTrack{}
	if tt != nil {
		c = &tt.console
		if len(tt.fine) > 0 {
			last = &tt.fine[len(tt.fine)-1]
		}
	}
	throttled, bpNow, caused, causedNow := c.bpShares(kinds)
	// Which containers run each component's tasks.
	compContainers := map[string][]int{}
	if c.stats != nil {
		for comp, cs := range c.stats.Components {
			for _, ts := range cs.Tasks {
				if !slices.Contains(compContainers[comp], int(ts.Container)) {
					compContainers[comp] = append(compContainers[comp], int(ts.Container))
				}
			}
		}
	}
	excByComp := map[string]int64{}
	var excTotal, excRecent int64
	for _, e := range exc {
		excByComp[e.Component] += e.Count
		excTotal += e.Count
		if now.Sub(time.Unix(0, e.Last)) < recentWindow {
			excRecent += e.Count
		}
	}
	comps := []componentStatusJSON{}
	restartsTotal := 0
	health := healthJSON{Level: healthHealthy, Reasons: []string{}}
	raise := func(level, reason string) {
		if rank(level) > rank(health.Level) {
			health.Level = level
		}
		health.Reasons = append(health.Reasons, reason)
	}
	for _, comp := range r.topo.Components {
		cs := componentStatusJSON{Name: comp.Name, Kind: comp.Kind.String(), Parallelism: comp.Parallelism, Exceptions: excByComp[comp.Name]}
		if last != nil {
			if v := last.comps[comp.Name]; v != nil {
				cs.EmitRate, cs.ExecuteRate, cs.AckRate, cs.FailRate = ptr(v[0]), ptr(v[1]), ptr(v[2]), ptr(v[3])
				cs.ExecuteLatencyMs, cs.CompleteLatencyMs = ptr(v[7]), ptr(v[8])
				cs.CPUCores, cs.RSSBytes, cs.Busy, cs.InQueueBytes = ptr(v[9]), ptr(v[10]), ptr(v[sBusy]), ptr(v[sInQueue])
			}
			for task, v := range last.tasks {
				if tt.compOf(task) == comp.Name && !math.IsNaN(v[0]+v[1]) {
					cs.Reporting++
				}
			}
		}
		if tt != nil {
			for task, p := range tt.procs {
				if tt.compOf(task) != comp.Name {
					continue
				}
				cs.Restarts += p.restarts
				for _, at := range c.restartTimes[task] {
					if now.Sub(at) < recentWindow {
						cs.RecentRestarts++
					}
				}
			}
			for task, rep := range c.tlast {
				if tt.compOf(task) == comp.Name {
					cs.OOMKills += rep.m[mOOMKills]
				}
			}
		}
		if comp.Kind == topology.Bolt {
			cs.BackPressure, cs.BackPressureNow = caused[comp.Name], causedNow[comp.Name]
		} else {
			for _, ct := range compContainers[comp.Name] {
				cs.BackPressure = max(cs.BackPressure, throttled[ct])
				cs.BackPressureNow = cs.BackPressureNow || bpNow[ct]
			}
		}
		restartsTotal += cs.Restarts
		switch {
		case cs.RecentRestarts >= crashLoop:
			raise(healthCritical, fmt.Sprintf("%s restarted %d times in the last %s", comp.Name, cs.RecentRestarts, recentWindow))
		case cs.Restarts > 0:
			raise(healthWarning, fmt.Sprintf("%s restarted %d time(s) since the tracker started watching", comp.Name, cs.Restarts))
		}
		if cs.OOMKills > 0 {
			raise(healthWarning, fmt.Sprintf("%s: %.0f instance run(s) killed for exceeding the memory limit", comp.Name, cs.OOMKills))
		}
		if last != nil && state == "running" && cs.Reporting == 0 {
			raise(healthCritical, fmt.Sprintf("%s: none of its %d task(s) reports metrics", comp.Name, comp.Parallelism))
		} else if last != nil && state == "running" && cs.Reporting < comp.Parallelism {
			raise(healthWarning, fmt.Sprintf("%s: %d of its %d task(s) report metrics", comp.Name, cs.Reporting, comp.Parallelism))
		}
		if cs.FailRate != nil && *cs.FailRate > 0 {
			raise(healthWarning, fmt.Sprintf("%s fails %.1f tuple(s)/s", comp.Name, *cs.FailRate))
		}
		comps = append(comps, cs)
	}
	bp := backPressureJSON{Containers: []int{}, Culprits: []string{}}
	for ct, on := range bpNow {
		if on {
			bp.Active = true
			bp.Containers = append(bp.Containers, ct)
		}
	}
	sort.Ints(bp.Containers)
	for comp, on := range causedNow {
		if on {
			bp.Culprits = append(bp.Culprits, comp)
		}
	}
	sort.Strings(bp.Culprits)
	if bp.Active {
		who := "a slow peer or an unnamed cause"
		if len(bp.Culprits) > 0 {
			who = strings.Join(bp.Culprits, ", ")
		}
		raise(healthWarning, fmt.Sprintf("back pressure now in container(s) %s, caused by %s", joinInts(bp.Containers), who))
	}
	if excRecent > 0 {
		raise(healthWarning, fmt.Sprintf("%d exception(s) in the last %s", excRecent, recentWindow))
	}
	var ckpt *checkpointSummaryJSON
	if r.topo.DeliveryMode() == topology.EffectivelyOnce {
		ckpt = &checkpointSummaryJSON{IntervalSeconds: r.topo.CheckpointInterval().Seconds()}
		if tm, ok := c.dlast[daemonKey{0, "tmanager"}]; ok {
			m := tm.m
			ckpt.LastID, ckpt.AgeSeconds = int64(m["checkpoint.last.complete.id"]), m["checkpoint.last.complete.age.seconds"]
			ckpt.DurationMs, ckpt.AlignmentMs, ckpt.SizeBytes = m["checkpoint.last.duration.ms"], m["checkpoint.last.alignment.ms"], m["checkpoint.last.size.bytes"]
			ckpt.Completed, ckpt.Failed, ckpt.Aborted, ckpt.Restores = m["checkpoint.completed"], m["checkpoint.failed"], m["checkpoint.aborted"], m["checkpoint.restores"]
			if state == "running" && ckpt.LastID > 0 && ckpt.AgeSeconds > max(3*ckpt.IntervalSeconds, 30) {
				raise(healthWarning, fmt.Sprintf("the last complete checkpoint is %.0fs old (interval %.0fs)", ckpt.AgeSeconds, ckpt.IntervalSeconds))
			}
		}
		for _, e := range c.ckptEvents {
			if now.Sub(time.UnixMilli(int64(e.Unix*1e3))) < recentWindow && e.Kind != "restores" {
				raise(healthWarning, fmt.Sprintf("checkpoints %s in the last %s", e.Kind, recentWindow))
				break
			}
		}
	}
	switch state {
	case "running":
	case "deactivated":
		raise(healthWarning, "deactivated: the spouts emit nothing")
	case "starting":
		raise(healthWarning, "starting: not every container has registered yet")
	default:
		raise(healthCritical, "state "+state)
	}
	if last == nil && state == "running" {
		raise(healthUnknown, "no metrics sampled yet")
	}
	containers := t.containerStatusLocked(tt, throttled, bpNow)
	out := map[string]any{
		"cluster": "", "topology": r.topo.Name, "id": r.topo.ID, "state": state, "health": health,
		"submitted_unix": r.es.GetSubmitTimeUnix(), "delivery_mode": string(r.topo.DeliveryMode()),
		"restarts": restartsTotal, "backpressure": bp, "checkpoints": ckpt,
		"exceptions": map[string]int64{"total": excTotal, "recent": excRecent},
		"components": comps, "containers": containers, "sampled_unix": nil,
	}
	if sub := r.es.GetSubmitTimeUnix(); sub > 0 {
		out["uptime_seconds"] = math.Max(0, now.Sub(time.Unix(sub, 0)).Seconds())
	} else {
		out["uptime_seconds"] = nil
	}
	if last != nil {
		out["sampled_unix"] = unixSeconds(last.at)
	}
	return out
}

// rank orders the health levels; unknown ranks between healthy and
// warning (a topology with no metrics is not green).
func rank(level string) int {
	switch level {
	case healthHealthy:
		return 0
	case healthUnknown:
		return 1
	case healthWarning:
		return 2
	}
	return 3
}

func joinInts(s []int) string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Itoa(v)
	}
	return strings.Join(out, ", ")
}

// compOf is the component of a task as the last poll saw it.
func (tt *topoTrack) compOf(task int) string {
	if tt.taskComp == nil {
		return ""
	}
	return tt.taskComp[task]
}

// containerStatusLocked sums every container's processes.
func (t *Tracker) containerStatusLocked(tt *topoTrack, throttled map[int]float64, bpNow map[int]bool) []containerStatusJSON {
	out := []containerStatusJSON{}
	if tt == nil || tt.console.stats == nil {
		return out
	}
	c := &tt.console
	by := map[int]*containerStatusJSON{}
	get := func(id int) *containerStatusJSON {
		x := by[id]
		if x == nil {
			x = &containerStatusJSON{ID: id, Processes: []processStatJSON{}}
			by[id] = x
		}
		return x
	}
	addCPU := func(x *containerStatusJSON, v float64, ok bool) {
		if !ok {
			return
		}
		if x.CPUCores == nil {
			x.CPUCores = new(float64)
		}
		*x.CPUCores += v
	}
	for task, r := range c.tlast {
		ct := int(c.stats.taskContainer(task))
		x := get(ct)
		x.Instances++
		x.RSSBytes += r.m[mRSS]
		x.OOMKills += r.m[mOOMKills]
		x.MemoryLimitBytes += r.m[mMemLimit]
		p, ok := c.tbefore[task]
		var cpu float64
		if ok {
			cpu, ok = rateOver(p, r, mCPUSeconds)
			if th, ok2 := rateOver(p, r, mThrottledSecs); ok2 {
				if x.ThrottledCores == nil {
					x.ThrottledCores = new(float64)
				}
				*x.ThrottledCores += th
			}
		}
		addCPU(x, cpu, ok)
	}
	for k, r := range c.dlast {
		x := get(k.container)
		x.RSSBytes += r.m[mRSS]
		ps := processStatJSON{Name: k.label, RSSBytes: r.m[mRSS]}
		if p, ok := c.dbefore[k]; ok {
			if v, ok := rateOver(p, r, mCPUSeconds); ok {
				ps.CPUCores = &v
				addCPU(x, v, true)
			}
		}
		x.Processes = append(x.Processes, ps)
	}
	for id, x := range by {
		x.BackPressure, x.BackPressureNow = throttled[id], bpNow[id]
		sort.Slice(x.Processes, func(i, j int) bool { return x.Processes[i].Name < x.Processes[j].Name })
		out = append(out, *x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// taskContainer is the container of a task in the stats.
func (st *tmStats) taskContainer(task int) int32 {
	tk := strconv.Itoa(task)
	for _, cs := range st.Components {
		if ts, ok := cs.Tasks[tk]; ok {
			return ts.Container
		}
	}
	return -1
}

func (t *Tracker) overviewEP(ctx context.Context, q *query) (any, error) {
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	state := "unknown"
	if infos, err := q.cluster.topologies(ctx, t.opts.ListCache); err == nil {
		for _, i := range infos {
			if i.Name == q.name {
				state = i.State
			}
		}
	}
	// Exceptions are read live; a topology manager that does not answer
	// leaves them out (and says so in the health).
	var exc []exceptionJSON
	var excErr error
	if state == "running" || state == "deactivated" {
		exc, excErr = t.exceptionList(ctx, q)
	}
	t.mu.Lock()
	tt := t.tracks[trackKey{q.cluster.name, q.name}]
	if tt != nil && tt.id != r.topo.ID {
		tt = nil
	}
	out := t.overviewLocked(tt, r, state, exc, t.opts.Now())
	t.mu.Unlock()
	out["cluster"] = q.cluster.name
	if excErr != nil {
		h := out["health"].(healthJSON)
		h.Reasons = append(h.Reasons, "exceptions unknown: "+oneLine(excErr.Error()))
		if rank(h.Level) < rank(healthWarning) {
			h.Level = healthWarning
		}
		out["health"] = h
	}
	return out, nil
}

// ---- /topologies/component

// taskRowJSON is one task of the component page.
type taskRowJSON struct {
	Task         int      `json:"task"`
	Container    int      `json:"container"`
	Reporting    bool     `json:"reporting"`
	ReportedUnix *float64 `json:"reported_unix"`
	Pid          int      `json:"pid"`
	StartedUnix  float64  `json:"started_unix"`
	Restarts     int      `json:"restarts"`
	// Running totals since the process started.
	Emitted  float64 `json:"emitted"`
	Executed float64 `json:"executed"`
	Acked    float64 `json:"acked"`
	Failed   float64 `json:"failed"`
	// Rates and levels of the latest sample; null when unknown.
	EmitRate    *float64 `json:"emit_rate"`
	ExecuteRate *float64 `json:"execute_rate"`
	AckRate     *float64 `json:"ack_rate"`
	FailRate    *float64 `json:"fail_rate"`
	Busy        *float64 `json:"busy"`
	// Latencies in milliseconds: the mean of the latest sample, and
	// p50/p90/p99 of the task's last report interval.
	ExecuteLatencyMs   *float64           `json:"execute_latency_ms"`
	ExecutePercentile  map[string]float64 `json:"execute_latency_percentiles_ms"`
	CompleteLatencyMs  *float64           `json:"complete_latency_ms"`
	CompletePercentile map[string]float64 `json:"complete_latency_percentiles_ms"`
	// Queues: bytes the stream manager holds toward the task, bytes in
	// the instance's in and out queues, roots awaiting acks.
	StmgrQueueBytes  float64  `json:"stmgr_queue_bytes"`
	InQueueBytes     float64  `json:"in_queue_bytes"`
	OutQueueBytes    float64  `json:"out_queue_bytes"`
	PendingRoots     float64  `json:"pending_roots"`
	CPUCores         *float64 `json:"cpu_cores"`
	RSSBytes         float64  `json:"rss_bytes"`
	MemoryLimitBytes float64  `json:"memory_limit_bytes"`
	OOMKills         float64  `json:"oom_kills"`
	Exceptions       int64    `json:"exceptions"`
	// Checkpoint holds the task's checkpoint metrics (instance.checkpoint.*
	// and state.*), when it publishes any.
	Checkpoint map[string]float64 `json:"checkpoint"`
}

func (t *Tracker) componentEP(ctx context.Context, q *query) (any, error) {
	if q.component == "" {
		return nil, badRequest("query parameter component is required")
	}
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	comp, _ := r.topo.Component(q.component)
	pp, err := t.packing(ctx, q)
	if err != nil {
		return nil, err
	}
	excByTask := map[int]int64{}
	if exc, err := t.exceptionList(ctx, q); err == nil {
		for _, e := range exc {
			excByTask[int(e.Task)] += e.Count
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tt := t.tracks[trackKey{q.cluster.name, q.name}]
	if tt != nil && tt.id != r.topo.ID {
		tt = nil
	}
	var last *sample
	c := &consoleTrack{}
	if tt != nil {
		c = &tt.console
		if len(tt.fine) > 0 {
			last = &tt.fine[len(tt.fine)-1]
		}
	}
	rows := []taskRowJSON{}
	for _, pc := range pp.Containers {
		for _, in := range pc.Instances {
			if in.Component != q.component {
				continue
			}
			row := taskRowJSON{Task: in.TaskID, Container: pc.ID, Exceptions: excByTask[in.TaskID]}
			if tt != nil {
				if p, ok := tt.procs[in.TaskID]; ok {
					row.Pid, row.StartedUnix, row.Restarts = int(p.pid), p.start, p.restarts
				}
			}
			if last != nil {
				if v := last.tasks[in.TaskID]; v != nil {
					row.EmitRate, row.ExecuteRate, row.AckRate, row.FailRate = ptr(v[0]), ptr(v[1]), ptr(v[2]), ptr(v[3])
					row.ExecuteLatencyMs, row.CompleteLatencyMs, row.CPUCores, row.Busy = ptr(v[7]), ptr(v[8]), ptr(v[9]), ptr(v[sBusy])
					row.Reporting = !math.IsNaN(v[0] + v[1])
				}
			}
			if rep, ok := c.tlast[in.TaskID]; ok {
				m := rep.m
				at := unixSeconds(rep.at)
				row.ReportedUnix = &at
				row.Emitted, row.Executed, row.Acked, row.Failed = m["instance.emitted"], m["instance.executed"], m["instance.acked"], m["instance.failed"]
				row.InQueueBytes, row.OutQueueBytes, row.PendingRoots = m["gateway.in.queue.bytes"], m["gateway.out.queue.bytes"], m["instance.pending.roots"]
				row.RSSBytes, row.MemoryLimitBytes, row.OOMKills = m[mRSS], m[mMemLimit], m[mOOMKills]
				var prev map[string]float64
				if b, ok := c.tbefore[in.TaskID]; ok {
					prev = b.m
				}
				row.ExecutePercentile = percentiles(prev, m, histograms[0])
				row.CompletePercentile = percentiles(prev, m, histograms[1])
				for k, v := range m {
					if strings.HasPrefix(k, "instance.checkpoint.") || strings.HasPrefix(k, "state.") {
						if row.Checkpoint == nil {
							row.Checkpoint = map[string]float64{}
						}
						row.Checkpoint[k] = v
					}
				}
			}
			if sm, ok := c.dlast[daemonKey{pc.ID, "stmgr"}]; ok {
				row.StmgrQueueBytes = sm.m[stmgrTask+strconv.Itoa(in.TaskID)+queueSuffix]
			}
			rows = append(rows, row)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Task < rows[j].Task })
	out := map[string]any{"cluster": q.cluster.name, "topology": q.name, "id": r.topo.ID, "component": comp.Name,
		"kind": comp.Kind.String(), "parallelism": comp.Parallelism, "tasks": rows, "sampled_unix": nil}
	if last != nil {
		out["sampled_unix"] = unixSeconds(last.at)
	}
	return out, nil
}

// ---- /topologies/checkpoints

func (t *Tracker) checkpointsEP(ctx context.Context, q *query) (any, error) {
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]any{"cluster": q.cluster.name, "topology": q.name, "id": r.topo.ID,
		"enabled": r.topo.DeliveryMode() == topology.EffectivelyOnce, "interval_seconds": 0.0,
		"counters": map[string]float64{}, "history": []checkpointJSON{}, "events": []checkpointEventJSON{}, "tasks": []any{}}
	if r.topo.DeliveryMode() != topology.EffectivelyOnce {
		return out, nil
	}
	out["interval_seconds"] = r.topo.CheckpointInterval().Seconds()
	tt := t.tracks[trackKey{q.cluster.name, q.name}]
	if tt == nil || tt.id != r.topo.ID {
		return out, nil
	}
	c := &tt.console
	counters := map[string]float64{}
	for k, v := range c.ckptCounters {
		counters[strings.TrimPrefix(k, ckptPrefix)] = v
	}
	out["counters"] = counters
	out["history"] = append([]checkpointJSON{}, c.checkpoints...)
	out["events"] = append([]checkpointEventJSON{}, c.ckptEvents...)
	type taskCkpt struct {
		Task      int                `json:"task"`
		Component string             `json:"component"`
		Metrics   map[string]float64 `json:"metrics"`
	}
	tasks := []taskCkpt{}
	for task, rep := range c.tlast {
		m := map[string]float64{}
		for k, v := range rep.m {
			if strings.HasPrefix(k, "instance.checkpoint.") || strings.HasPrefix(k, "state.") {
				m[k] = v
			}
		}
		if len(m) > 0 {
			tasks = append(tasks, taskCkpt{Task: task, Component: tt.compOf(task), Metrics: m})
		}
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].Task < tasks[j].Task })
	out["tasks"] = tasks
	return out, nil
}
