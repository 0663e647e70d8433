package mesos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

func init() {
	spi.RegisterScheduler("mesos", New, configKeys...)
	spi.RegisterCommand(spi.Command{Name: FrameworkCommand, Args: "--work-dir W", Short: "Run the Mesos framework of one topology",
		Run: func(ctx context.Context, args []string, env spi.CommandEnv) error {
			dir, err := ParseFrameworkArgs(args)
			if err != nil {
				return spi.Usage(err)
			}
			return Serve(ctx, ServeConfig{WorkDir: dir}, env.Log)
		}})
}

// FrameworkCommand is the sub-command of the egret binary (and of
// egret-scheduler-mesos) that runs the framework service:
// `<binary> mesos-framework --work-dir W`.
const FrameworkCommand = "mesos-framework"

// Scheduler is the CLI side of the Mesos scheduler: Launch starts the
// topology's framework service; Kill, Restart and Update call it.
type Scheduler struct {
	s      *settings
	cfg    spi.Config // written for the framework service
	log    *zap.Logger
	client *http.Client
	// startTimeout bounds how long a framework process gets to serve its
	// control endpoint.
	startTimeout time.Duration
	poll         time.Duration
}

var (
	_ spi.Scheduler = (*Scheduler)(nil)
	_ spi.Launcher  = (*Scheduler)(nil)
	_ spi.Scalable  = (*Scheduler)(nil)
)

// New builds the Mesos scheduler of one topology from the cluster config
// resolved for that topology. It does not contact Mesos.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	if log == nil {
		log = zap.NewNop()
	}
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	return &Scheduler{s: s, cfg: cfg.Clone(), log: log.Named("mesos"), client: &http.Client{Timeout: 2 * time.Minute}, startTimeout: 30 * time.Second, poll: 100 * time.Millisecond}, nil
}

func (sc *Scheduler) path(name string) string { return filepath.Join(sc.s.workDir, name) }

func ctxErr(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mesos scheduler: %s: %w", what, err)
	}
	return nil
}

// Launch starts the topology's framework service, which subscribes to the
// master and launches one task per container, and waits until every
// container runs (at most egret.mesos.launch.timeout). When a container
// cannot run, the framework is torn down and the error says why.
func (sc *Scheduler) Launch(ctx context.Context, job spi.Job) error {
	if err := ctxErr(ctx, "launch "+job.Topology); err != nil {
		return err
	}
	if err := checkJob(job); err != nil {
		return err
	}
	if ep, err := sc.endpoint(); err == nil && ep.alive() {
		return fmt.Errorf("mesos scheduler: topology %q already has a framework (pid %d) in %s: %w", job.Topology, ep.PID, sc.s.workDir, spi.ErrExists)
	}
	if id := sc.frameworkID(); id != "" {
		return fmt.Errorf("mesos scheduler: topology %q has Mesos framework %s from an earlier submission (its framework process is not running); kill the topology first: %w", job.Topology, id, spi.ErrExists)
	}
	if err := os.MkdirAll(sc.s.workDir, 0o755); err != nil {
		return fmt.Errorf("mesos scheduler: create the working directory: %w", err)
	}
	// The framework runs with this scheduler's config, which may hold the
	// principal's secret.
	if err := writeJSON(sc.path(configFile), sc.cfg, 0o600); err != nil {
		return fmt.Errorf("mesos scheduler: write the config: %w", err)
	}
	if err := writeJSON(sc.path(jobFile), job, 0o644); err != nil {
		return fmt.Errorf("mesos scheduler: write the job: %w", err)
	}
	if err := sc.start(ctx); err != nil {
		_ = os.RemoveAll(sc.s.workDir)
		return err
	}
	if err := sc.waitRunning(ctx, job.Topology); err != nil {
		sc.abandon(job.Topology)
		return fmt.Errorf("%w; the framework was torn down", err)
	}
	return nil
}

// Schedule is Launch: the Mesos scheduler always runs as a framework
// service.
func (sc *Scheduler) Schedule(ctx context.Context, job spi.Job) error { return sc.Launch(ctx, job) }

// abandon stops a framework whose launch failed: kill and teardown, and
// the working directory removed.
func (sc *Scheduler) abandon(topology string) {
	ctx, cancel := context.WithTimeout(context.Background(), sc.s.stopGrace+time.Minute)
	defer cancel()
	if err := sc.Kill(ctx, topology); err != nil {
		sc.log.Warn("could not clean up the failed launch", zap.Error(err))
	}
}

