package nomad

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/nomad/api"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

func init() { spi.RegisterScheduler("nomad", New, configKeys...) }

// Scheduler runs topologies as Nomad jobs. It keeps no state of its own:
// every call finds the topology's job again by name and meta.
type Scheduler struct {
	s      *settings
	ccfg   *api.Config
	client *api.Client
	log    *zap.Logger
	closed atomic.Bool
	// evalPoll is the first pause between two reads of an evaluation.
	evalPoll time.Duration
}

var (
	_ spi.Scheduler = (*Scheduler)(nil)
	_ spi.Scalable  = (*Scheduler)(nil)
)

// New builds the Nomad scheduler from the cluster config. It does not
// contact Nomad.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	if log == nil {
		log = zap.NewNop()
	}
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	ccfg := s.clientConfig()
	client, err := api.NewClient(ccfg)
	if err != nil {
		return nil, fmt.Errorf("nomad scheduler: client for %s: %w (check egret.nomad.address and the egret.nomad.tls.* files)", ccfg.Address, err)
	}
	return &Scheduler{s: s, ccfg: ccfg, client: client, log: log.Named("nomad"), evalPoll: 50 * time.Millisecond}, nil
}

// Schedule registers the topology's job and waits until Nomad has
// evaluated it. A topology that already runs gives spi.ErrExists; when
// Nomad cannot place a container the job is removed again and the error
// (wrapping spi.ErrCannotFit) says which resource was short.
func (sc *Scheduler) Schedule(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	j, err := sc.s.buildJob(job)
	if err != nil {
		return err
	}
	existing, err := sc.findJobs(ctx, job.Topology)
	if err != nil {
		return err
	}
	var index uint64 // 0: register only if the job is new
	for _, e := range existing {
		if !stopped(e) {
			return fmt.Errorf("nomad scheduler: topology %q already runs as Nomad job %s (status %s); kill it first: %w",
				job.Topology, deref(e.ID), deref(e.Status), spi.ErrExists)
		}
		if deref(e.ID) == deref(j.ID) {
			index = deref(e.JobModifyIndex) // a stopped job of the same id is replaced
		}
	}
	resp, err := sc.register(ctx, j, index)
	if err != nil {
		if isIndexConflict(err) {
			return fmt.Errorf("nomad scheduler: topology %q was registered by someone else meanwhile: %w", job.Topology, spi.ErrExists)
		}
		return err
	}
	sc.log.Info("registered job", zap.String("job", deref(j.ID)), zap.String("eval", resp.EvalID), zap.Int("groups", len(j.TaskGroups)))
	if _, perr := sc.placement(ctx, j, resp.EvalID); perr != nil {
		// Do not leave a job behind that Nomad would start later, when the
		// submission has failed.
		if _, _, err := sc.client.Jobs().DeregisterOpts(deref(j.ID), &api.DeregisterOptions{Purge: true}, sc.wopts(context.WithoutCancel(ctx))); err != nil {
			sc.log.Warn("could not remove the job that cannot be placed", zap.String("job", deref(j.ID)), zap.Error(err))
			return fmt.Errorf("%w; removing the job failed too, run: nomad job stop -purge %s", perr, deref(j.ID))
		}
		return fmt.Errorf("%w; the job was removed", perr)
	}
	return nil
}

// Kill deregisters and purges every Nomad job of the topology. Killing a
// topology without jobs succeeds.
func (sc *Scheduler) Kill(ctx context.Context, topology string) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	jobs, err := sc.findJobs(ctx, topology)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		id := deref(j.ID)
		_, _, err := sc.client.Jobs().DeregisterOpts(id, &api.DeregisterOptions{Purge: true}, sc.wopts(ctx))
		if err != nil && !isNotFound(err) {
			return sc.fail(ctx, "deregister job "+id, err)
		}
		sc.log.Info("deregistered and purged job", zap.String("job", id))
	}
	return nil
}

