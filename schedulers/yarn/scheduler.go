package yarn

import (
	"context"
	"encoding/json"
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

	"github.com/egret-stream/egret/core/spi"
)

func init() { spi.RegisterScheduler("yarn", New, configKeys...) }

// Scheduler runs each topology as one YARN service. It keeps no state of
// its own: every call finds the topology's service again by its name.
type Scheduler struct {
	s      *settings
	c      *client
	log    *zap.Logger
	closed atomic.Bool
	// poll is the pause between two reads of a service's state.
	poll time.Duration
}

var (
	_ spi.Scheduler   = (*Scheduler)(nil)
	_ spi.JobRenderer = (*Scheduler)(nil)
	_ spi.Checker     = (*Scheduler)(nil)
)

// New builds the YARN scheduler from the cluster config. It does not
// contact YARN.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	if log == nil {
		log = zap.NewNop()
	}
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	return &Scheduler{s: s, c: newClient(s), log: log.Named("yarn"), poll: 500 * time.Millisecond}, nil
}

// Schedule submits the topology's service and waits (at most
// egret.yarn.launch.timeout) until YARN runs every container. A topology
// that already runs gives spi.ErrExists. The queue and the container sizes
// are checked against the ResourceManager first; a service that does not
// come up in time is removed again, and the error carries YARN's
// diagnostics.
func (sc *Scheduler) Schedule(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	svc, err := sc.s.buildService(job)
	if err != nil {
		return err
	}
	if err := sc.preflight(ctx, svc); err != nil {
		return err
	}
	cur, err := sc.c.getService(ctx, svc.Name)
	switch {
	case err == nil && !finished(cur.State):
		return fmt.Errorf("yarn scheduler: topology %q already runs as YARN service %s (state %s, application %s); kill it first: %w",
			job.Topology, svc.Name, cur.State, cur.ID, spi.ErrExists)
	case err == nil:
		// A stopped or failed service of the same name is replaced.
		if err := sc.c.deleteService(ctx, svc.Name); err != nil && !gone(err) {
			return sc.fail(ctx, "remove the finished service "+svc.Name, err)
		}
	case statusOf(err) != http.StatusNotFound:
		return sc.fail(ctx, "look up service "+svc.Name, err)
	}
	if err := sc.c.createService(ctx, svc); err != nil {
		if statusOf(err) == http.StatusConflict || strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("yarn scheduler: topology %q was submitted by someone else meanwhile: %w", job.Topology, spi.ErrExists)
		}
		sc.cleanup(ctx, svc.Name)
		return sc.fail(ctx, "submit service "+svc.Name, err)
	}
	sc.log.Info("submitted service", zap.String("service", svc.Name), zap.String("queue", svc.Queue), zap.Int("containers", len(job.Plan.Containers)+1))
	if err := sc.waitRunning(ctx, svc.Name, len(job.Plan.Containers)+1); err != nil {
		sc.cleanup(ctx, svc.Name)
		return fmt.Errorf("%w; the service was removed", err)
	}
	if sc.s.priority > 0 {
		cur, err := sc.c.getService(ctx, svc.Name)
		if err == nil {
			err = sc.c.setPriority(ctx, cur.ID, sc.s.priority)
		}
		if err != nil {
			return sc.fail(ctx, fmt.Sprintf("set the priority of service %s to %d (%s)", svc.Name, sc.s.priority, KeyPriority), err)
		}
	}
	return nil
}

// preflight checks what YARN would refuse, before anything is submitted:
// the queue must be a leaf queue of the capacity scheduler, and every
// container must fit the queue's largest allocation and a NodeManager.
func (sc *Scheduler) preflight(ctx context.Context, svc *Service) error {
	leaves, capacity, err := sc.c.leafQueues(ctx)
	if err != nil {
		return sc.fail(ctx, "read the scheduler's queues", err)
	}
	limit := resource{vcores: 1 << 30, memoryMB: 1 << 50}
	if capacity {
		var names []string
		var q *queueInfo
		for i := range leaves {
			names = append(names, leaves[i].QueueName)
			if leaves[i].QueueName == svc.Queue || leaves[i].QueuePath == svc.Queue {
				q = &leaves[i]
			}
		}
		if q == nil {
			sort.Strings(names)
			return fmt.Errorf("yarn scheduler: queue %q does not exist on ResourceManager %s (leaf queues: %s); set %s", svc.Queue, sc.s.rm.Host, strings.Join(names, ", "), KeyQueue)
		}
		if q.State != "" && q.State != "RUNNING" {
			return fmt.Errorf("yarn scheduler: queue %q is %s and takes no applications; set %s to a running queue", svc.Queue, q.State, KeyQueue)
		}
		if m := q.MaximumAllocation; m != nil && m.Memory > 0 {
			limit = resource{vcores: m.VCores, memoryMB: m.Memory}
		}
	}
	node, running, err := sc.c.largestNode(ctx)
	if err != nil {
		return sc.fail(ctx, "read the NodeManagers", err)
	}
	if running == 0 {
		return fmt.Errorf("yarn scheduler: ResourceManager %s has no running NodeManager", sc.s.rm.Host)
	}
	for _, comp := range svc.Components {
		need := resource{vcores: comp.Resource.CPUs}
		fmt.Sscan(comp.Resource.Memory, &need.memoryMB)
		what := "each worker container (containers 1..N)"
		if comp.Name == ComponentTManager {
			what = "the topology manager's container 0"
		}
		if !need.fits(limit) {
			return fmt.Errorf("yarn scheduler: %s needs %s, more than queue %q grants to one container (%s); lower the topology's resources or raise yarn.scheduler.maximum-allocation-*", what, need, svc.Queue, limit)
		}
		if !need.fits(node) {
			return fmt.Errorf("yarn scheduler: %s needs %s, more than the largest NodeManager has (%s); lower the topology's resources", what, need, node)
		}
	}
	return nil
}

