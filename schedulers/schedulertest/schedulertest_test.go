package schedulertest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// cluster is an in-memory resource manager: topology → container →
// allocation id.
type cluster struct {
	mu   sync.Mutex
	jobs map[string]map[int]string
	next int
}

func newCluster() *cluster { return &cluster{jobs: map[string]map[int]string{}} }

func (c *cluster) allocLocked() string {
	c.next++
	return fmt.Sprintf("alloc-%d", c.next)
}

func (c *cluster) containers(_ context.Context, topology string) (map[int]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]string{}
	for id, a := range c.jobs[topology] {
		out[id] = a
	}
	return out, nil
}

// memScheduler is a library-mode scheduler on cluster. defect names one
// bug to inject ("" for none).
type memScheduler struct {
	c      *cluster
	defect string
}

func (s *memScheduler) check(ctx context.Context) error {
	if s.defect == "ignore-cancel" {
		return nil
	}
	return ctx.Err()
}

func (s *memScheduler) Schedule(ctx context.Context, job spi.Job) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if _, ok := s.c.jobs[job.Topology]; ok && s.defect != "resubmit-replaces" {
		return fmt.Errorf("topology %s: %w", job.Topology, spi.ErrExists)
	}
	if job.Role == unplaceableRole {
		// The resource manager took the job but cannot run it: a
		// conforming scheduler removes it and fails.
		if s.defect == "unplaceable-leaks" {
			s.c.jobs[job.Topology] = map[int]string{0: s.c.allocLocked()}
		}
		return fmt.Errorf("topology %s: no machine can run its containers", job.Topology)
	}
	m := map[int]string{}
	if s.defect != "no-container-0" {
		m[0] = s.c.allocLocked()
	}
	for _, ct := range job.Plan.Containers {
		m[ct.ID] = s.c.allocLocked()
	}
	s.c.jobs[job.Topology] = m
	return nil
}

func (s *memScheduler) Kill(ctx context.Context, topology string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if _, ok := s.c.jobs[topology]; !ok && s.defect == "kill-not-idempotent" {
		return fmt.Errorf("topology %s: %w", topology, spi.ErrNotFound)
	}
	delete(s.c.jobs, topology)
	return nil
}

func (s *memScheduler) Restart(ctx context.Context, topology string, container int) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	m, ok := s.c.jobs[topology]
	if !ok {
		return fmt.Errorf("topology %s: %w", topology, spi.ErrNotFound)
	}
	if container != spi.AllContainers {
		if _, ok := m[container]; !ok {
			return fmt.Errorf("container %d: %w", container, spi.ErrNotFound)
		}
	}
	for id := range m {
		if container == spi.AllContainers || id == container || s.defect == "restart-restarts-all" {
			m[id] = s.c.allocLocked()
		}
	}
	return nil
}

func (s *memScheduler) Update(ctx context.Context, job spi.Job) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	m, ok := s.c.jobs[job.Topology]
	if !ok {
		return fmt.Errorf("topology %s: %w", job.Topology, spi.ErrNotFound)
	}
	want := map[int]bool{0: true}
	for _, ct := range job.Plan.Containers {
		want[ct.ID] = true
	}
	for id := range m {
		if !want[id] {
			delete(m, id)
		}
	}
	for id := range want {
		if _, ok := m[id]; !ok || s.defect == "update-restarts" {
			m[id] = s.c.allocLocked()
		}
	}
	return nil
}

func (s *memScheduler) JobLinks(context.Context, string) ([]string, error) {
	return []string{"mem://jobs"}, nil
}

func (s *memScheduler) Close() error { return nil }

// memLauncher is a service-mode, scalable variant.
type memLauncher struct{ memScheduler }

func (s *memLauncher) Launch(ctx context.Context, job spi.Job) error { return s.Schedule(ctx, job) }

func (s *memLauncher) AddContainers(ctx context.Context, topology string, cs []plan.Container) error {
	return s.scale(ctx, topology, cs, true)
}

func (s *memLauncher) RemoveContainers(ctx context.Context, topology string, cs []plan.Container) error {
	return s.scale(ctx, topology, cs, false)
}

func (s *memLauncher) scale(ctx context.Context, topology string, cs []plan.Container, add bool) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	m, ok := s.c.jobs[topology]
	if !ok {
		return fmt.Errorf("topology %s: %w", topology, spi.ErrNotFound)
	}
	for _, ct := range cs {
		if add {
			m[ct.ID] = s.c.allocLocked()
		} else {
			delete(m, ct.ID)
		}
	}
	return nil
}

