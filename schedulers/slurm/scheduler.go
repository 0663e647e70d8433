package slurm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

func init() { spi.RegisterScheduler("slurm", New, configKeys...) }

// Scheduler runs each topology as one Slurm batch job. It keeps no state
// of its own: every call finds the topology's job again by its name and
// comment (squeue).
type Scheduler struct {
	s      *settings
	r      *runner
	log    *zap.Logger
	closed atomic.Bool
	// poll is the pause between two reads of a job's state.
	poll time.Duration
}

var (
	_ spi.Scheduler   = (*Scheduler)(nil)
	_ spi.JobRenderer = (*Scheduler)(nil)
	_ spi.Checker     = (*Scheduler)(nil)
	_ spi.Diagnoser   = (*Scheduler)(nil)
)

// New builds the Slurm scheduler from the cluster config. It runs no
// Slurm command.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	if log == nil {
		log = zap.NewNop()
	}
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	keys := map[string]string{s.sbatch: KeySbatch, s.squeue: KeySqueue, s.scancel: KeyScancel, s.scontrol: KeyScontrol, s.srun: KeySrun}
	return &Scheduler{s: s, r: &runner{timeout: s.commandTimeout, keys: keys}, log: log.Named("slurm"), poll: 250 * time.Millisecond}, nil
}

// jobInfo is one line of squeue about a job of the topology.
type jobInfo struct {
	id, state, reason string
}

// Schedule submits the topology's batch job (sbatch) and waits, at most
// egret.slurm.launch.timeout, until its job step runs. The partition and
// the task size are checked against the cluster first; a job that cannot
// start is cancelled again, and the error says why.
func (sc *Scheduler) Schedule(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	b, err := sc.s.buildBatch(job)
	if err != nil {
		return err
	}
	jobs, err := sc.jobs(ctx, job.Topology)
	if err != nil {
		return err
	}
	if len(jobs) > 0 {
		return fmt.Errorf("slurm scheduler: topology %q already runs as Slurm job %s (%s); kill it first: %w", job.Topology, jobs[0].id, jobs[0].state, spi.ErrExists)
	}
	if err := sc.preflight(ctx, b); err != nil {
		return err
	}
	id, err := sc.submit(ctx, b)
	if err != nil {
		return err
	}
	sc.log.Info("submitted batch job", zap.String("job", id), zap.String("topology", job.Topology), zap.Int("tasks", b.tasks), zap.Stringer("task_size", b.size))
	if err := sc.waitRunning(ctx, id); err != nil {
		sc.cancel(context.WithoutCancel(ctx), id)
		return fmt.Errorf("%w; job %s was cancelled", err, id)
	}
	return nil
}

// submit runs sbatch with the script on its standard input and returns
// the job id.
func (sc *Scheduler) submit(ctx context.Context, b *batch, extra ...string) (string, error) {
	out, err := sc.r.run(ctx, sc.s.sbatch, b.script, append(slices.Clone(b.args), extra...)...)
	if err != nil {
		return "", sc.fail(ctx, "submit the batch job", err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";") // --parsable: id[;cluster]
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("slurm scheduler: sbatch printed %q, not a job id", oneLine(out))
	}
	return id, nil
}

// hopeless are the pending reasons of a job that will not start without
// an administrator changing the cluster.
var hopeless = []string{
	"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "PartitionDown", "PartitionInactive",
	"BadConstraints", "InvalidAccount", "InvalidQOS", "QOSMaxCpuPerJobLimit", "QOSMaxNodePerJobLimit",
	"QOSMaxMemoryPerJob", "AssocMaxCpuPerJobLimit", "AssocMaxNodePerJobLimit", "AccountNotAllowed",
	"QOSNotAllowed", "DependencyNeverSatisfied", "JobHeldAdmin", "JobHeldUser",
}

