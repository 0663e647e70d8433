package aurora

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
)

func init() { spi.RegisterScheduler("aurora", New, configKeys...) }

// KillMessage is the message killTasks records with the tasks it kills.
const KillMessage = "killed by egret"

// activeStates are Aurora's ACTIVE_STATES: a task in one of them occupies
// its instance id.
var activeStates = []auroraapi.ScheduleStatus{
	auroraapi.ScheduleStatus_ASSIGNED, auroraapi.ScheduleStatus_DRAINING, auroraapi.ScheduleStatus_KILLING,
	auroraapi.ScheduleStatus_PENDING, auroraapi.ScheduleStatus_PREEMPTING, auroraapi.ScheduleStatus_RESTARTING,
	auroraapi.ScheduleStatus_RUNNING, auroraapi.ScheduleStatus_STARTING, auroraapi.ScheduleStatus_PARTITIONED,
	auroraapi.ScheduleStatus_THROTTLED,
}

// Scheduler runs topologies as Aurora jobs through the scheduler's Thrift
// API. It keeps no state of its own: every call finds the topology's job
// by its key, <role>/<env>/<topology>.
type Scheduler struct {
	s      *settings
	t      *transport
	api    *auroraapi.AuroraSchedulerManagerClient
	log    *zap.Logger
	closed atomic.Bool
	// poll is the first pause between two reads of the job's tasks.
	poll time.Duration
}

var (
	_ spi.Scheduler   = (*Scheduler)(nil)
	_ spi.Scalable    = (*Scheduler)(nil)
	_ spi.JobRenderer = (*Scheduler)(nil)
)

// New builds the Aurora scheduler from the cluster config. It does not
// contact Aurora.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	if log == nil {
		log = zap.NewNop()
	}
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	t := &transport{url: s.api, user: s.user, password: s.password, http: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	return &Scheduler{s: s, t: t, api: newAPIClient(t), log: log.Named("aurora"), poll: 50 * time.Millisecond}, nil
}

// Schedule creates the topology's Aurora job and waits (at most
// egret.aurora.wait.timeout) until every instance runs. A topology that
// already runs gives spi.ErrExists. When an instance fails before it runs
// (a role without a Unix account on the agents, a package that cannot be
// fetched) or does not run in time (no agent has room), the job is killed
// again and the error says why.
func (sc *Scheduler) Schedule(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	jc, err := sc.s.buildJob(job)
	if err != nil {
		return err
	}
	key, name := jc.Key, sc.s.keyString(jc.Key)
	before, err := sc.tasks(ctx, key, nil)
	if err != nil {
		return err
	}
	if act := active(before); len(act) > 0 {
		return fmt.Errorf("aurora scheduler: topology %q already runs as Aurora job %s (instances %s); kill it first: %w",
			job.Topology, name, instanceIDs(instancesOf(act)), spi.ErrExists)
	}
	if _, err := sc.call(ctx, "create job "+name, func(ctx context.Context) (*auroraapi.Response, error) {
		return sc.api.CreateJob(ctx, jc)
	}); err != nil {
		var re *responseError
		if errors.As(err, &re) && strings.Contains(re.message, "already exists") {
			return fmt.Errorf("%w: %w", err, spi.ErrExists)
		}
		return err
	}
	sc.log.Info("created job", zap.String("job", name), zap.Int32("instances", jc.InstanceCount))
	seen := map[string]bool{}
	for _, t := range before {
		seen[t.GetAssignedTask().GetTaskId()] = true
	}
	if werr := sc.waitRunning(ctx, key, upTo(jc.InstanceCount), seen); werr != nil {
		// Leave nothing behind that Aurora would keep rescheduling.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sc.s.waitTimeout)
		defer cancel()
		if kerr := sc.kill(kctx, key); kerr != nil {
			return fmt.Errorf("%w; killing the job failed too (%v), run: aurora job killall %s", werr, kerr, name)
		}
		return fmt.Errorf("%w; the job was killed", werr)
	}
	return nil
}