// start runs the framework process, detached, and waits until its control
// endpoint answers.
func (sc *Scheduler) start(ctx context.Context) error {
	bin, err := sc.s.frameworkBinary()
	if err != nil {
		return err
	}
	_ = os.Remove(sc.path(endpointFile))
	_ = os.Remove(sc.path(errorFile))
	out, err := os.OpenFile(sc.path(logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("mesos scheduler: %w", err)
	}
	defer out.Close()
	cmd := exec.Command(bin, FrameworkCommand, "--work-dir", sc.s.workDir)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mesos scheduler: start the framework (%s %s): %w", bin, FrameworkCommand, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(sc.startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := sc.status(ctx); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("mesos scheduler: the framework exited at start (%v): %s", err, sc.failure())
		case <-deadline.C:
			_ = cmd.Process.Kill()
			return fmt.Errorf("mesos scheduler: the framework did not serve within %s; see %s", sc.startTimeout, sc.path(logFile))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return fmt.Errorf("mesos scheduler: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// failure returns the framework's fatal error, or where its log is.
func (sc *Scheduler) failure() string {
	if b, err := os.ReadFile(sc.path(errorFile)); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b))
	}
	return "see " + sc.path(logFile)
}

// waitRunning polls the framework until every container's task runs, a
// container has a problem, the framework exits or
// egret.mesos.launch.timeout passes.
func (sc *Scheduler) waitRunning(ctx context.Context, topology string) error {
	ctx, cancel := context.WithTimeout(ctx, sc.s.launchTimeout)
	defer cancel()
	tick := time.NewTicker(sc.poll)
	defer tick.Stop()
	var last Status
	for {
		st, err := sc.status(ctx)
		if err == nil {
			last = st
			running, problems := 0, []string(nil)
			for _, c := range st.Containers {
				if c.State == mesos.TASK_RUNNING.String() {
					running++
				}
				if c.Problem != "" {
					problems = append(problems, c.Problem)
				}
			}
			if len(problems) > 0 {
				return fmt.Errorf("mesos scheduler: topology %q cannot run: %s: %w", topology, strings.Join(problems, "; "), spi.ErrCannotFit)
			}
			if running == len(st.Containers) && len(st.Containers) > 0 {
				return nil
			}
		} else if ep, eperr := sc.endpoint(); eperr != nil || !ep.alive() {
			return fmt.Errorf("mesos scheduler: the framework of topology %q stopped: %s", topology, sc.failure())
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("mesos scheduler: topology %q: not every container runs after %s (%s): %s", topology, sc.s.launchTimeout, KeyLaunchTimeout, summary(last))
			}
			return fmt.Errorf("mesos scheduler: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// summary describes the containers that do not run.
func summary(st Status) string {
	var parts []string
	for _, c := range st.Containers {
		if c.State == mesos.TASK_RUNNING.String() {
			continue
		}
		p := fmt.Sprintf("container %d is %s", c.Container, c.State)
		if c.Message != "" {
			p += " (" + c.Message + ")"
		}
		if c.Waiting != "" {
			p += ", " + c.Waiting
		}
		parts = append(parts, p)
	}
	if !st.Connected && st.LastError != "" {
		parts = append(parts, "the framework is not subscribed: "+st.LastError)
	}
	if len(parts) == 0 {
		return "no status from the framework"
	}
	return strings.Join(parts, "; ")
}

// Kill kills every task of the topology and tears its framework down. The
// framework service does it when it runs; when its process is gone, Kill
// subscribes as the framework itself (failing over) to tear it down. A
// topology never launched, or already killed, is only cleaned up.
func (sc *Scheduler) Kill(ctx context.Context, topology string) error {
	if err := ctxErr(ctx, "kill "+topology); err != nil {
		return err
	}
	if ep, err := sc.endpoint(); err == nil && ep.alive() {
		if _, err := sc.post(ctx, ep, "/kill", nil); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("mesos scheduler: kill %s: %w", topology, ctx.Err())
			}
			return fmt.Errorf("mesos scheduler: kill %s: %w (the framework keeps running; see %s)", topology, err, sc.path(logFile))
		}
		if !waitGone(ctx, ep, sc.s.stopGrace+30*time.Second) {
			_ = syscall.Kill(ep.PID, syscall.SIGKILL)
		}
	} else if id := sc.frameworkID(); id != "" {
		if err := teardown(ctx, sc.s, topology, id, sc.log); err != nil {
			return err
		}
	}
	if err := ctxErr(ctx, "kill "+topology); err != nil {
		return err
	}
	if err := os.RemoveAll(sc.s.workDir); err != nil {
		return fmt.Errorf("mesos scheduler: remove %s: %w", sc.s.workDir, err)
	}
	return nil
}

// Restart relaunches the task of one container, or of all with
// spi.AllContainers.
func (sc *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	if err := ctxErr(ctx, "restart "+topology); err != nil {
		return err
	}
	ep, err := sc.ensure(ctx, topology)
	if err != nil {
		return err
	}
	path := "/restart"
	if container != spi.AllContainers {
		path += "?container=" + strconv.Itoa(container)
	}
	// A framework that has just lost its subscription (it learns of it
	// from its stream, after a status may still have said subscribed)
	// answers 503 until it has subscribed again.
	for {
		_, err = sc.post(ctx, ep, path, nil)
		if !errors.Is(err, errUnavailable) || !ep.alive() {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(sc.poll):
		}
	}
}

// errUnavailable: the framework cannot do it now (503); it may later.
var errUnavailable = errors.New("unavailable")

// unavailableError is a 503 answer of the framework: its message, and
// errors.Is(err, errUnavailable).
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Is(target error) bool { return target == errUnavailable }

// Update hands the new packing plan to the framework, which launches the
// new containers and kills those gone from the plan, and waits until every
// container runs.
func (sc *Scheduler) Update(ctx context.Context, job spi.Job) error {
	if err := ctxErr(ctx, "update "+job.Topology); err != nil {
		return err
	}
	if err := checkJob(job); err != nil {
		return err
	}
	ep, err := sc.ensure(ctx, job.Topology)
	if err != nil {
		return err
	}
	body, err := json.Marshal(job)
	if err != nil {
		return err
	}
	if _, err := sc.post(ctx, ep, "/update", body); err != nil {
		return err
	}
	return sc.waitRunning(ctx, job.Topology)
}

// ReplacedBy returns the containers of both plans whose resources differ:
// the framework relaunches their tasks with the new resources
// (spi.Replacer).
func (sc *Scheduler) ReplacedBy(current, next *plan.PackingPlan) []int {
	return plan.Resized(current, next)
}

// AddContainers adds containers to the running topology's plan.
func (sc *Scheduler) AddContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return sc.scale(ctx, topology, func(p *plan.PackingPlan) error {
		for _, c := range containers {
			if _, ok := p.Container(c.ID); ok || c.ID < 1 {
				return fmt.Errorf("mesos scheduler: cannot add container %d to topology %q: it exists, or is not 1 or more: %w", c.ID, topology, spi.ErrExists)
			}
			p.Containers = append(p.Containers, c)
		}
		return nil
	})
}