// waitRunning waits until job id runs its job step (the containers'
// tasks), or fails with Slurm's reason.
func (sc *Scheduler) waitRunning(ctx context.Context, id string) error {
	deadline := time.Now().Add(sc.s.launchTimeout)
	var last jobInfo
	for {
		j, err := sc.job(ctx, id)
		if err != nil {
			return err
		}
		last = j
		switch {
		case j.state == "RUNNING":
			steps, err := sc.r.run(ctx, sc.s.squeue, "", "-h", "-s", "-j", id, "-o", "%i")
			if err != nil {
				return sc.fail(ctx, "list the steps of job "+id, err)
			}
			if slices.Contains(strings.Fields(steps), id+".0") {
				return nil
			}
		case j.state == "PENDING" && slices.Contains(hopeless, j.reason):
			return fmt.Errorf("slurm scheduler: job %s cannot start: Slurm says %s", id, j.reason)
		case j.state == "" || isFinal(j.state):
			return fmt.Errorf("slurm scheduler: job %s ended (%s) before its containers ran; see the slurmctld log", id, orUnknown(j.state))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slurm scheduler: job %s is %s (reason %s) after %s (%s)", id, last.state, last.reason, sc.s.launchTimeout, KeyLaunchTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slurm scheduler: %w", ctx.Err())
		case <-time.After(sc.poll):
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "no longer known to slurmctld"
	}
	return s
}

func isFinal(state string) bool {
	switch state {
	case "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED":
		return true
	}
	return false
}

// job reads the state and pending reason of job id (any state).
func (sc *Scheduler) job(ctx context.Context, id string) (jobInfo, error) {
	out, err := sc.r.run(ctx, sc.s.squeue, "", "-h", "-t", "all", "-j", id, "-o", "%i|%T|%r")
	if err != nil {
		var ce *cmdError
		if errors.As(err, &ce) && strings.Contains(ce.msg, "Invalid job id") {
			return jobInfo{id: id}, nil
		}
		return jobInfo{}, sc.fail(ctx, "read job "+id, err)
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.SplitN(strings.TrimSpace(l), "|", 3)
		if len(f) == 3 && f[0] == id {
			return jobInfo{id: id, state: f[1], reason: f[2]}, nil
		}
	}
	return jobInfo{id: id}, nil
}

// jobs lists the topology's jobs that are not finished (squeue's default
// states: pending, running, suspended, completing, ...), oldest first.
func (sc *Scheduler) jobs(ctx context.Context, topology string) ([]jobInfo, error) {
	if err := names.Check(names.Topology, topology); err != nil {
		return nil, fmt.Errorf("slurm scheduler: %w", err)
	}
	out, err := sc.r.run(ctx, sc.s.squeue, "", "--me", "-h", "--name="+JobName(topology), "-o", "%i|%T|%r|%k")
	if err != nil {
		return nil, sc.fail(ctx, "list the jobs of topology "+topology, err)
	}
	var jobs []jobInfo
	for _, l := range strings.Split(out, "\n") {
		f := strings.SplitN(strings.TrimSpace(l), "|", 4)
		if len(f) == 4 && strings.HasPrefix(f[3]+" ", commentPrefix(topology)) {
			jobs = append(jobs, jobInfo{id: f[0], state: f[1], reason: f[2]})
		}
	}
	sort.Slice(jobs, func(i, k int) bool {
		a, _ := strconv.ParseUint(jobs[i].id, 10, 64)
		b, _ := strconv.ParseUint(jobs[k].id, 10, 64)
		return a < b
	})
	return jobs, nil
}

// running returns the topology's running job (the newest, should an
// update have left two).
func (sc *Scheduler) running(ctx context.Context, topology string) (jobInfo, error) {
	jobs, err := sc.jobs(ctx, topology)
	if err != nil {
		return jobInfo{}, err
	}
	for i := len(jobs) - 1; i >= 0; i-- {
		if jobs[i].state == "RUNNING" {
			return jobs[i], nil
		}
	}
	if len(jobs) > 0 {
		j := jobs[len(jobs)-1]
		return jobInfo{}, fmt.Errorf("slurm scheduler: Slurm job %s of topology %q is %s (reason %s), not running", j.id, topology, j.state, j.reason)
	}
	return jobInfo{}, fmt.Errorf("slurm scheduler: topology %q has no Slurm job (%s): %w", topology, JobName(topology), spi.ErrNotFound)
}

