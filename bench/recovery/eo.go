package recovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
)

// Effectively-once recovery (issue 22): the eocount topology (a stateful
// word count, test/e2e/testdata/effectivelyonce) at a fraction of its
// maximum, 1 s checkpoints; the throughput is the growth of the words
// counted in the count bolts' state (their report files, rewritten every
// 100 ms). After a kill the topology rolls back to its last checkpoint:
// the counts drop, then grow again. Recovered = that growth back within
// the tolerance of the rate before the kill, held; caught up = the counts
// back at their level at the kill.

// EOFaults are the fault kinds of the effectively-once run.
var EOFaults = []string{FaultBolt, FaultSpout, FaultStmgr, FaultCkptMgr, FaultTManager, FaultContainer}

// FaultCkptMgr kills the checkpoint manager of the victim container.
const FaultCkptMgr = "ckptmgr"

// eoCheckpointInterval is the checkpoint interval of the run.
const eoCheckpointInterval = time.Second

// eoNoRollback: counts that did not drop this long after a kill were not
// rolled back. A restarted topology manager rolls back only once it holds
// its location node again, seconds after the kill.
const eoNoRollback = 30 * time.Second

// RunEffectivelyOnce is Run for an effectively-once topology. o.Topology,
// when set, is the eocount binary; Faults default to EOFaults.
func RunEffectivelyOnce(ctx context.Context, o Options) (*Result, error) {
	if len(o.Faults) == 0 {
		o.Faults = EOFaults
	}
	o.defaults()
	began := time.Now()
	res := &Result{Machine: harness.DescribeMachine(), Quick: o.Quick, Copies: 3, MessageTimeout: "effectively-once, checkpoints every " + eoCheckpointInterval.String(),
		RateWindow: o.RateWindow.String(), Hold: o.Hold.String(), Tolerance: o.Tolerance, Started: began.UTC().Format(time.RFC3339)}
	if o.Egret == "" || o.Topology == "" {
		dir, err := os.MkdirTemp("", "egret-recovery-eo-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if o.Egret == "" {
			if o.Egret, err = harness.Build(ctx, o.Root, "./cmd/egret", dir, "egret"); err != nil {
				return nil, err
			}
		}
		if o.Topology == "" {
			if o.Topology, err = harness.Build(ctx, o.Root, "./test/e2e/testdata/effectivelyonce", dir, "eocount"); err != nil {
				return nil, err
			}
		}
	}
	c, err := newCluster(o.Egret, o.Props)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !o.Keep {
			_ = c.Remove()
		}
	}()
	res.Rate = o.Rate
	if res.Rate == 0 {
		r, err := startEO(ctx, c, &o, "eo-maximum", 0)
		if err != nil {
			return nil, err
		}
		top, err := r.maxRate(ctx)
		_ = c.kill(context.WithoutCancel(ctx), r.name)
		if err != nil {
			return nil, err
		}
		res.MaxRate = top / 3 // words per second → sentences per second
		res.Rate = max(1, int(res.MaxRate*o.Fraction))
	}
	r, err := startEO(ctx, c, &o, "eo-recovery", res.Rate)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.kill(context.WithoutCancel(ctx), r.name) }()
	if err := r.waitFlow(ctx, time.Minute); err != nil {
		return nil, err
	}
	if res.Faults, err = injectAll(ctx, &o, r.injectEO); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// eoRun is one eocount topology; its samples are the words counted.
type eoRun struct {
	*run
}

func startEO(ctx context.Context, c *cluster, o *Options, name string, rate int) (*eoRun, error) {
	state := filepath.Join(c.Home(), "state-"+name)
	args := []string{"submit", harness.ClusterName, o.Topology, "--", "--name", name, "--sentences", strconv.FormatInt(1<<50, 10),
		"--state", state, "--rate", strconv.Itoa(rate), "--containers", "2", "--interval", eoCheckpointInterval.String(),
		"--report-every", "100ms"}
	o.Log.Info("submitting", zap.String("topology", name), zap.Int("rate", rate))
	if _, err := c.CLI(ctx, args...); err != nil {
		return nil, err
	}
	c.remember(name, 2)
	r := &eoRun{run: &run{c: c, o: o, name: name, state: state}}
	r.sampler = func() (float64, error) { return eocount.Counted(state) }
	return r, nil
}