// Restart restarts the executor task of one container's allocation, or
// of every container's with spi.AllContainers. Nomad restarts the task in
// place: the allocation (and its node and ports) stays.
func (sc *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	j, err := sc.runningJob(ctx, topology)
	if err != nil {
		return err
	}
	ids := containersOf(j)
	want := ids
	if container != spi.AllContainers {
		if !slices.Contains(ids, container) {
			return fmt.Errorf("nomad scheduler: topology %q has no container %d (containers %s): %w", topology, container, span(ids), spi.ErrNotFound)
		}
		want = []int{container}
	}
	allocs, _, err := sc.client.Jobs().Allocations(deref(j.ID), false, sc.qopts(ctx))
	if err != nil {
		return sc.fail(ctx, "list allocations of job "+deref(j.ID), err)
	}
	var targets []*api.AllocationListStub
	for _, c := range want {
		a := liveAlloc(allocs, GroupName(c))
		if a == nil {
			// Nomad lists an allocation pending while its task starts,
			// and its servers learn of a client's task states late: a
			// pending allocation may run an executor from before this
			// restart. Its client knows, and refuses the restart of a
			// task not running yet.
			a = startingAlloc(allocs, GroupName(c))
		}
		if a == nil {
			return fmt.Errorf("nomad scheduler: container %d of topology %q has no running allocation (%s); Nomad restarts or places it by itself",
				c, topology, allocSummary(allocs, GroupName(c)))
		}
		targets = append(targets, a)
	}
	for _, a := range targets {
		err := sc.client.Allocations().Restart(&api.Allocation{ID: a.ID}, TaskName, sc.qopts(ctx))
		if err != nil && taskNotRunning(err) { // listed either way, the client is starting it
			sc.log.Warn("container's executor is starting, so it runs fresh; not restarting it again", zap.String("group", a.TaskGroup), zap.String("alloc", a.ID))
			continue
		}
		if err != nil {
			return sc.fail(ctx, fmt.Sprintf("restart allocation %s (%s)", a.ID, a.TaskGroup), err)
		}
		sc.log.Info("restarted allocation", zap.String("alloc", a.ID), zap.String("group", a.TaskGroup))
	}
	return nil
}

// Update applies the new packing plan (job.Plan) to the running job: task
// groups of new containers are added, those of containers gone from the
// plan removed, those of containers whose resources changed replaced; the
// others stay exactly as they run, so Nomad leaves them alone. The package
// and the cluster config stay the running job's.
func (sc *Scheduler) Update(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	cur, err := sc.runningJob(ctx, job.Topology)
	if err != nil {
		return err
	}
	if job.Plan == nil {
		return errors.New("nomad scheduler: update without a packing plan")
	}
	next, err := sc.s.updatedJob(cur, job.Plan)
	if err != nil {
		return fmt.Errorf("nomad scheduler: update topology %q: %w", job.Topology, err)
	}
	return sc.replace(ctx, cur, next)
}

// ReplacedBy returns the containers of both plans whose resources differ:
// Update gives them new task groups, and Nomad replaces their allocations
// (spi.Replacer).
func (sc *Scheduler) ReplacedBy(current, next *plan.PackingPlan) []int {
	return plan.Resized(current, next)
}

// AddContainers adds the task groups of containers to the running job.
func (sc *Scheduler) AddContainers(ctx context.Context, topology string, containers []plan.Container) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	cur, err := sc.runningJob(ctx, topology)
	if err != nil {
		return err
	}
	base, err := jobFromNomad(cur)
	if err != nil {
		return fmt.Errorf("nomad scheduler: %w", err)
	}
	next := copyJob(cur)
	have := containersOf(cur)
	for _, c := range containers {
		if c.ID < 1 {
			return fmt.Errorf("nomad scheduler: cannot add container %d: plan containers start at 1", c.ID)
		}
		if slices.Contains(have, c.ID) {
			return fmt.Errorf("nomad scheduler: topology %q already has container %d: %w", topology, c.ID, spi.ErrExists)
		}
		have = append(have, c.ID)
		tg, err := sc.s.buildGroup(base, c.ID, c.Needs())
		if err != nil {
			return err
		}
		next.TaskGroups = append(next.TaskGroups, tg)
	}
	return sc.replace(ctx, cur, next)
}