// Kill cancels the topology's jobs (scancel: Slurm signals every task,
// then kills what remains after its KillWait) and waits until Slurm has
// finished them. Killing a topology without a job succeeds.
func (sc *Scheduler) Kill(ctx context.Context, topology string) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	jobs, err := sc.jobs(ctx, topology)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	if _, err := sc.r.run(ctx, sc.s.scancel, "", ids...); err != nil {
		return sc.fail(ctx, "cancel job "+strings.Join(ids, ", "), err)
	}
	sc.log.Info("cancelled jobs", zap.Strings("jobs", ids), zap.String("topology", topology))
	deadline := time.Now().Add(sc.s.launchTimeout)
	for {
		left, err := sc.jobs(ctx, topology)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slurm scheduler: job %s of topology %q is still %s %s after scancel (%s)", left[0].id, topology, left[0].state, sc.s.launchTimeout, KeyLaunchTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slurm scheduler: waiting for job %s to end: %w", left[0].id, ctx.Err())
		case <-time.After(sc.poll):
		}
	}
}

// cancel cancels a job after a failed submission and waits for it to go.
func (sc *Scheduler) cancel(ctx context.Context, id string) {
	if _, err := sc.r.run(ctx, sc.s.scancel, "", id); err != nil {
		sc.log.Warn("could not cancel the job of the failed submission", zap.String("job", id), zap.Error(err))
		return
	}
	deadline := time.Now().Add(sc.s.launchTimeout)
	for time.Now().Before(deadline) {
		j, err := sc.job(ctx, id)
		if err != nil || j.state == "" || isFinal(j.state) {
			return
		}
		time.Sleep(sc.poll)
	}
}

// Restart restarts one container, or all with spi.AllContainers, in
// place: a job step in the job's allocation (srun --jobid --overlap, one
// task per node) sends SIGUSR1 to the task loop of the container(s), which
// stops the executor and starts it again at once; the other containers
// are untouched. When a container's task loop is gone (it was killed
// itself), restarting every container requeues the job instead (scontrol
// requeue: a fresh run of the whole job, which Slurm starts once its
// credential lifetime, cred_expire, has passed: 120 s by default).
func (sc *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	if container < 0 && container != spi.AllContainers {
		return fmt.Errorf("slurm scheduler: container %d is not a container index: %w", container, spi.ErrNotFound)
	}
	j, err := sc.running(ctx, topology)
	if err != nil {
		return err
	}
	info, err := sc.r.run(ctx, sc.s.scontrol, "", "show", "job", "-o", j.id)
	if err != nil {
		return sc.fail(ctx, "read job "+j.id, err)
	}
	tasks, nodes := fieldInt(info, "NumTasks"), fieldInt(info, "NumNodes")
	if tasks <= 0 || nodes <= 0 {
		return fmt.Errorf("slurm scheduler: scontrol show job %s gave no task and node counts", j.id)
	}
	if int64(container) >= tasks {
		return fmt.Errorf("slurm scheduler: topology %q has no container %d (containers 0..%d): %w", topology, container, tasks-1, spi.ErrNotFound)
	}
	out, err := sc.signalStep(ctx, j.id, nodes, restartScript(sc.s, container))
	if err != nil {
		return sc.fail(ctx, fmt.Sprintf("signal the containers of job %s", j.id), err)
	}
	done := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "restarted "); ok {
			done[c] = true
		}
	}
	if container != spi.AllContainers {
		if !done[strconv.Itoa(container)] {
			return fmt.Errorf("slurm scheduler: container %d of topology %q (job %s) has no running task loop; restart every container (egret restart without a container) to requeue the job", container, topology, j.id)
		}
		sc.log.Info("restarted container", zap.Int("container", container), zap.String("job", j.id))
		return nil
	}
	if int64(len(done)) == tasks {
		sc.log.Info("restarted every container", zap.String("job", j.id), zap.Int64("containers", tasks))
		return nil
	}
	sc.log.Warn("some containers have no task loop; requeueing the job", zap.String("job", j.id), zap.Int("restarted", len(done)), zap.Int64("containers", tasks))
	if _, err := sc.r.run(ctx, sc.s.scontrol, "", "requeue", j.id); err != nil {
		return sc.fail(ctx, "requeue job "+j.id, err)
	}
	return nil
}