// waitRunning waits until n containers of the service run, or fails with
// the service's or application's diagnostics.
func (sc *Scheduler) waitRunning(ctx context.Context, name string, n int) error {
	deadline := time.Now().Add(sc.s.launchTimeout)
	var last *Service
	for {
		svc, err := sc.c.getService(ctx, name)
		if err != nil && statusOf(err) != http.StatusNotFound {
			return sc.fail(ctx, "read service "+name, err)
		}
		if err == nil {
			last = svc
			if len(svc.Containers()) >= n {
				return nil
			}
			if svc.State == "FAILED" || svc.State == "STOPPED" {
				return fmt.Errorf("yarn scheduler: service %s is %s: %s", name, svc.State, sc.appDiagnostics(ctx, svc))
			}
		}
		if time.Now().After(deadline) {
			if last == nil {
				return fmt.Errorf("yarn scheduler: service %s did not appear within %s (%s)", name, sc.s.launchTimeout, KeyLaunchTimeout)
			}
			return fmt.Errorf("yarn scheduler: %d of %d containers of service %s run after %s (%s): %s",
				len(last.Containers()), n, name, sc.s.launchTimeout, KeyLaunchTimeout, sc.appDiagnostics(ctx, last))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("yarn scheduler: %w", ctx.Err())
		case <-time.After(sc.poll):
		}
	}
}

// appDiagnostics is the ResourceManager's diagnostics of the service's
// application (why it waits or failed), on one line.
func (sc *Scheduler) appDiagnostics(ctx context.Context, svc *Service) string {
	if svc.ID == "" {
		return "the application was not created (state " + svc.State + ")"
	}
	r, err := sc.c.app(context.WithoutCancel(ctx), svc.ID)
	if err != nil {
		return "application " + svc.ID + ": " + err.Error()
	}
	d := oneLine(r.App.Diagnostics)
	if d == "" {
		d = "no diagnostics"
	}
	return fmt.Sprintf("application %s is %s in queue %s: %s", svc.ID, r.App.State, r.App.Queue, d)
}

// cleanup removes a service after a failed submission.
func (sc *Scheduler) cleanup(ctx context.Context, name string) {
	if err := sc.c.deleteService(context.WithoutCancel(ctx), name); err != nil && !gone(err) {
		sc.log.Warn("could not remove the service of the failed submission", zap.String("service", name), zap.Error(err))
	}
}

// Kill stops and removes the topology's service (YARN kills its
// containers and deletes the service's files in HDFS). Killing a topology
// without a service succeeds.
func (sc *Scheduler) Kill(ctx context.Context, topology string) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	name := ServiceName(topology)
	if err := sc.c.deleteService(ctx, name); err != nil && !gone(err) {
		return sc.fail(ctx, "delete service "+name, err)
	}
	sc.log.Info("deleted service", zap.String("service", name))
	return nil
}

// Restart restarts one container (or all with spi.AllContainers): the
// NodeManager sends it SIGTERM (the executor stops its processes and
// exits) and the service's application master starts a new container for
// the same instance, as its restart policy says.
func (sc *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	svc, err := sc.running(ctx, topology)
	if err != nil {
		return err
	}
	ids := svc.planned()
	want := ids
	if container != spi.AllContainers {
		if !slices.Contains(ids, container) {
			return fmt.Errorf("yarn scheduler: topology %q has no container %d (containers 0..%d): %w", topology, container, ids[len(ids)-1], spi.ErrNotFound)
		}
		want = []int{container}
	}
	live := svc.Containers()
	for _, c := range want {
		id, ok := live[c]
		if !ok {
			return fmt.Errorf("yarn scheduler: container %d of topology %q (instance %s) runs no YARN container right now; its application master is starting one", c, topology, InstanceName(c))
		}
		if err := sc.c.signal(ctx, id, "GRACEFUL_SHUTDOWN"); err != nil {
			return sc.fail(ctx, fmt.Sprintf("stop YARN container %s (container %d)", id, c), err)
		}
		sc.log.Info("stopped container for a restart", zap.Int("container", c), zap.String("yarn_container", id))
	}
	return nil
}

