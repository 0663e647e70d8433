package schedulertest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
)

// Harness connects the suite to one scheduler implementation.
type Harness struct {
	// New returns a scheduler configured for topology (for a scheduler whose
	// config depends on the topology, such as local's working directory,
	// resolve it here). The suite calls New for every operation, as the CLI
	// builds a scheduler per command, and closes each scheduler it gets.
	// New or Open is required; under go test New may be used, outside of it
	// (egret plugin verify) only Open.
	New func(t *testing.T, topology string) spi.Scheduler

	// Open is New for harnesses that also run outside go test: it returns
	// a scheduler configured for topology, or an error that fails the
	// check. When set, the suite uses it instead of New.
	Open func(ctx context.Context, topology string) (spi.Scheduler, error)

	// Containers observes the resource manager directly and returns the
	// running containers of topology: container id → an identity that
	// changes whenever the container is replaced (a pid, an allocation id).
	// It returns an empty map, not an error, when none run. The suite polls
	// it and retries errors until its deadline. Required.
	Containers func(ctx context.Context, topology string) (map[int]string, error)

	// EditJob, when set, adjusts every job the suite submits (for example
	// to point PackageURI at a package the executors can fetch).
	EditJob func(job *spi.Job)

	// Timeout bounds each scheduler call and each wait for the containers
	// to reach a state (default 30s).
	Timeout time.Duration

	// PollInterval is the pause between two Containers calls (default
	// 50ms).
	PollInterval time.Duration

	// UpdateMayRestart relaxes the Update checks: by default the containers
	// that a new plan keeps must keep running untouched.
	UpdateMayRestart bool

	// LoseContainer, when set, makes the resource manager lose a running
	// container of topology the way a machine failure would (its processes
	// killed), without a call to the scheduler. The suite then checks that
	// the container comes back by itself as a new one and that the others
	// keep running untouched.
	LoseContainer func(ctx context.Context, topology string, container int) error

	// Unplaceable, when set, changes a job so that the resource manager
	// accepts it but can never run its containers (a role without an
	// account on the machines, more resources than any machine has). The
	// suite checks that submitting it fails and leaves nothing running,
	// and that the topology can then be submitted normally.
	Unplaceable func(job *spi.Job)

	// FailOver, when set, restarts (or cuts off and restores) the resource
	// manager's control plane while a topology runs. The suite checks that
	// the containers keep running untouched and that the scheduler works
	// afterwards.
	FailOver func(t *testing.T)

	// Impossible names the fault checks ("LostContainer", "Unplaceable",
	// "FailOver") this resource manager cannot be put through, each with
	// the reason, a property of the resource manager (for example: the
	// local scheduler places every container on this machine, with no
	// resources to run out of). The check is skipped with that reason. (A
	// hook neither set nor declared impossible also skips its check, as
	// for `egret plugin verify`, which has no hooks; the harnesses of this
	// repository set one or the other.)
	Impossible map[string]string

	// StrictErrors requires the sentinel errors the CLI relies on:
	// spi.ErrExists from a second submit of a running topology and
	// context.Canceled from a call with a cancelled context. Without it
	// their absence is only logged.
	StrictErrors bool
}

// Run runs the conformance suite as subtests of t. Each subtest uses its own
// topology (named conformance-<check>-<random>) and kills it when done.
func Run(t spitest.T, h Harness) {
	t.Helper()
	if (h.New == nil && h.Open == nil) || h.Containers == nil {
		t.Fatal("schedulertest: Harness.New (or Open) and Harness.Containers are required")
	}
	if h.Open == nil && spitest.Testing(t) == nil {
		t.Fatal("schedulertest: Harness.New needs go test (a *testing.T); set Harness.Open to run the suite elsewhere")
	}
	if h.Timeout <= 0 {
		h.Timeout = 30 * time.Second
	}
	if h.PollInterval <= 0 {
		h.PollInterval = 50 * time.Millisecond
	}
	s := &suite{h: h}
	for _, c := range []struct {
		name string
		run  func(spitest.T)
	}{
		{"Schedule", s.testSchedule},
		{"ScheduleRunning", s.testScheduleRunning},
		{"RestartOne", s.testRestartOne},
		{"RestartAll", s.testRestartAll},
		{"RestartUnknownContainer", s.testRestartUnknown},
		{"Update", s.testUpdate},
		{"Scalable", s.testScalable},
		{"Kill", s.testKill},
		{"KillNeverScheduled", s.testKillNeverScheduled},
		{"CancelledContext", s.testCancelled},
		{"LostContainer", s.testLost},
		{"Unplaceable", s.testUnplaceable},
		{"FailOver", s.testFailOver},
	} {
		spitest.Run(t, c.name, c.run)
	}
}

