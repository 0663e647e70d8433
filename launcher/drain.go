package launcher

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/proto/egretpb"
)

// KillOptions tune Kill.
type KillOptions struct {
	// DrainTimeout bounds the drain that precedes the stop: the spouts
	// are deactivated and Kill waits until nothing is in flight (see
	// drain). 0: no drain, the containers stop at once.
	DrainTimeout time.Duration
}

// drainPoll is how often a drain reads the topology manager's stats.
const drainPoll = 250 * time.Millisecond

// drained is what a drain saw at its end.
type drained struct {
	ok                   bool
	pending, held, bytes float64
	took                 time.Duration
}

// drain deactivates the spouts of a running topology and waits, at most
// timeout, until nothing is in flight: every instance and stream manager
// has reported since the deactivation with no pending roots, no tuple held
// outside Execute (a shell bolt's subprocess) and empty queues, and the
// counts of executed, emitted and acked tuples stopped
// changing between two such rounds of reports. It returns whether the
// drain deactivated active spouts (to activate them again when the kill
// fails; a topology an operator deactivated stays so). A topology without
// a reachable topology manager is not drained.
func (l *Launcher) drain(ctx context.Context, store *state.Store, name string, timeout time.Duration) (deactivated bool) {
	loc, err := store.TManagerLocation(ctx, name)
	if err != nil {
		l.progress("no topology manager of %q to drain through: stopping at once", name)
		return false
	}
	wasActive := true
	if pp, err := store.PhysicalPlan(ctx, name); err == nil {
		wasActive = pp.GetState() != egretpb.TopologyState_TOPOLOGY_STATE_PAUSED
	}
	since := time.Now()
	if err := l.postTManager(ctx, loc, name, "/deactivate", nil); err != nil {
		l.progress("could not deactivate %q (%v): stopping without a drain", name, err)
		return false
	}
	l.settle(ctx, loc, name, timeout, since)
	return wasActive
}

// settle waits, at most timeout, until the deactivated topology is
// drained, saying how it went.
func (l *Launcher) settle(ctx context.Context, loc *egretpb.TManagerLocation, name string, timeout time.Duration, since time.Time) drained {
	l.progress("draining %q: spouts deactivated, waiting up to %s for the tuples in flight", name, timeout)
	d := l.waitDrained(ctx, loc, since, timeout)
	switch {
	case d.ok:
		l.progress("drained %q in %s", name, d.took.Round(time.Millisecond))
	case ctx.Err() != nil:
	default:
		l.progress("the drain of %q timed out after %s (%.0f roots pending, %.0f tuples held by shell bolts, %.0f bytes queued at the last report): going on", name, timeout, d.pending, d.held, d.bytes)
	}
	return d
}

// waitDrained polls the topology manager's stats until the topology is
// drained (see drain) or timeout passes.
func (l *Launcher) waitDrained(ctx context.Context, loc *egretpb.TManagerLocation, since time.Time, timeout time.Duration) drained {
	deadline := time.Now().Add(timeout)
	var last drained
	var prev *drainRound
	for {
		r, err := drainStats(ctx, loc, since.UnixNano())
		if err == nil {
			last.pending, last.held, last.bytes = r.pending, r.held, r.bytes
			if r.quiet() {
				if prev != nil && r.oldest > prev.newest && r.moved == prev.moved {
					return drained{ok: true, took: time.Since(since)}
				}
				if prev == nil || r.moved != prev.moved {
					prev = r
				}
			} else {
				prev = nil
			}
		} else {
			l.Log.Debug("drain: reading the topology manager's stats", zap.Error(err))
		}
		if time.Now().After(deadline) {
			return last
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(drainPoll):
		}
	}
}

// drainRound is one read of the stats during a drain.
type drainRound struct {
	// fresh: every instance and stream manager reported after the
	// deactivation.
	fresh bool
	// pending roots, tuples held outside Execute and queued bytes summed
	// over the reports.
	pending, held, bytes float64
	// moved sums the received, emitted and acked counts.
	moved float64
	// oldest and newest report times (Unix nanoseconds).
	oldest, newest int64
}

func (r *drainRound) quiet() bool { return r.fresh && r.pending == 0 && r.held == 0 && r.bytes == 0 }

func drainStats(ctx context.Context, loc *egretpb.TManagerLocation, since int64) (*drainRound, error) {
	type report struct {
		UnixNanos int64              `json:"unix_nanos"`
		Metrics   map[string]float64 `json:"metrics"`
	}
	var raw struct {
		Components map[string]struct {
			Tasks map[string]report `json:"tasks"`
		} `json:"components"`
		Containers map[string]map[string]report `json:"containers"`
	}
	if err := getTManager(ctx, loc, "/stats", &raw); err != nil {
		return nil, err
	}
	r := &drainRound{fresh: true, oldest: 1<<63 - 1}
	seen := func(ts int64) {
		r.fresh = r.fresh && ts > since
		r.oldest, r.newest = min(r.oldest, ts), max(r.newest, ts)
	}
	tasks := 0
	for _, c := range raw.Components {
		for _, t := range c.Tasks {
			tasks++
			seen(t.UnixNanos)
			m := t.Metrics
			r.pending += m["instance.pending.roots"]
			r.held += m["instance.held.tuples"]
			r.bytes += m["gateway.in.queue.bytes"] + m["gateway.out.queue.bytes"]
			// Data tuples in, not executions: tick tuples keep a bolt
			// executing in a drained topology.
			r.moved += m["gateway.tuples.in"] + m["instance.emitted"] + m["instance.acked"]
		}
	}
	for _, srcs := range raw.Containers {
		if s, ok := srcs["stmgr"]; ok {
			seen(s.UnixNanos)
			r.bytes += s.Metrics["stmgr.queue.bytes"]
		}
	}
	if tasks == 0 {
		r.fresh = false // nothing reported yet
	}
	return r, nil
}