// signalStep runs script once on every node of job id, in a job step that
// shares the job's resources (srun --overlap). A step requested while
// slurmctld is still starting up can hang without an answer (seen with
// Slurm 22.05 right after a controller restart), so each attempt gets a
// quarter of the command timeout (at least 5s) and a hung one is tried
// again, up to four times.
func (sc *Scheduler) signalStep(ctx context.Context, id string, nodes int64, script string) (string, error) {
	r := *sc.r
	r.timeout = max(5*time.Second, sc.r.timeout/4)
	var err error
	for range 4 {
		var out string
		out, err = r.run(ctx, sc.s.srun, "", "--jobid="+id, "--overlap", "--quiet", "--nodes="+strconv.FormatInt(nodes, 10),
			"--ntasks-per-node=1", "--ntasks="+strconv.FormatInt(nodes, 10), "--mem=0", "--job-name=egret-restart",
			"/bin/sh", "-c", script)
		var ce *cmdError
		if err == nil || !errors.As(err, &ce) || !ce.killed {
			return out, err
		}
		sc.log.Warn("srun into the job did not answer; trying again", zap.String("job", id), zap.Error(err))
	}
	return "", err
}

// Update applies a new packing plan. A Slurm job cannot grow or shrink
// while it runs, so Update submits a new job with the new plan that
// starts once the old one has ended (--dependency=afterany), then cancels
// the old one: every container restarts. When the new job cannot be
// submitted (too big, bad partition), the old one keeps running untouched.
func (sc *Scheduler) Update(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	b, err := sc.s.buildBatch(job)
	if err != nil {
		return err
	}
	old, err := sc.running(ctx, job.Topology)
	if err != nil {
		return err
	}
	if err := sc.preflight(ctx, b); err != nil {
		return err
	}
	id, err := sc.submit(ctx, b, "--dependency=afterany:"+old.id, "--kill-on-invalid-dep=yes")
	if err != nil {
		return err
	}
	if _, err := sc.r.run(ctx, sc.s.scancel, "", old.id); err != nil {
		sc.cancel(context.WithoutCancel(ctx), id)
		return sc.fail(ctx, "cancel the old job "+old.id+" (the new job "+id+" was cancelled; the old one runs on)", err)
	}
	sc.log.Info("replaced job", zap.String("old", old.id), zap.String("new", id), zap.Int("tasks", b.tasks))
	if err := sc.waitRunning(ctx, id); err != nil {
		sc.cancel(context.WithoutCancel(ctx), id)
		return fmt.Errorf("%w; job %s was cancelled and the topology's old job %s is gone: submit the topology again", err, id, old.id)
	}
	return nil
}