// RemoveContainers removes the task groups of containers from the running
// job; Nomad stops their allocations.
func (sc *Scheduler) RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	cur, err := sc.runningJob(ctx, topology)
	if err != nil {
		return err
	}
	drop := map[string]bool{}
	have := containersOf(cur)
	for _, c := range containers {
		if c.ID == 0 {
			return fmt.Errorf("nomad scheduler: container 0 runs the topology manager and cannot be removed (kill the topology instead)")
		}
		if !slices.Contains(have, c.ID) {
			return fmt.Errorf("nomad scheduler: topology %q has no container %d (containers %s): %w", topology, c.ID, span(have), spi.ErrNotFound)
		}
		drop[GroupName(c.ID)] = true
	}
	next := copyJob(cur)
	next.TaskGroups = slices.DeleteFunc(next.TaskGroups, func(tg *api.TaskGroup) bool { return drop[deref(tg.Name)] })
	return sc.replace(ctx, cur, next)
}

// JobLinks returns the Nomad UI page of the topology's job.
func (sc *Scheduler) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if err := sc.check(ctx); err != nil {
		return nil, err
	}
	j, err := sc.runningJob(ctx, topology)
	if err != nil {
		return nil, err
	}
	ns := deref(j.Namespace)
	if ns == "" {
		ns = "default"
	}
	return []string{sc.s.uiBase(sc.ccfg) + "/ui/jobs/" + url.PathEscape(deref(j.ID)) + "@" + url.PathEscape(ns)}, nil
}

// Close releases the client's idle connections; the topology keeps
// running. Later calls fail with spi.ErrClosed.
func (sc *Scheduler) Close() error {
	if sc.closed.CompareAndSwap(false, true) {
		sc.client.Close()
	}
	return nil
}

// ---- helpers ----