// NewJob returns the job the suite submits: topology with a packing plan of
// containers containers (ids 1..containers, one instance each). Container 0
// is not in the plan; the scheduler must run it too.
func NewJob(topology string, containers int) spi.Job {
	res := plan.Resources{CPU: 0.5, RAM: 128 << 20, Disk: 256 << 20}
	p := &plan.PackingPlan{TopologyID: topology + "-id"}
	for i := 1; i <= containers; i++ {
		p.Containers = append(p.Containers, plan.Container{
			ID:        i,
			Instances: []plan.Instance{{Component: "word", TaskID: i, Index: i - 1, Resources: res}},
			Required:  res,
		})
	}
	sum := sha256.Sum256([]byte("egret scheduler conformance package"))
	return spi.Job{
		Topology:      topology,
		TopologyID:    topology + "-id",
		Cluster:       "conformance",
		Role:          "tester",
		Environ:       "test",
		PackageURI:    "file:///nonexistent/egret-conformance/topology.tar.gz",
		PackageSHA256: hex.EncodeToString(sum[:]),
		Plan:          p,
		Config:        spi.Config{"egret.topology.name": topology},
	}
}

type suite struct{ h Harness }

func (s *suite) job(topology string, containers int) spi.Job {
	j := NewJob(topology, containers)
	if s.h.EditJob != nil {
		s.h.EditJob(&j)
	}
	return j
}

// topology returns a fresh topology name for t and kills it when t ends.
func (s *suite) topology(t spitest.T, check string) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "conformance-" + check + "-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := s.call(t, ctx, name, func(sc spi.Scheduler) error { return sc.Kill(ctx, name) }); err != nil {
			t.Errorf("cleanup: kill %s: %v", name, err)
			return
		}
		if _, ok := s.poll(ctx, name, want()); !ok {
			t.Errorf("cleanup: containers of %s still run after kill", name)
		}
	})
	return name
}

// call runs f on a fresh scheduler for topology and closes it.
func (s *suite) call(t spitest.T, ctx context.Context, topology string, f func(spi.Scheduler) error) error {
	t.Helper()
	sc := s.open(t, topology)
	err := f(sc)
	if cerr := sc.Close(); cerr != nil {
		t.Errorf("Close: %v", cerr)
	}
	return err
}

// open returns a fresh scheduler for topology from Harness.Open, or else
// from Harness.New. Opening has a context of its own: the operation's may
// be cancelled on purpose.
func (s *suite) open(t spitest.T, topology string) spi.Scheduler {
	t.Helper()
	if s.h.Open != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		sc, err := s.h.Open(ctx, topology)
		if err != nil {
			t.Fatalf("open a scheduler for %s: %v", topology, err)
		}
		if sc == nil {
			t.Fatal("Harness.Open returned a nil scheduler")
		}
		return sc
	}
	sc := s.h.New(spitest.Testing(t), topology)
	if sc == nil {
		t.Fatal("Harness.New returned a nil scheduler")
	}
	return sc
}

// do runs one operation with the harness timeout.
func (s *suite) do(t spitest.T, topology string, f func(context.Context, spi.Scheduler) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	defer cancel()
	return s.call(t, ctx, topology, func(sc spi.Scheduler) error { return f(ctx, sc) })
}

// submit submits job the way the CLI does: Launch for a service-mode
// scheduler, Schedule otherwise.
func submit(ctx context.Context, sc spi.Scheduler, job spi.Job) error {
	if l, ok := sc.(spi.Launcher); ok {
		return l.Launch(ctx, job)
	}
	return sc.Schedule(ctx, job)
}

// start submits a job of n containers and waits for containers 0..n.
func (s *suite) start(t spitest.T, topology string, n int) map[int]string {
	t.Helper()
	if err := s.do(t, topology, func(ctx context.Context, sc spi.Scheduler) error { return submit(ctx, sc, s.job(topology, n)) }); err != nil {
		t.Fatalf("submit %s with %d containers: %v", topology, n, err)
	}
	return s.waitFor(t, topology, fmt.Sprintf("containers %v to run", ids(n)), want(ids(n)...))
}