// ReplacedBy returns every container both plans have, and container 0:
// Update replaces the whole job, so every process restarts, the topology
// manager's too (spi.Replacer).
func (sc *Scheduler) ReplacedBy(current, next *plan.PackingPlan) []int {
	ids := []int{0}
	for _, c := range next.Containers {
		if _, ok := current.Container(c.ID); ok {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// JobLinks returns the topology's job id, as the command that shows it.
func (sc *Scheduler) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if err := sc.check(ctx); err != nil {
		return nil, err
	}
	j, err := sc.running(ctx, topology)
	if err != nil {
		return nil, err
	}
	return []string{"slurm job " + j.id + " (scontrol show job " + j.id + ")"}, nil
}

// RenderJob returns what Schedule would run: the sbatch command line and
// the batch script (`egret submit --dry-run --dry-run-format slurm`).
func (sc *Scheduler) RenderJob(job spi.Job) ([]byte, error) {
	b, err := sc.s.buildBatch(job)
	if err != nil {
		return nil, err
	}
	var w strings.Builder
	w.WriteString("# " + sc.s.sbatch)
	for _, a := range b.args {
		w.WriteString(" " + quote(a))
	}
	w.WriteString(" <<'EOF'\n" + b.script + "EOF\n")
	return []byte(w.String()), nil
}

// Close marks the scheduler closed; the topology keeps running. Later
// calls fail with spi.ErrClosed.
func (sc *Scheduler) Close() error {
	sc.closed.Store(true)
	return nil
}

// Check checks that slurmctld answers and that the configured partition
// exists and is up.
func (sc *Scheduler) Check(ctx context.Context) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	out, err := sc.r.run(ctx, sc.s.scontrol, "", "ping")
	if err != nil {
		return sc.fail(ctx, "ping slurmctld", err)
	}
	if !strings.Contains(out, "is UP") {
		return fmt.Errorf("slurm scheduler: slurmctld is not up: %s", oneLine(out))
	}
	_, err = sc.partition(ctx)
	return err
}

// ---- helpers ----

func (sc *Scheduler) check(ctx context.Context) error {
	if sc.closed.Load() {
		return fmt.Errorf("slurm scheduler: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("slurm scheduler: %w", err)
	}
	return nil
}

// fail wraps an error of a Slurm command with what was being done.
func (sc *Scheduler) fail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("slurm scheduler: %s: %w", what, ctx.Err())
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("slurm scheduler: %s: %w", what, err)
	}
	return fmt.Errorf("slurm scheduler: %s: %w", what, err)
}

// Diagnose says why containers of the topology do not run: the job's
// pending reason, or, from the batch script's log on the job's first node
// (read by a job step in the allocation), each container whose executor
// last exited and is waiting to be started again.
func (sc *Scheduler) Diagnose(ctx context.Context, topology string) (string, error) {
	if err := sc.check(ctx); err != nil {
		return "", err
	}
	jobs, err := sc.jobs(ctx, topology)
	if err != nil || len(jobs) == 0 {
		return "", err
	}
	j := jobs[len(jobs)-1]
	if j.state != "RUNNING" {
		return fmt.Sprintf("Slurm job %s is %s (reason %s)", j.id, j.state, j.reason), nil
	}
	info, err := sc.r.run(ctx, sc.s.scontrol, "", "show", "job", "-o", j.id)
	if err != nil {
		return "", sc.fail(ctx, "read job "+j.id, err)
	}
	out, err := sc.signalStep(ctx, j.id, fieldInt(info, "NumNodes"), diagnoseScript(sc.s))
	if err != nil {
		return "", sc.fail(ctx, "read the log of job "+j.id, err)
	}
	last := map[int]string{}
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "egret-slurm: container ")
		if !ok {
			continue
		}
		n, msg, ok := strings.Cut(rest, ": ")
		c, err := strconv.Atoi(n)
		if ok && err == nil {
			last[c] = msg
		}
	}
	var bad []string
	for _, c := range slices.Sorted(maps.Keys(last)) {
		if strings.HasPrefix(last[c], "executor exited") {
			bad = append(bad, fmt.Sprintf("container %d: %s", c, last[c]))
		}
	}
	if len(bad) == 0 {
		return "", nil
	}
	return fmt.Sprintf("Slurm job %s: %s (the executors' logs are in %s/%s/container-<i>/ on the nodes, the job's in %s/%s/job.log)",
		j.id, strings.Join(bad, "; "), sc.s.workDir, j.id, sc.s.workDir, j.id), nil
}