var (
	_ spi.Launcher = (*memLauncher)(nil)
	_ spi.Scalable = (*memLauncher)(nil)
)

// unplaceableRole marks the jobs Harness.Unplaceable made.
const unplaceableRole = "unplaceable"

// lose replaces a container's allocation, as a resource manager replaces a
// lost one; with the defect lost-not-replaced it only drops it.
func (c *cluster) lose(topology string, container int, defect string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.jobs[topology]
	if _, ok := m[container]; !ok {
		return fmt.Errorf("topology %s has no container %d", topology, container)
	}
	if defect == "lost-not-replaced" {
		delete(m, container)
		return nil
	}
	m[container] = c.allocLocked()
	return nil
}

// failOver replaces every allocation with the defect failover-restarts; a
// conforming resource manager leaves them alone.
func (c *cluster) failOver(defect string) {
	if defect != "failover-restarts" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.jobs {
		for id := range m {
			m[id] = c.allocLocked()
		}
	}
}

func harness(c *cluster, launcher bool, defect string) schedulertest.Harness {
	return schedulertest.Harness{
		New: func(t *testing.T, topology string) spi.Scheduler {
			if launcher {
				return &memLauncher{memScheduler{c: c, defect: defect}}
			}
			return &memScheduler{c: c, defect: defect}
		},
		Containers: c.containers,
		LoseContainer: func(_ context.Context, topology string, container int) error {
			return c.lose(topology, container, defect)
		},
		Unplaceable:  func(job *spi.Job) { job.Role = unplaceableRole },
		FailOver:     func(*testing.T) { c.failOver(defect) },
		Timeout:      2 * time.Second,
		PollInterval: 5 * time.Millisecond,
		StrictErrors: true,
	}
}

func TestConformingLibraryScheduler(t *testing.T) {
	c := newCluster()
	schedulertest.Run(t, harness(c, false, ""))
	if len(c.jobs) != 0 {
		t.Errorf("the suite left topologies behind: %v", c.jobs)
	}
}

func TestConformingLauncherScheduler(t *testing.T) {
	schedulertest.Run(t, harness(newCluster(), true, ""))
}

const defectEnv = "SCHEDULERTEST_DEFECT"

// TestDefectiveScheduler runs the suite against a scheduler with the bug
// named by $SCHEDULERTEST_DEFECT; TestSuiteCatchesDefects runs it in a
// child process and expects it to fail.
func TestDefectiveScheduler(t *testing.T) {
	defect := os.Getenv(defectEnv)
	if defect == "" {
		t.Skip("run by TestSuiteCatchesDefects")
	}
	h := harness(newCluster(), false, defect)
	h.Timeout = 300 * time.Millisecond // every wait on a broken scheduler times out
	schedulertest.Run(t, h)
}

func TestSuiteCatchesDefects(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in child processes")
	}
	for _, tc := range []struct {
		defect, failing, message string
	}{
		{"restart-restarts-all", "RestartOne", "container 0 changed"},
		{"resubmit-replaces", "ScheduleRunning", "a second submit of a running topology succeeded"},
		{"kill-not-idempotent", "Kill", "second Kill (must be idempotent)"},
		{"ignore-cancel", "CancelledContext", "submit with a cancelled context succeeded"},
		{"update-restarts", "Update", "must keep running untouched"},
		{"no-container-0", "Schedule", "waiting for containers [0 1 2] to run"},
		{"lost-not-replaced", "LostContainer", "waiting for container 1 to come back by itself"},
		{"unplaceable-leaks", "Unplaceable", "waiting for nothing to run after the failed submit"},
		{"failover-restarts", "FailOver", "after the resource manager failed over: container 0 changed"},
	} {
		t.Run(tc.defect, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestDefectiveScheduler$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), defectEnv+"="+tc.defect)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a scheduler with defect %s:\n%s", tc.defect, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestDefectiveScheduler/"+tc.failing+" ") {
				t.Errorf("subtest %s did not fail:\n%s", tc.failing, out)
			}
			if !strings.Contains(string(out), tc.message) {
				t.Errorf("output does not say %q:\n%s", tc.message, out)
			}
		})
	}
}