// condition reports whether an observation is the expected one.
type condition func(map[int]string) bool

// want is satisfied when exactly the containers ids run.
func want(ids ...int) condition {
	return func(got map[int]string) bool {
		if len(got) != len(ids) {
			return false
		}
		for _, id := range ids {
			if got[id] == "" {
				return false
			}
		}
		return true
	}
}

// and combines conditions.
func and(cs ...condition) condition {
	return func(got map[int]string) bool {
		for _, c := range cs {
			if !c(got) {
				return false
			}
		}
		return true
	}
}

// replaced is satisfied when each of ids has an identity other than in
// before.
func replaced(before map[int]string, ids ...int) condition {
	return func(got map[int]string) bool {
		for _, id := range ids {
			if got[id] == "" || got[id] == before[id] {
				return false
			}
		}
		return true
	}
}

func ids(n int) []int {
	out := make([]int, n+1)
	for i := range out {
		out[i] = i
	}
	return out
}

// poll observes topology until cond holds or ctx ends. It returns the last
// observation and whether cond held.
func (s *suite) poll(ctx context.Context, topology string, cond condition) (map[int]string, bool) {
	got, ok, _ := s.pollErr(ctx, topology, cond)
	return got, ok
}

// pollErr is poll that also returns the observer's last error.
func (s *suite) pollErr(ctx context.Context, topology string, cond condition) (map[int]string, bool, error) {
	tick := time.NewTicker(s.h.PollInterval)
	defer tick.Stop()
	var last map[int]string
	var lastErr error
	for {
		got, err := s.h.Containers(ctx, topology)
		if err == nil {
			last, lastErr = got, nil
			if cond(got) {
				return got, true, nil
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return last, false, lastErr
		case <-tick.C:
		}
	}
}

// waitFor waits until cond holds and fails t at the deadline.
func (s *suite) waitFor(t spitest.T, topology, what string, cond condition) map[int]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	defer cancel()
	got, ok, err := s.pollErr(ctx, topology, cond)
	if !ok {
		t.Fatalf("timed out after %s waiting for %s of %s; last observed %s (observer error: %v)", s.h.Timeout, what, topology, show(got), err)
	}
	return got
}

// observe returns the current containers of topology.
func (s *suite) observe(t spitest.T, topology string) map[int]string {
	t.Helper()
	return s.waitFor(t, topology, "an observation", func(map[int]string) bool { return true })
}

// same fails t unless each of ids has the identity it had in before.
func same(t spitest.T, what string, before, after map[int]string, ids ...int) {
	t.Helper()
	for _, id := range ids {
		if after[id] != before[id] {
			t.Errorf("%s: container %d changed from %q to %q; it must keep running untouched", what, id, before[id], after[id])
		}
	}
}

func show(m map[int]string) string {
	if m == nil {
		return "nothing"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, id := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d:%s", id, m[id])
	}
	b.WriteString("}")
	return b.String()
}

// sentinel checks that err wraps target: required with StrictErrors,
// logged otherwise.
func (s *suite) sentinel(t spitest.T, what string, err, target error) {
	t.Helper()
	if errors.Is(err, target) {
		return
	}
	if s.h.StrictErrors {
		t.Errorf("%s: error %q does not wrap %q", what, err, target)
	} else {
		t.Logf("note: %s: error %q does not wrap %q; the CLI cannot tell this case from others", what, err, target)
	}
}

func (s *suite) testSchedule(t spitest.T) {
	topo := s.topology(t, "schedule")
	before := s.start(t, topo, 2)
	var links []string
	if err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) (err error) {
		links, err = sc.JobLinks(ctx, topo)
		return err
	}); err != nil {
		t.Errorf("JobLinks of a running topology: %v", err)
	}
	t.Logf("job links: %q", links)
	same(t, "after JobLinks", before, s.observe(t, topo), 0, 1, 2)
}

func (s *suite) testScheduleRunning(t spitest.T) {
	topo := s.topology(t, "twice")
	before := s.start(t, topo, 2)
	err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error { return submit(ctx, sc, s.job(topo, 2)) })
	if err == nil {
		t.Fatal("a second submit of a running topology succeeded; it must fail")
	}
	s.sentinel(t, "second submit", err, spi.ErrExists)
	after := s.observe(t, topo)
	if !want(0, 1, 2)(after) {
		t.Fatalf("after the failed second submit the containers are %s, want 0..2 untouched", show(after))
	}
	same(t, "after the failed second submit", before, after, 0, 1, 2)
}