// Kill kills every task of the topology's job and waits until they ended.
// Transient failures (the scheduler failing over, unreachable) are retried
// egret.aurora.kill.max.attempts times. Killing a topology without tasks
// succeeds.
func (sc *Scheduler) Kill(ctx context.Context, topology string) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	key, err := sc.s.jobKey(topology)
	if err != nil {
		return err
	}
	return sc.kill(ctx, key)
}

func (sc *Scheduler) kill(ctx context.Context, key *auroraapi.JobKey) error {
	name := sc.s.keyString(key)
	for attempt := 1; ; attempt++ {
		_, err := sc.call(ctx, "kill job "+name, func(ctx context.Context) (*auroraapi.Response, error) {
			return sc.api.KillTasks(ctx, key, nil, KillMessage)
		})
		if err == nil {
			break
		}
		if !transient(err) || attempt >= sc.s.killAttempts || ctx.Err() != nil {
			return err
		}
		sc.log.Warn("kill failed, retrying", zap.String("job", name), zap.Int("attempt", attempt), zap.Error(err))
		if err := sleep(ctx, sc.s.killRetry); err != nil {
			return fmt.Errorf("aurora scheduler: kill job %s: %w", name, err)
		}
	}
	sc.log.Info("killed job", zap.String("job", name))
	return sc.waitEnded(ctx, key, nil)
}

// Restart restarts the task of one container's instance, or of every
// instance with spi.AllContainers (Aurora's restartShards): Aurora kills
// the task and runs a new one for the same instance.
func (sc *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	key, err := sc.s.jobKey(topology)
	if err != nil {
		return err
	}
	ids, _, err := sc.running(ctx, key)
	if err != nil {
		return err
	}
	shards := ids
	if container != spi.AllContainers {
		if !slices.Contains(ids, int32(container)) {
			return fmt.Errorf("aurora scheduler: topology %q has no container %d (Aurora job %s has instances %s): %w",
				topology, container, sc.s.keyString(key), instanceIDs(ids), spi.ErrNotFound)
		}
		shards = []int32{int32(container)}
	}
	_, err = sc.call(ctx, "restart instances "+instanceIDs(shards)+" of job "+sc.s.keyString(key), func(ctx context.Context) (*auroraapi.Response, error) {
		return sc.api.RestartShards(ctx, key, shards)
	})
	if err == nil {
		sc.log.Info("restarted instances", zap.String("job", sc.s.keyString(key)), zap.String("instances", instanceIDs(shards)))
	}
	return err
}

// Update applies the new packing plan (job.Plan) to the running job: the
// instances of containers gone from the plan are killed, those of new
// containers added with the task config of instance 0, the others left
// alone. Aurora gives every instance the same resources, so a plan whose
// containers need more than the running task config fails with
// spi.ErrUnsupported before anything changes.
func (sc *Scheduler) Update(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	if job.Plan == nil || len(job.Plan.Containers) == 0 {
		return errors.New("aurora scheduler: update without packing plan containers")
	}
	if err := contiguous(job.Plan.Containers); err != nil {
		return fmt.Errorf("aurora scheduler: %w", err)
	}
	role, env := sc.s.roleEnv(job)
	if err := checkKey(job.Topology, role, env); err != nil {
		return err
	}
	key := Key(role, env, job.Topology)
	ids, template, err := sc.running(ctx, key)
	if err != nil {
		return err
	}
	want := upTo(int32(len(job.Plan.Containers) + 1))
	var remove []int32
	for _, id := range ids {
		if !slices.Contains(want, id) {
			remove = append(remove, id)
		}
	}
	var add []plan.Container
	for _, c := range job.Plan.Containers {
		if !slices.Contains(ids, int32(c.ID)) {
			add = append(add, c)
		}
	}
	if err := sc.checkFit(key, template, job.Plan.Containers); err != nil {
		return err
	}
	return sc.scale(ctx, key, ids, remove, add)
}