// RemoveContainers removes containers from the running topology's plan.
func (sc *Scheduler) RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return sc.scale(ctx, topology, func(p *plan.PackingPlan) error {
		for _, c := range containers {
			if _, ok := p.Container(c.ID); !ok {
				return fmt.Errorf("mesos scheduler: topology %q has no container %d: %w", topology, c.ID, spi.ErrNotFound)
			}
			p.Containers = slicesDelete(p.Containers, c.ID)
		}
		return nil
	})
}

func slicesDelete(cs []plan.Container, id int) []plan.Container {
	out := cs[:0:0]
	for _, c := range cs {
		if c.ID != id {
			out = append(out, c)
		}
	}
	return out
}

// scale changes the plan of the framework's job and updates with it.
func (sc *Scheduler) scale(ctx context.Context, topology string, edit func(*plan.PackingPlan) error) error {
	if err := ctxErr(ctx, "scale "+topology); err != nil {
		return err
	}
	var job spi.Job
	if err := readJSON(sc.path(jobFile), &job); err != nil {
		return fmt.Errorf("mesos scheduler: topology %q does not run here (%v): %w", topology, err, spi.ErrNotFound)
	}
	if job.Plan == nil {
		job.Plan = &plan.PackingPlan{}
	}
	if err := edit(job.Plan); err != nil {
		return err
	}
	return sc.Update(ctx, job)
}

// JobLinks returns the framework's page in the Mesos master's web UI.
func (sc *Scheduler) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if err := ctxErr(ctx, "job links of "+topology); err != nil {
		return nil, err
	}
	id := sc.frameworkID()
	if id == "" {
		return nil, fmt.Errorf("mesos scheduler: topology %q has no Mesos framework: %w", topology, spi.ErrNotFound)
	}
	return []string{sc.s.master + "/#/frameworks/" + url.PathEscape(id)}, nil
}

// Close does nothing: the framework keeps running.
func (sc *Scheduler) Close() error { return nil }

// Status returns the framework's view of the topology's containers.
func (sc *Scheduler) Status(ctx context.Context) (Status, error) { return sc.status(ctx) }