func (s *suite) restart(t spitest.T, topo string, container int) {
	t.Helper()
	if err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error { return sc.Restart(ctx, topo, container) }); err != nil {
		t.Fatalf("Restart(%d): %v", container, err)
	}
}

func (s *suite) testRestartOne(t spitest.T) {
	topo := s.topology(t, "restart")
	before := s.start(t, topo, 2)
	s.restart(t, topo, 1)
	after := s.waitFor(t, topo, "container 1 to be replaced", and(want(0, 1, 2), replaced(before, 1)))
	same(t, "Restart(1)", before, after, 0, 2)
}

func (s *suite) testRestartAll(t spitest.T) {
	topo := s.topology(t, "restartall")
	before := s.start(t, topo, 2)
	s.restart(t, topo, spi.AllContainers)
	s.waitFor(t, topo, "every container to be replaced", and(want(0, 1, 2), replaced(before, 0, 1, 2)))
}

func (s *suite) testRestartUnknown(t spitest.T) {
	topo := s.topology(t, "restart99")
	before := s.start(t, topo, 2)
	err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error { return sc.Restart(ctx, topo, 99) })
	if err == nil {
		t.Fatal("Restart(99) of a topology with containers 0..2 succeeded; it must fail")
	}
	t.Logf("Restart(99): %v", err)
	after := s.observe(t, topo)
	if !want(0, 1, 2)(after) {
		t.Fatalf("after Restart(99) the containers are %s, want 0..2 untouched", show(after))
	}
	same(t, "after Restart(99)", before, after, 0, 1, 2)
}

func (s *suite) update(t spitest.T, topo string, n int) {
	t.Helper()
	err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error { return sc.Update(ctx, s.job(topo, n)) })
	if errors.Is(err, spi.ErrUnsupported) {
		t.Skipf("Update is not supported: %v", err)
	}
	if err != nil {
		t.Fatalf("Update to %d containers: %v", n, err)
	}
}

func (s *suite) testUpdate(t spitest.T) {
	topo := s.topology(t, "update")
	before := s.start(t, topo, 2)

	s.update(t, topo, 3)
	grown := s.waitFor(t, topo, "container 3 to be added", want(0, 1, 2, 3))
	if !s.h.UpdateMayRestart {
		same(t, "Update to 3 containers", before, grown, 0, 1, 2)
	}

	s.update(t, topo, 1)
	shrunk := s.waitFor(t, topo, "containers 2 and 3 to be removed", want(0, 1))
	if !s.h.UpdateMayRestart {
		same(t, "Update to 1 container", grown, shrunk, 0, 1)
	}
}

func (s *suite) testScalable(t spitest.T) {
	topo := s.topology(t, "scale")
	probe := s.open(t, topo)
	_, ok := probe.(spi.Scalable)
	if err := probe.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !ok {
		t.Skip("the scheduler does not implement spi.Scalable")
	}
	before := s.start(t, topo, 2)
	extra := s.job(topo, 3).Plan.Containers[2:]
	if err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error {
		return sc.(spi.Scalable).AddContainers(ctx, topo, extra)
	}); err != nil {
		t.Fatalf("AddContainers(3): %v", err)
	}
	grown := s.waitFor(t, topo, "container 3 to be added", want(0, 1, 2, 3))
	same(t, "AddContainers(3)", before, grown, 0, 1, 2)
	if err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error {
		return sc.(spi.Scalable).RemoveContainers(ctx, topo, extra)
	}); err != nil {
		t.Fatalf("RemoveContainers(3): %v", err)
	}
	shrunk := s.waitFor(t, topo, "container 3 to be removed", want(0, 1, 2))
	same(t, "RemoveContainers(3)", before, shrunk, 0, 1, 2)
}

