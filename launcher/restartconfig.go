package launcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// restartConfig applies o.RuntimeConfig with --restart: the live settings
// go to the topology manager as without it; the fixed settings that the
// instances and stream managers read when they start are written into
// the topology definition, and containers 1..N restart one at a time on
// it, drained and health-checked as by an upgrade (restartHealthy).
//
// Everything is checked first (exit 2 for an unknown or invalid value, a
// setting that cannot change in a running topology at all, a rescale in
// the same command). Then, holding the topology's lock, the definition
// and the unchanged packing plan are written in one transaction (the
// packing plan's version guards against a concurrent change); the
// topology manager, which watches the packing plan, reads the new
// definition and broadcasts a physical plan that carries it, and every
// process started from then on reads the new values. Container 0 is not
// restarted: the topology manager reads none of the settings a restart
// may change (those of the health manager and of checkpoints are refused).
// A roll that stops at a container leaves the definition changed: the
// containers restarted so far run the new values, the others the old
// ones until they restart; the same command again finishes the roll.
func (l *Launcher) restartConfig(ctx context.Context, name string, o UpdateOptions) error {
	switch {
	case len(o.Parallelism) > 0 || o.Containers > 0:
		return badInput(errors.New("--restart applies runtime settings: rescale in another egret update (without --restart)"))
	case len(o.RuntimeConfig) == 0:
		return badInput(errors.New("--restart needs the settings to apply: --runtime-config key=value"))
	}
	live, fixed, err := topology.SplitRestartConfig(o.RuntimeConfig)
	if err != nil {
		return badInput(err)
	}
	cfg, store, release, err := l.lockedSession(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	if err := requireRunning(ctx, store, name); err != nil {
		return err
	}
	if _, err := l.tmanager(ctx, store, name); err != nil {
		return fmt.Errorf("cannot restart %q: %w", name, err)
	}
	t, err := store.Topology(ctx, name)
	if err != nil {
		return killHint(name, err)
	}
	pp, version, err := store.PackingPlan(ctx, name)
	if err != nil {
		return killHint(name, err)
	}
	next := t.Clone()
	if next.Config == nil {
		next.Config = map[string]string{}
	}
	for k, v := range fixed {
		if v == "" {
			delete(next.Config, k)
		} else {
			next.Config[k] = v
		}
	}
	if err := topology.Validate(next); err != nil {
		return badInput(fmt.Errorf("the topology with these settings is invalid: %w", err))
	}
	for _, k := range slices.Sorted(maps.Keys(fixed)) {
		for _, c := range next.Components {
			if v, ok := c.Config[k]; ok && fixed[k] != "" {
				l.progress("note: component %q sets %s=%s itself, which the topology-level value does not override", c.Name, k, v)
			}
		}
	}
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer sched.Close()
	if p, ok := sched.(spi.Prober); ok {
		if err := p.Probe(ctx, name); err != nil {
			return fmt.Errorf("cannot restart topology %q: %w", name, err)
		}
	}
	if len(live) > 0 {
		l.progress("sending the live settings to the topology manager")
		if err := l.SetRuntimeConfig(ctx, name, live); err != nil {
			return err
		}
	}
	if len(fixed) == 0 {
		l.progress("every setting given applies live: no restart needed")
		return nil
	}
	l.progress("writing %s into the definition of %q", settingList(fixed), name)
	if err := store.UpdatePackingPlan(ctx, next, pp, version); err != nil {
		return fmt.Errorf("write the new settings of %q: %w", name, err)
	}
	if err := waitSettings(ctx, store, name, fixed, time.Minute); err != nil {
		return err
	}
	u := &upgrading{name: name, cfg: cfg, store: store, sched: sched, pp: pp}
	uo := UpgradeOptions{WaitHealthy: DefaultWaitHealthy, MaxExceptions: DefaultMaxExceptions, DrainTimeout: o.DrainTimeout}
	ids := containerIDs(pp)
	for i, c := range ids {
		l.progress("restarting container %d of %q (%d of %d) with the new settings", c, name, i+1, len(ids))
		step, err := l.restartHealthy(ctx, u, c, uo)
		if err != nil {
			done := intList(ids[:i])
			if done == "" {
				done = "none"
			}
			return fmt.Errorf("the restart of topology %q stopped: %w; containers restarted with the new settings: %s; the definition holds them, the others get them when they restart (the same egret update --restart finishes the roll)", name, err, done)
		}
		l.progress("container %d is healthy with the new settings %s after its restart%s", c, step.Healthy.Round(time.Millisecond), step.drainNote())
	}
	return nil
}

// waitSettings waits until the topology manager broadcasts a physical plan
// whose topology holds the settings kv (an empty value: unset), so that
// the processes restarted next read them.
func waitSettings(ctx context.Context, store *state.Store, name string, kv map[string]string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if ph, err := store.PhysicalPlan(ctx, name); err == nil && holds(ph, kv) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the topology manager of %q has not broadcast the new settings after %s (its log says why); nothing was restarted, the definition holds them", name, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(drainPoll):
		}
	}
}

func holds(ph *egretpb.PhysicalPlan, kv map[string]string) bool {
	t, err := topology.FromProto(ph.GetTopology())
	if err != nil {
		return false
	}
	for k, v := range kv {
		if t.Config[k] != v {
			return false
		}
	}
	return true
}

func settingList(kv map[string]string) string {
	parts := make([]string, 0, len(kv))
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		parts = append(parts, k+"="+kv[k])
	}
	return strings.Join(parts, ", ")
}