// ensure returns the endpoint of the topology's framework once it is
// subscribed, restarting a framework whose process died (it subscribes
// with its framework id: a failover). A running framework that lost its
// subscription (a new leading master, a broken stream) is waited for
// while it subscribes again.
func (sc *Scheduler) ensure(ctx context.Context, topology string) (endpoint, error) {
	if ep, err := sc.endpoint(); err == nil && ep.alive() {
		if err := sc.waitSubscribed(ctx); err != nil {
			return endpoint{}, err
		}
		return ep, nil
	}
	if !exists(sc.path(jobFile)) {
		return endpoint{}, fmt.Errorf("mesos scheduler: topology %q has no framework in %s: %w", topology, sc.s.workDir, spi.ErrNotFound)
	}
	sc.log.Warn("the framework of the topology is not running; starting it again (it fails over to its tasks)", zap.String("topology", topology))
	if err := sc.start(ctx); err != nil {
		return endpoint{}, err
	}
	if err := sc.waitSubscribed(ctx); err != nil {
		return endpoint{}, err
	}
	return sc.endpoint()
}

// waitSubscribed waits until the framework is subscribed.
func (sc *Scheduler) waitSubscribed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, sc.s.subscribeTimeout+10*time.Second)
	defer cancel()
	tick := time.NewTicker(sc.poll)
	defer tick.Stop()
	for {
		st, err := sc.status(ctx)
		if err == nil && st.Connected {
			return nil
		}
		if ep, eperr := sc.endpoint(); eperr != nil || !ep.alive() {
			return fmt.Errorf("mesos scheduler: the framework stopped: %s", sc.failure())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mesos scheduler: the framework did not subscribe to %s: %w", sc.s.master, ctx.Err())
		case <-tick.C:
		}
	}
}

func (sc *Scheduler) frameworkID() string {
	var fs frameworkState
	if readJSON(sc.path(frameworkFile), &fs) != nil {
		return ""
	}
	return fs.FrameworkID
}

func (sc *Scheduler) endpoint() (endpoint, error) {
	var ep endpoint
	err := readJSON(sc.path(endpointFile), &ep)
	if errors.Is(err, os.ErrNotExist) {
		return ep, fmt.Errorf("mesos scheduler: no framework runs in %s: %w", sc.s.workDir, spi.ErrNotFound)
	}
	return ep, err
}

func (sc *Scheduler) status(ctx context.Context) (Status, error) {
	var st Status
	ep, err := sc.endpoint()
	if err != nil {
		return st, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.URL+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := sc.client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("framework status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func (sc *Scheduler) post(ctx context.Context, ep endpoint, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := sc.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("mesos scheduler: the framework at %s: %w", ep.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	msg := strings.TrimSpace(string(b))
	switch resp.StatusCode {
	case http.StatusOK:
		return b, nil
	case http.StatusNotFound:
		return nil, fmt.Errorf("mesos scheduler: %s: %w", msg, spi.ErrNotFound)
	case http.StatusServiceUnavailable:
		return nil, &unavailableError{msg: fmt.Sprintf("mesos scheduler: %s: %s", path, msg)}
	}
	return nil, fmt.Errorf("mesos scheduler: %s: %s", path, msg)
}

// teardown subscribes as framework id (failing over from its dead
// scheduler) and tears it down, which kills its tasks. A framework the
// master already removed needs nothing.
func teardown(ctx context.Context, s *settings, topology, id string, log *zap.Logger) error {
	f := newFramework(s, spi.Job{Topology: topology}, "", log)
	f.id = id
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := f.caller.Call(sctx, calls.Subscribe(f.frameworkInfo()).With(calls.SubscribeTo(id)))
	if err != nil {
		return fmt.Errorf("mesos scheduler: subscribe to %s as framework %s to tear it down: %w", s.master, id, err)
	}
	defer resp.Close()
	for {
		var ev scheduler.Event
		if err := resp.Decode(&ev); err != nil {
			return fmt.Errorf("mesos scheduler: subscribe to %s as framework %s to tear it down: %w", s.master, id, err)
		}
		switch ev.Type {
		case scheduler.Event_ERROR:
			if strings.Contains(ev.GetError().GetMessage(), "has been removed") {
				return nil
			}
			return fmt.Errorf("mesos scheduler: the master refused framework %s: %s", id, ev.GetError().GetMessage())
		case scheduler.Event_SUBSCRIBED:
			if !f.call(&scheduler.Call{Type: scheduler.Call_TEARDOWN}) {
				return fmt.Errorf("mesos scheduler: TEARDOWN of framework %s at %s failed", id, s.master)
			}
			log.Info("tore down the framework of a topology whose framework process was gone", zap.String("framework_id", id))
			return nil
		}
	}
}

// waitGone waits until the framework process of ep has exited, at most
// timeout.
func waitGone(ctx context.Context, ep endpoint, timeout time.Duration) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for ep.alive() {
		select {
		case <-tick.C:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}