func (s *suite) kill(t spitest.T, topo, what string) {
	t.Helper()
	if err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error { return sc.Kill(ctx, topo) }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (s *suite) testKill(t spitest.T) {
	topo := s.topology(t, "kill")
	s.start(t, topo, 2)
	s.kill(t, topo, "Kill")
	s.waitFor(t, topo, "every container to stop", want())
	s.kill(t, topo, "second Kill (must be idempotent)")
	// Kill must leave nothing behind that would stop the topology from
	// being submitted again.
	s.start(t, topo, 1)
	s.kill(t, topo, "Kill after resubmitting")
	s.waitFor(t, topo, "every container to stop", want())
}

func (s *suite) testKillNeverScheduled(t spitest.T) {
	topo := s.topology(t, "never")
	s.kill(t, topo, "Kill of a topology that was never scheduled")
	if got := s.observe(t, topo); len(got) != 0 {
		t.Errorf("containers %s run for a topology that was never scheduled", show(got))
	}
}

func (s *suite) testCancelled(t spitest.T) {
	topo := s.topology(t, "cancel")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.call(t, ctx, topo, func(sc spi.Scheduler) error { return submit(ctx, sc, s.job(topo, 2)) })
	if err == nil {
		t.Fatal("submit with a cancelled context succeeded; it must fail and start nothing")
	}
	s.sentinel(t, "submit with a cancelled context", err, context.Canceled)
	// Had the cancelled submit started the topology, this one would fail
	// as a second submit.
	before := s.start(t, topo, 2)

	for _, op := range []struct {
		name string
		f    func(spi.Scheduler) error
	}{
		{"Restart(1)", func(sc spi.Scheduler) error { return sc.Restart(ctx, topo, 1) }},
		{"Restart(AllContainers)", func(sc spi.Scheduler) error { return sc.Restart(ctx, topo, spi.AllContainers) }},
		{"Update to 3 containers", func(sc spi.Scheduler) error { return sc.Update(ctx, s.job(topo, 3)) }},
		{"Kill", func(sc spi.Scheduler) error { return sc.Kill(ctx, topo) }},
	} {
		err := s.call(t, ctx, topo, op.f)
		if err == nil {
			t.Errorf("%s with a cancelled context succeeded; it must fail and change nothing", op.name)
			continue
		}
		s.sentinel(t, op.name+" with a cancelled context", err, context.Canceled)
	}
	after := s.observe(t, topo)
	if !want(0, 1, 2)(after) {
		t.Fatalf("after calls with a cancelled context the containers are %s, want 0..2 untouched", show(after))
	}
	same(t, "after calls with a cancelled context", before, after, 0, 1, 2)
}

// impossible skips a fault check whose hook is not set, with the
// harness's reason when it gives one.
func (s *suite) impossible(t spitest.T, check, hook string) {
	t.Helper()
	if why := s.h.Impossible[check]; why != "" {
		t.Skipf("not possible here, because %s", why)
	}
	t.Skipf("Harness.%s is not set", hook)
}

func (s *suite) testLost(t spitest.T) {
	if s.h.LoseContainer == nil {
		s.impossible(t, "LostContainer", "LoseContainer")
	}
	topo := s.topology(t, "lost")
	before := s.start(t, topo, 2)
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	defer cancel()
	if err := s.h.LoseContainer(ctx, topo, 1); err != nil {
		t.Fatalf("LoseContainer(1): %v", err)
	}
	after := s.waitFor(t, topo, "container 1 to come back by itself", and(want(0, 1, 2), replaced(before, 1)))
	same(t, "after container 1 was lost", before, after, 0, 2)
}

func (s *suite) testUnplaceable(t spitest.T) {
	if s.h.Unplaceable == nil {
		s.impossible(t, "Unplaceable", "Unplaceable")
	}
	topo := s.topology(t, "unplaceable")
	job := s.job(topo, 2)
	s.h.Unplaceable(&job)
	err := s.do(t, topo, func(ctx context.Context, sc spi.Scheduler) error { return submit(ctx, sc, job) })
	if err == nil {
		t.Fatal("submitting a job whose containers cannot run succeeded; it must fail")
	}
	t.Logf("submit of an unplaceable job: %v", err)
	s.waitFor(t, topo, "nothing to run after the failed submit", want())
	// Nothing of the failed submission may stand in the way.
	s.start(t, topo, 1)
}

func (s *suite) testFailOver(t spitest.T) {
	if s.h.FailOver == nil {
		s.impossible(t, "FailOver", "FailOver")
	}
	if spitest.Testing(t) == nil {
		t.Skip("Harness.FailOver needs go test")
	}
	topo := s.topology(t, "failover")
	before := s.start(t, topo, 2)
	s.h.FailOver(spitest.Testing(t))
	same(t, "after the resource manager failed over", before, s.observe(t, topo), 0, 1, 2)
	s.restart(t, topo, 1)
	after := s.waitFor(t, topo, "container 1 to be replaced after the failover", and(want(0, 1, 2), replaced(before, 1)))
	same(t, "Restart(1) after the failover", before, after, 0, 2)
}