// maxRate runs unthrottled and returns the words counted per second.
func (r *eoRun) maxRate(ctx context.Context) (float64, error) {
	if err := r.waitFlow(ctx, time.Minute); err != nil {
		return 0, err
	}
	if err := r.sampleFor(ctx, 2*r.o.MaxWindow, nil); err != nil {
		return 0, err
	}
	end, _ := r.samples.Last()
	return r.rate(end.At.Add(-r.o.MaxWindow), end.At)
}

// injectEO measures the baseline, kills the processes of one fault kind
// and follows the rollback and the recovery.
func (r *eoRun) injectEO(ctx context.Context, kind string) (Fault, error) {
	f := Fault{Kind: kind}
	if err := r.waitSteady(ctx); err != nil {
		return f, err
	}
	container, pids, err := r.eoVictims(kind)
	if err != nil {
		return f, err
	}
	f.Container = container
	for name := range pids {
		f.Killed = append(f.Killed, name)
	}
	sort.Strings(f.Killed)
	if err := r.sample(); err != nil {
		return f, err
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return f, fmt.Errorf("kill -9 %s (pid %d): %w", name, pid, err)
		}
	}
	killed := time.Now()
	pre, _ := r.samples.Last()
	if f.BaselineRate, err = r.rate(pre.At.Add(-r.o.Baseline), pre.At); err != nil {
		return f, fmt.Errorf("baseline rate: %w", err)
	}
	// Caught up: back at the level of the kill after the rollback made
	// the counts drop; a fault without a rollback (the checkpoint
	// manager's) is caught up at once, which eoNoRollback after the kill
	// without a drop decides.
	lowest := pre.Value
	var rec recovery
	done := func() bool {
		last, _ := r.samples.Last()
		lowest = min(lowest, last.Value)
		rec = recoveryOf(r.samples, killed, f.BaselineRate, r.o.RateWindow, r.o.Hold, r.o.Tolerance)
		dropped := lowest < pre.Value
		if !f.Complete && dropped && last.Value >= pre.Value {
			f.Complete, f.CompleteSeconds = true, last.At.Sub(killed).Seconds()
		}
		if !f.Complete && !dropped && time.Since(killed) > eoNoRollback {
			f.Complete = true
		}
		return rec.ok && f.Complete
	}
	if err := r.sampleFor(ctx, r.o.Limit, done); err != nil {
		return f, err
	}
	done()
	f.Recovered, f.RecoverySeconds, f.MinRate = rec.ok, rec.after.Seconds(), rec.min
	f.ReplayedRoots = int64(pre.Value - lowest) // words rolled back
	r.c.remember(r.name, 2)
	r.o.Log.Info("measured", zap.String("fault", kind), zap.Bool("recovered", f.Recovered), zap.Float64("recovery_seconds", f.RecoverySeconds),
		zap.Float64("caught_up_seconds", f.CompleteSeconds), zap.Int64("rolled_back_words", f.ReplayedRoots))
	return f, nil
}

func (r *eoRun) eoVictims(kind string) (int, map[string]int, error) {
	container := victimContainer
	if kind == FaultTManager {
		container = 0
	}
	procs, err := r.c.pids(r.name, container)
	if err != nil {
		return 0, nil, err
	}
	prefix := map[string]string{FaultBolt: "instance-" + eocount.Count + "-", FaultSpout: "instance-" + eocount.Source + "-",
		FaultStmgr: "stmgr", FaultCkptMgr: "ckptmgr", FaultTManager: "tmanager"}[kind]
	if kind == FaultContainer {
		return container, procs, nil
	}
	if prefix == "" {
		return 0, nil, fmt.Errorf("unknown fault %q (known: %s)", kind, strings.Join(EOFaults, ", "))
	}
	var names []string
	for name := range procs {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return 0, nil, fmt.Errorf("container %d runs no %s* process: %v", container, prefix, procs)
	}
	sort.Strings(names)
	return container, map[string]int{names[0]: procs[names[0]]}, nil
}