// AddContainers adds instances for containers to the running job, with the
// task config of instance 0. Aurora numbers new instances after the
// highest one, so the containers must continue the running ones.
func (sc *Scheduler) AddContainers(ctx context.Context, topology string, containers []plan.Container) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	key, err := sc.s.jobKey(topology)
	if err != nil {
		return err
	}
	ids, template, err := sc.running(ctx, key)
	if err != nil {
		return err
	}
	for _, c := range containers {
		if slices.Contains(ids, int32(c.ID)) {
			return fmt.Errorf("aurora scheduler: topology %q already has container %d: %w", topology, c.ID, spi.ErrExists)
		}
	}
	if err := sc.checkFit(key, template, containers); err != nil {
		return err
	}
	return sc.scale(ctx, key, ids, nil, containers)
}

// RemoveContainers kills the instances of containers and waits until they
// ended.
func (sc *Scheduler) RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	key, err := sc.s.jobKey(topology)
	if err != nil {
		return err
	}
	ids, _, err := sc.running(ctx, key)
	if err != nil {
		return err
	}
	var remove []int32
	for _, c := range containers {
		if c.ID == 0 {
			return errors.New("aurora scheduler: container 0 runs the topology manager and cannot be removed (kill the topology instead)")
		}
		if !slices.Contains(ids, int32(c.ID)) {
			return fmt.Errorf("aurora scheduler: topology %q has no container %d (Aurora job %s has instances %s): %w",
				topology, c.ID, sc.s.keyString(key), instanceIDs(ids), spi.ErrNotFound)
		}
		remove = append(remove, int32(c.ID))
	}
	return sc.scale(ctx, key, ids, remove, nil)
}

// JobLinks returns the job's page in the Aurora scheduler's UI.
func (sc *Scheduler) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if err := sc.check(ctx); err != nil {
		return nil, err
	}
	key, err := sc.s.jobKey(topology)
	if err != nil {
		return nil, err
	}
	return []string{JobURL(sc.s.base, key)}, nil
}

// JobURL is the page of job key in the UI of the Aurora scheduler at base.
func JobURL(base string, key *auroraapi.JobKey) string {
	return strings.TrimRight(base, "/") + "/scheduler/" + url.PathEscape(key.GetRole()) + "/" +
		url.PathEscape(key.GetEnvironment()) + "/" + url.PathEscape(key.GetName())
}

// RenderJob returns the Thermos job config Schedule would create, as the
// JSON `aurora job create --read-json` reads.
func (sc *Scheduler) RenderJob(job spi.Job) ([]byte, error) { return sc.s.renderJob(job) }

// Close releases idle connections; the topology keeps running. Later calls
// fail with spi.ErrClosed.
func (sc *Scheduler) Close() error {
	if sc.closed.CompareAndSwap(false, true) {
		sc.t.http.CloseIdleConnections()
	}
	return nil
}

// ---- helpers ----