// Update applies a new packing plan: YARN flexes the worker component to
// the plan's number of containers (adding or removing the highest
// numbered ones); the others keep running. The workers keep their size: a
// plan whose containers need more than the running ones is refused.
func (sc *Scheduler) Update(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	if err := checkPlan(job.Plan); err != nil {
		return fmt.Errorf("yarn scheduler: update topology %q: %w: %w", job.Topology, err, spi.ErrUnsupported)
	}
	svc, err := sc.running(ctx, job.Topology)
	if err != nil {
		return err
	}
	w := svc.component(ComponentWorker)
	if w == nil || w.Resource == nil {
		return fmt.Errorf("yarn scheduler: service %s has no %s component: it was not submitted by egret", svc.Name, ComponentWorker)
	}
	have := resource{vcores: w.Resource.CPUs}
	fmt.Sscan(w.Resource.Memory, &have.memoryMB)
	if need := workerResource(job.Plan); !need.fits(have) {
		return fmt.Errorf("yarn scheduler: the new plan's containers need %s, the running workers have %s; YARN cannot resize running containers (kill and resubmit the topology): %w", need, have, spi.ErrUnsupported)
	}
	n := len(job.Plan.Containers)
	if err := sc.c.flex(ctx, svc.Name, ComponentWorker, n); err != nil {
		return sc.fail(ctx, fmt.Sprintf("flex service %s to %d workers", svc.Name, n), err)
	}
	sc.log.Info("flexed service", zap.String("service", svc.Name), zap.Int("workers", n))
	return nil
}

// JobLinks returns the application's pages in the ResourceManager's UIs.
func (sc *Scheduler) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if err := sc.check(ctx); err != nil {
		return nil, err
	}
	svc, err := sc.running(ctx, topology)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(sc.s.rm.String(), "/")
	return []string{
		base + "/cluster/app/" + url.PathEscape(svc.ID),
		base + "/ui2/#/yarn-app/" + url.PathEscape(svc.ID) + "/components?service=" + url.QueryEscape(svc.Name),
	}, nil
}

// RenderJob returns the service spec Schedule would submit, as the
// Services API takes it (`egret submit --dry-run --dry-run-format
// yarn-json`; POST it to /app/v1/services to run it by hand).
func (sc *Scheduler) RenderJob(job spi.Job) ([]byte, error) {
	svc, err := sc.s.buildService(job)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(svc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("yarn scheduler: encode the service: %w", err)
	}
	return b, nil
}

// Close releases idle connections; the topology keeps running. Later
// calls fail with spi.ErrClosed.
func (sc *Scheduler) Close() error {
	if sc.closed.CompareAndSwap(false, true) {
		sc.c.http.CloseIdleConnections()
	}
	return nil
}

// Check checks that the ResourceManager answers, has the Services API
// enabled, a running NodeManager, and the configured queue.
func (sc *Scheduler) Check(ctx context.Context) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	var v struct {
		Version string `json:"hadoop_version"`
	}
	if err := sc.c.do(ctx, http.MethodGet, "/app/v1/services/version", nil, &v); err != nil {
		if statusOf(err) == http.StatusNotFound {
			return fmt.Errorf("yarn scheduler: ResourceManager %s has no Services API: set yarn.webapp.api-service.enable=true", sc.s.rm.Host)
		}
		return sc.fail(ctx, "reach the Services API", err)
	}
	probe := &Service{Queue: sc.s.queue, Components: []Component{{Name: ComponentWorker, Resource: &Resource{CPUs: 1, Memory: "1"}}}}
	return sc.preflight(ctx, probe)
}

// ---- helpers ----

func (sc *Scheduler) check(ctx context.Context) error {
	if sc.closed.Load() {
		return fmt.Errorf("yarn scheduler: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("yarn scheduler: %w", err)
	}
	return nil
}

// running returns the topology's service when it is not finished.
func (sc *Scheduler) running(ctx context.Context, topology string) (*Service, error) {
	if topology == "" {
		return nil, errors.New("yarn scheduler: no topology name given")
	}
	name := ServiceName(topology)
	svc, err := sc.c.getService(ctx, name)
	if statusOf(err) == http.StatusNotFound || (err == nil && finished(svc.State)) {
		return nil, fmt.Errorf("yarn scheduler: topology %q has no running YARN service (%s): %w", topology, name, spi.ErrNotFound)
	}
	if err != nil {
		return nil, sc.fail(ctx, "read service "+name, err)
	}
	return svc, nil
}

// finished reports whether a service state is final.
func finished(state string) bool {
	return state == "STOPPED" || state == "FAILED" || state == "SUCCEEDED"
}

// gone reports whether err says the service does not exist (DELETE of a
// missing service answers 400 "doesn't exist", GET 404).
func gone(err error) bool {
	return statusOf(err) == http.StatusNotFound || strings.Contains(err.Error(), "doesn't exist") || strings.Contains(err.Error(), "not found")
}

// fail wraps an error of the ResourceManager with what was being done.
func (sc *Scheduler) fail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("yarn scheduler: %s: %w", what, ctx.Err())
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return fmt.Errorf("yarn scheduler: %s: YARN says: %s", what, ae.diagnostics)
	}
	return fmt.Errorf("yarn scheduler: %s: %w (check %s)", what, err, KeyResourceManager)
}
