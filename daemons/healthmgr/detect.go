package healthmgr

import (
	"fmt"
	"sort"
	"strings"
)

// Observation is what one read of the metrics says about back pressure.
type Observation struct {
	// Fresh: at least one stream manager reported since the previous
	// read. A stale read says nothing and changes no episode.
	Fresh bool
	// BackPressure: some stream manager throttled its spouts since its
	// previous report.
	BackPressure bool
	// Culprit is the component found causing it ("" when none could be
	// named: back pressure from a slow peer stream manager, or reports
	// that do not show the queues).
	Culprit string
	// Detail says, in words, what named the culprit.
	Detail string
}

// detector turns successive snapshots into observations: the metrics it
// reads are cumulative, so it keeps each stream manager's previous report.
type detector struct {
	prev map[int]Report
}

func newDetector() *detector { return &detector{prev: map[int]Report{}} }

// observe compares snap with the previous reads. bolts lists the
// components that may be culprits (a spout receives no data tuples).
func (d *detector) observe(snap *Snapshot, bolts map[string]bool) Observation {
	var o Observation
	score := map[string]float64{}
	var why []string
	containers := make([]int, 0, len(snap.StMgrs))
	for ct := range snap.StMgrs {
		containers = append(containers, ct)
	}
	sort.Ints(containers)
	for _, ct := range containers {
		r := snap.StMgrs[ct]
		p, seen := d.prev[ct]
		if seen && r.UnixNanos == p.UnixNanos {
			continue // no new report
		}
		d.prev[ct] = r
		if r.Metrics[metricActive] == 1 {
			o.Fresh, o.BackPressure = true, true
		}
		if !seen || r.UnixNanos < p.UnixNanos || r.Metrics[metricThrottled] < p.Metrics[metricThrottled] {
			// A first report, or a restarted stream manager: a new
			// baseline for its cumulative times.
			continue
		}
		o.Fresh = true
		if r.Metrics[metricThrottled] > p.Metrics[metricThrottled] {
			o.BackPressure = true
		}
		if r.Metrics[metricByLocalInstance] <= p.Metrics[metricByLocalInstance] {
			continue
		}
		// This stream manager initiated back pressure because of a local
		// instance: the one with the most bytes queued toward and in it.
		queues := stmgrTaskQueues(r.Metrics)
		best, bestBytes := -1, 0.0
		for task, tr := range snap.Tasks {
			if tr.Container != ct || !bolts[tr.Component] {
				continue
			}
			b := queues[task] + tr.Metrics[metricInQueue]
			if b > bestBytes || (b == bestBytes && best >= 0 && task < best) {
				best, bestBytes = task, b
			}
		}
		if best < 0 || bestBytes == 0 {
			continue
		}
		comp := snap.Tasks[best].Component
		score[comp] += bestBytes
		why = append(why, fmt.Sprintf("container %d: task %d of %s holds %.0f bytes", ct, best, comp, bestBytes))
	}
	if !o.BackPressure {
		return o
	}
	for c, s := range score {
		if o.Culprit == "" || s > score[o.Culprit] || (s == score[o.Culprit] && c < o.Culprit) {
			o.Culprit = c
		}
	}
	if o.Culprit != "" {
		o.Detail = "back pressure initiated by a local instance; " + strings.Join(why, "; ")
	}
	return o
}