func (sc *Scheduler) check(ctx context.Context) error {
	if sc.closed.Load() {
		return fmt.Errorf("nomad scheduler: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("nomad scheduler: %w", err)
	}
	return nil
}

func (sc *Scheduler) qopts(ctx context.Context) *api.QueryOptions {
	return (&api.QueryOptions{}).WithContext(ctx)
}

func (sc *Scheduler) wopts(ctx context.Context) *api.WriteOptions {
	return (&api.WriteOptions{}).WithContext(ctx)
}

// findJobs returns the Nomad jobs of a topology, running or stopped: the
// jobs whose ID starts with the topology name, whose name is the topology
// and whose meta says egret submitted them.
func (sc *Scheduler) findJobs(ctx context.Context, topology string) ([]*api.Job, error) {
	if topology == "" {
		return nil, errors.New("nomad scheduler: no topology name given")
	}
	stubs, _, err := sc.client.Jobs().List((&api.QueryOptions{Prefix: topology}).WithContext(ctx))
	if err != nil {
		return nil, sc.fail(ctx, "list jobs", err)
	}
	var out []*api.Job
	for _, st := range stubs {
		if st.Name != topology {
			continue
		}
		j, _, err := sc.client.Jobs().Info(st.ID, sc.qopts(ctx))
		if err != nil {
			if isNotFound(err) {
				continue // purged meanwhile
			}
			return nil, sc.fail(ctx, "read job "+st.ID, err)
		}
		if j.Meta[MetaTopology] != topology {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

// runningJob returns the topology's job that is not stopped.
func (sc *Scheduler) runningJob(ctx context.Context, topology string) (*api.Job, error) {
	jobs, err := sc.findJobs(ctx, topology)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if !stopped(j) {
			return j, nil
		}
	}
	ns := sc.ccfg.Namespace
	if ns == "" {
		ns = "default"
	}
	return nil, fmt.Errorf("nomad scheduler: topology %q has no running Nomad job in namespace %q: %w", topology, ns, spi.ErrNotFound)
}

func stopped(j *api.Job) bool { return deref(j.Stop) || deref(j.Status) == "dead" }

// register registers j; index > 0 requires the current job to have that
// modify index, 0 requires the job to be new.
func (sc *Scheduler) register(ctx context.Context, j *api.Job, index uint64) (*api.JobRegisterResponse, error) {
	resp, _, err := sc.client.Jobs().RegisterOpts(j, &api.RegisterOptions{EnforceIndex: true, ModifyIndex: index}, sc.wopts(ctx))
	if err != nil {
		var ure api.UnexpectedResponseError
		if errors.As(err, &ure) && ure.StatusCode() != 403 && ctx.Err() == nil && !isIndexConflict(err) {
			return nil, fmt.Errorf("nomad scheduler: Nomad rejected job %s (HTTP %d): %s", deref(j.ID), ure.StatusCode(), oneLine(ure.Body()))
		}
		return nil, sc.fail(ctx, "register job "+deref(j.ID), err)
	}
	if resp.Warnings != "" {
		sc.log.Warn("Nomad accepted the job with warnings", zap.String("job", deref(j.ID)), zap.String("warnings", resp.Warnings))
	}
	return resp, nil
}

// replace registers next in place of cur and checks the placement.
func (sc *Scheduler) replace(ctx context.Context, cur, next *api.Job) error {
	resp, err := sc.register(ctx, next, deref(cur.JobModifyIndex))
	if err != nil {
		if isIndexConflict(err) {
			return fmt.Errorf("nomad scheduler: job %s changed while it was being updated; try again: %w", deref(cur.ID), spi.ErrVersionConflict)
		}
		return err
	}
	sc.log.Info("updated job", zap.String("job", deref(next.ID)), zap.String("eval", resp.EvalID), zap.Int("groups", len(next.TaskGroups)))
	ev, err := sc.placement(ctx, next, resp.EvalID)
	if err != nil {
		return fmt.Errorf("%w; the containers that were placed keep running and Nomad places the others once resources free up (or update again with a smaller plan)", err)
	}
	if ev != nil && ev.DeploymentID != "" {
		return sc.waitDeployment(ctx, next, ev.DeploymentID)
	}
	return nil
}

func isIndexConflict(err error) bool {
	var ure api.UnexpectedResponseError
	return errors.As(err, &ure) && strings.Contains(ure.Body(), "Enforcing job modify index")
}

// liveAlloc returns the running allocation of group, if any.
func liveAlloc(allocs []*api.AllocationListStub, group string) *api.AllocationListStub {
	for _, a := range allocs {
		if a.TaskGroup == group && a.DesiredStatus == api.AllocDesiredStatusRun && a.ClientStatus == api.AllocClientStatusRunning {
			return a
		}
	}
	return nil
}

// taskNotRunning reports whether err is a Nomad client's refusal to
// restart a task that is not running (its ErrTaskNotRunning).
func taskNotRunning(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "task not running")
}

// startingAlloc returns the allocation of group that Nomad lists as
// starting (client status pending), if any.
func startingAlloc(allocs []*api.AllocationListStub, group string) *api.AllocationListStub {
	for _, a := range allocs {
		if a.TaskGroup == group && a.DesiredStatus == api.AllocDesiredStatusRun && a.ClientStatus == api.AllocClientStatusPending {
			return a
		}
	}
	return nil
}

func allocSummary(allocs []*api.AllocationListStub, group string) string {
	var parts []string
	for _, a := range allocs {
		if a.TaskGroup == group {
			parts = append(parts, fmt.Sprintf("allocation %s is %s/%s", shortID(a.ID), a.DesiredStatus, a.ClientStatus))
		}
	}
	if len(parts) == 0 {
		return "no allocation yet"
	}
	return strings.Join(parts, ", ")
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// span renders container ids compactly: "0..3" or "0, 2, 5".
func span(ids []int) string {
	if len(ids) == 0 {
		return "none"
	}
	contiguous := true
	for i := range ids {
		if ids[i] != ids[0]+i {
			contiguous = false
		}
	}
	if contiguous && len(ids) > 2 {
		return fmt.Sprintf("%d..%d", ids[0], ids[len(ids)-1])
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

var _ spi.JobRenderer = (*Scheduler)(nil)

// RenderJob returns the job Schedule would register, as the JSON
// `nomad job validate -json` and `nomad job plan -json` read.
func (sc *Scheduler) RenderJob(job spi.Job) ([]byte, error) {
	j, err := sc.s.buildJob(job)
	if err != nil {
		return nil, err
	}
	return renderJob(j)
}
