package healthmgr

import (
	"fmt"
	"math"
	"time"
)

// Actions of a decision.
const (
	ActionScaleUp = "scale-up"
	ActionAtBound = "at-bound"
	ActionFailed  = "failed"
)

// Settings are the policy's settings (topology.healthmgr.*).
type Settings struct {
	Threshold, Cooldown time.Duration
}

// ComponentInfo is what the policy knows of a component when it decides.
type ComponentInfo struct {
	Parallelism int
	// Max is the most tasks the health manager gives it; Factor
	// multiplies its parallelism.
	Max    int
	Factor float64
}

// Decision is one decision of the policy.
type Decision struct {
	At        time.Time
	Component string
	Action    string
	Reason    string
	// BackPressure is how long the component had caused back pressure.
	BackPressure time.Duration
	Old, New     int
	Err          string
}

// policy is the back pressure policy: it tracks the current episode (one
// component causing back pressure without a break) and the last decision.
type policy struct {
	set Settings
	// culprit and since: the current episode ("" for none).
	culprit string
	since   time.Time
	detail  string
	// last is when the last decision was taken (zero: never).
	last time.Time
}

// observe records an observation made at now. It returns the culprit and
// how long its episode has lasted, and whether a decision is due: the
// observation is fresh, the episode is at least the threshold long and the
// cool-down has passed.
func (p *policy) observe(now time.Time, o Observation) (component string, lasted time.Duration, due bool) {
	switch {
	case !o.Fresh:
		// Nothing new was reported: the episode neither grows a break
		// nor ends.
	case !o.BackPressure:
		p.culprit = ""
	case o.Culprit == "":
		// Back pressure whose cause has no name: the episode goes on.
	case o.Culprit != p.culprit:
		p.culprit, p.since, p.detail = o.Culprit, now, o.Detail
	default:
		p.detail = o.Detail
	}
	if p.culprit == "" {
		return "", 0, false
	}
	lasted = now.Sub(p.since)
	if !o.Fresh || lasted < p.set.Threshold || (!p.last.IsZero() && now.Sub(p.last) < p.set.Cooldown) {
		return p.culprit, lasted, false
	}
	return p.culprit, lasted, true
}

// decide makes the decision for component, whose episode lasted that
// long, and starts the cool-down: the episode starts over. A stateful
// component scales like any other: under effectively-once its tasks
// restore their key groups from the last checkpoint (launcher.Update).
func (p *policy) decide(now time.Time, component string, lasted time.Duration, c ComponentInfo) Decision {
	d := Decision{At: now, Component: component, BackPressure: lasted, Old: c.Parallelism, New: c.Parallelism}
	cause := fmt.Sprintf("%s caused back pressure for %s (threshold %s)", component, lasted.Round(time.Second), p.set.Threshold)
	if p.detail != "" {
		cause += ": " + p.detail
	}
	switch {
	case c.Parallelism >= c.Max:
		d.Action = ActionAtBound
		d.Reason = fmt.Sprintf("%s; it already has %d tasks, its bound (topology.healthmgr.max.parallelism %d)", cause, c.Parallelism, c.Max)
	default:
		d.Action = ActionScaleUp
		d.New = NextParallelism(c.Parallelism, c.Max, c.Factor)
		d.Reason = fmt.Sprintf("%s; parallelism %d → %d (factor %g, bound %d)", cause, c.Parallelism, d.New, c.Factor, c.Max)
	}
	p.last = now
	p.culprit, p.detail = "", ""
	return d
}

// NextParallelism is the parallelism a scale-up gives a component of n
// tasks: max(n+1, ceil(n × factor)), at most bound.
func NextParallelism(n, bound int, factor float64) int {
	next := int(math.Ceil(float64(n) * factor))
	if next < n+1 {
		next = n + 1
	}
	return min(next, bound)
}