func (sc *Scheduler) check(ctx context.Context) error {
	if sc.closed.Load() {
		return fmt.Errorf("aurora scheduler: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("aurora scheduler: %w", err)
	}
	return nil
}

// call runs one API call, checks that the scheduler serves the configured
// cluster, and turns every failure into an error that says what to do.
func (sc *Scheduler) call(ctx context.Context, what string, f func(context.Context) (*auroraapi.Response, error)) (*auroraapi.Response, error) {
	resp, err := f(ctx)
	if err == nil {
		if c := resp.GetServerInfo().GetClusterName(); c != "" && c != sc.s.cluster {
			return nil, fmt.Errorf("aurora scheduler: %s: the Aurora scheduler at %s serves cluster %q, not %q: set %s to the scheduler of cluster %q (or %s to %q)",
				what, sc.s.base, c, sc.s.cluster, KeySchedulerURI, sc.s.cluster, KeyCluster, c)
		}
		err = checkResponse(resp)
	}
	if err != nil {
		return nil, sc.fail(ctx, what, err)
	}
	return resp, nil
}

// callError is a failed call; transient tells whether trying again later
// may succeed.
type callError struct {
	err       error
	transient bool
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

func transient(err error) bool {
	var ce *callError
	return errors.As(err, &ce) && ce.transient
}

// fail turns a failed call into an error that says what went wrong and how
// to fix it. A cancelled context wins over everything.
func (sc *Scheduler) fail(ctx context.Context, what string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("aurora scheduler: %s: %w", what, cerr)
	}
	var he *httpError
	var re *responseError
	var ue *url.Error
	switch {
	case errors.As(err, &he) && (he.code == http.StatusUnauthorized || he.code == http.StatusForbidden):
		why := fmt.Sprintf("refused the credentials of user %q (check %s and %s)", sc.s.user, KeyUsername, KeyPassword)
		if sc.s.user == "" {
			why = fmt.Sprintf("requires authentication: set %s and %s (for example ${EGRET_AURORA_PASSWORD})", KeyUsername, KeyPassword)
		}
		return fmt.Errorf("aurora scheduler: %s: the Aurora scheduler at %s %s (HTTP %d)", what, sc.s.base, why, he.code)
	case errors.As(err, &he):
		t := he.code == http.StatusBadGateway || he.code == http.StatusServiceUnavailable || he.code == http.StatusGatewayTimeout
		return &callError{err: fmt.Errorf("aurora scheduler: %s: %s answered %w", what, sc.s.api, he), transient: t}
	case errors.As(err, &re) && re.code == auroraapi.ResponseCode_AUTH_FAILED:
		return fmt.Errorf("aurora scheduler: %s: Aurora denied it: %s (ask the cluster's operators for the permission, or submit with another role)", what, re.message)
	case errors.As(err, &re) && re.code == auroraapi.ResponseCode_JOB_UPDATING_ERROR:
		return fmt.Errorf("aurora scheduler: %s: an Aurora job update is in progress (%s): wait for it or abort it (aurora update abort) and try again", what, re.message)
	case errors.As(err, &re):
		return &callError{err: fmt.Errorf("aurora scheduler: %s: Aurora answered %w", what, re), transient: re.code == auroraapi.ResponseCode_ERROR_TRANSIENT}
	case errors.As(err, &ue):
		return &callError{err: fmt.Errorf("aurora scheduler: %s: cannot reach the Aurora scheduler at %s: %v; check that it runs and that %s is its address",
			what, sc.s.base, ue.Err, KeySchedulerURI), transient: true}
	}
	return fmt.Errorf("aurora scheduler: %s: %w", what, err)
}

// tasks returns the tasks of the job (of every status when statuses is
// empty), without their executor data.
func (sc *Scheduler) tasks(ctx context.Context, key *auroraapi.JobKey, statuses []auroraapi.ScheduleStatus) ([]*auroraapi.ScheduledTask, error) {
	q := &auroraapi.TaskQuery{JobKeys: []*auroraapi.JobKey{key}, Statuses: statuses}
	resp, err := sc.call(ctx, "read the tasks of job "+sc.s.keyString(key), func(ctx context.Context) (*auroraapi.Response, error) {
		return sc.api.GetTasksWithoutConfigs(ctx, q)
	})
	if err != nil {
		return nil, err
	}
	return resp.GetResult_().GetScheduleStatusResult_().GetTasks(), nil
}

// running returns the instance ids of the job's active tasks, ascending,
// and the task config of instance 0; spi.ErrNotFound when the job has no
// active instance 0.
func (sc *Scheduler) running(ctx context.Context, key *auroraapi.JobKey) ([]int32, *auroraapi.TaskConfig, error) {
	ts, err := sc.tasks(ctx, key, activeStates)
	if err != nil {
		return nil, nil, err
	}
	var template *auroraapi.TaskConfig
	for _, t := range ts {
		if t.GetAssignedTask().GetInstanceId() == 0 {
			template = t.GetAssignedTask().GetTask()
		}
	}
	if template == nil {
		return nil, nil, fmt.Errorf("aurora scheduler: topology %q has no running Aurora job %s: %w", key.GetName(), sc.s.keyString(key), spi.ErrNotFound)
	}
	return instancesOf(ts), template, nil
}

// checkFit fails with spi.ErrUnsupported when a container needs more than
// the job's task config gives every instance.
func (sc *Scheduler) checkFit(key *auroraapi.JobKey, template *auroraapi.TaskConfig, cs []plan.Container) error {
	for _, c := range cs {
		if ok, short := fits(c.Needs(), template); !ok {
			return fmt.Errorf("aurora scheduler: container %d needs more than the instances of Aurora job %s have (%s): Aurora gives every instance of a job the same resources and Egret does not resize a running job; kill and resubmit the topology: %w",
				c.ID, sc.s.keyString(key), short, spi.ErrUnsupported)
		}
	}
	return nil
}

// scale kills the instances remove (waiting until they ended) and then
// adds instances for the containers add. ids are the active instances.
// Aurora numbers added instances after the highest active one, so add
// must continue what remains; this is checked before anything changes.
func (sc *Scheduler) scale(ctx context.Context, key *auroraapi.JobKey, ids, remove []int32, add []plan.Container) error {
	name := sc.s.keyString(key)
	remain := slices.DeleteFunc(slices.Clone(ids), func(id int32) bool { return slices.Contains(remove, id) })
	slices.Sort(remain)
	addIDs := make([]int32, len(add))
	for i, c := range add {
		addIDs[i] = int32(c.ID)
	}
	slices.Sort(addIDs)
	for i, id := range addIDs {
		if next := remain[len(remain)-1] + 1 + int32(i); id != next {
			return fmt.Errorf("aurora scheduler: cannot add container %d to Aurora job %s: Aurora numbers new instances after the highest one (%d), so the containers to add must be %d, %d, ...: %w",
				id, name, remain[len(remain)-1], remain[len(remain)-1]+1, remain[len(remain)-1]+2, spi.ErrUnsupported)
		}
	}
	if len(remove) > 0 {
		if _, err := sc.call(ctx, "kill instances "+instanceIDs(remove)+" of job "+name, func(ctx context.Context) (*auroraapi.Response, error) {
			return sc.api.KillTasks(ctx, key, remove, KillMessage)
		}); err != nil {
			return err
		}
		sc.log.Info("killed instances", zap.String("job", name), zap.String("instances", instanceIDs(remove)))
		if err := sc.waitEnded(ctx, key, remove); err != nil {
			return err
		}
	}
	if len(addIDs) > 0 {
		ik := &auroraapi.InstanceKey{JobKey: key, InstanceId: 0}
		if _, err := sc.call(ctx, fmt.Sprintf("add %d instances to job %s", len(addIDs), name), func(ctx context.Context) (*auroraapi.Response, error) {
			return sc.api.AddInstances(ctx, ik, int32(len(addIDs)))
		}); err != nil {
			return err
		}
		sc.log.Info("added instances", zap.String("job", name), zap.String("instances", instanceIDs(addIDs)))
	}
	return nil
}

// waitRunning waits until every instance of want has a RUNNING task. A
// task not in seen that failed or got lost on the way fails the wait with
// its message; so does the wait timeout, with the reasons Aurora gives for
// the tasks still pending.
func (sc *Scheduler) waitRunning(ctx context.Context, key *auroraapi.JobKey, want []int32, seen map[string]bool) error {
	name := sc.s.keyString(key)
	deadline := time.Now().Add(sc.s.waitTimeout)
	pause := sc.poll
	for {
		ts, err := sc.tasks(ctx, key, nil)
		if err != nil {
			return err
		}
		running := map[int32]bool{}
		latest := map[int32]*auroraapi.ScheduledTask{}
		for _, t := range ts {
			id := t.GetAssignedTask().GetInstanceId()
			if seen[t.GetAssignedTask().GetTaskId()] || !slices.Contains(want, id) {
				continue
			}
			switch t.GetStatus() {
			case auroraapi.ScheduleStatus_FAILED, auroraapi.ScheduleStatus_LOST:
				return fmt.Errorf("aurora scheduler: instance %d of Aurora job %s is %s before it ran: %s (the logs of its processes are in the task's sandbox%s)",
					id, name, t.GetStatus(), lastMessage(t), onHost(t))
			case auroraapi.ScheduleStatus_RUNNING:
				running[id] = true
			}
			if slices.Contains(activeStates, t.GetStatus()) {
				latest[id] = t
			}
		}
		if len(running) == len(want) {
			return nil
		}
		if time.Now().After(deadline) {
			return sc.notRunning(ctx, key, want, running, latest)
		}
		if err := sleep(ctx, pause); err != nil {
			return fmt.Errorf("aurora scheduler: waiting for the instances of job %s to run: %w", name, err)
		}
		pause = min(2*pause, time.Second)
	}
}

// notRunning describes the instances that did not reach RUNNING in time.
func (sc *Scheduler) notRunning(ctx context.Context, key *auroraapi.JobKey, want []int32, running map[int32]bool, latest map[int32]*auroraapi.ScheduledTask) error {
	reasons := map[string]string{}
	q := &auroraapi.TaskQuery{JobKeys: []*auroraapi.JobKey{key}} // Aurora rejects statuses here: PENDING is implied
	if resp, err := sc.call(ctx, "read why tasks are pending", func(ctx context.Context) (*auroraapi.Response, error) {
		return sc.api.GetPendingReason(ctx, q)
	}); err == nil {
		for _, r := range resp.GetResult_().GetGetPendingReasonResult_().GetReasons() {
			reasons[r.GetTaskId()] = r.GetReason()
		}
	}
	var parts []string
	fit := false
	for _, id := range want {
		if running[id] {
			continue
		}
		t := latest[id]
		switch {
		case t == nil:
			parts = append(parts, fmt.Sprintf("instance %d has no task", id))
		case reasons[t.GetAssignedTask().GetTaskId()] != "":
			r := reasons[t.GetAssignedTask().GetTaskId()]
			fit = fit || strings.Contains(r, "Insufficient")
			parts = append(parts, fmt.Sprintf("instance %d is %s: %s", id, t.GetStatus(), r))
		default:
			parts = append(parts, fmt.Sprintf("instance %d is %s", id, t.GetStatus()))
		}
	}
	err := fmt.Errorf("aurora scheduler: Aurora job %s did not run within %s (%s): %s",
		sc.s.keyString(key), sc.s.waitTimeout, KeyWaitTimeout, strings.Join(parts, "; "))
	if fit {
		return fmt.Errorf("%w; no agent offers what each instance asks for: lower the topology's resources or add capacity: %w", err, spi.ErrCannotFit)
	}
	return err
}

// waitEnded waits until no task of the instances ids (of every instance
// when ids is nil) is active.
func (sc *Scheduler) waitEnded(ctx context.Context, key *auroraapi.JobKey, ids []int32) error {
	name := sc.s.keyString(key)
	deadline := time.Now().Add(sc.s.waitTimeout)
	pause := sc.poll
	for {
		ts, err := sc.tasks(ctx, key, activeStates)
		if err != nil {
			return err
		}
		var left []int32
		for _, id := range instancesOf(ts) {
			if ids == nil || slices.Contains(ids, id) {
				left = append(left, id)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aurora scheduler: instances %s of Aurora job %s are still active %s after they were killed (%s)",
				instanceIDs(left), name, sc.s.waitTimeout, KeyWaitTimeout)
		}
		if err := sleep(ctx, pause); err != nil {
			return fmt.Errorf("aurora scheduler: waiting for the instances of job %s to end: %w", name, err)
		}
		pause = min(2*pause, time.Second)
	}
}

func active(ts []*auroraapi.ScheduledTask) []*auroraapi.ScheduledTask {
	var out []*auroraapi.ScheduledTask
	for _, t := range ts {
		if slices.Contains(activeStates, t.GetStatus()) {
			out = append(out, t)
		}
	}
	return out
}

// instancesOf returns the distinct instance ids of tasks, ascending.
func instancesOf(ts []*auroraapi.ScheduledTask) []int32 {
	var ids []int32
	for _, t := range ts {
		if id := t.GetAssignedTask().GetInstanceId(); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// upTo returns 0..n-1.
func upTo(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func lastMessage(t *auroraapi.ScheduledTask) string {
	evs := t.GetTaskEvents()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].GetTimestamp() < evs[j].GetTimestamp() })
	for i := len(evs) - 1; i >= 0; i-- {
		if m := evs[i].GetMessage(); m != "" {
			return m
		}
	}
	return "no message"
}

func onHost(t *auroraapi.ScheduledTask) string {
	if h := t.GetAssignedTask().GetSlaveHost(); h != "" {
		return " on " + h
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
