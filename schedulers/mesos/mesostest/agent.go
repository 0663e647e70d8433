package mesostest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/resources"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/internal/fetch"
)

// task is one launched task and its process.
type task struct {
	m       *Master
	seq     int
	fw      string
	fwName  string
	info    mesos.TaskInfo
	sandbox string

	// Guarded by m.mu.
	state   mesos.TaskState
	pending []mesos.TaskStatus // unacknowledged updates; the head is in flight

	pmu      sync.Mutex // guards the process fields
	pid      int
	started  bool
	killed   bool // the kill was asked for (KILL, TEARDOWN): TASK_KILLED
	stop     chan struct{}
	stopOnce sync.Once
	grace    time.Duration
	exited   chan struct{}
}

func (t *task) id() string { return t.info.TaskID.Value }

func terminalState(s mesos.TaskState) bool {
	switch s {
	case mesos.TASK_FINISHED, mesos.TASK_FAILED, mesos.TASK_KILLED, mesos.TASK_LOST, mesos.TASK_ERROR,
		mesos.TASK_DROPPED, mesos.TASK_GONE, mesos.TASK_GONE_BY_OPERATOR, mesos.TASK_UNKNOWN:
		return true
	}
	return false
}

// terminal reports whether the master saw the task end (m.mu held).
func (t *task) terminal() bool { return terminalState(t.state) }

// acceptLocked runs an ACCEPT call: LAUNCH operations start tasks; what the
// operations do not use is declined with the call's filters.
func (m *Master) acceptLocked(fw *framework, a *scheduler.Call_Accept) {
	var offered mesos.Resources
	invalid := ""
	for _, id := range a.OfferIDs {
		o := m.offers[id.Value]
		if o == nil || o.fw != fw.id {
			invalid = fmt.Sprintf("Offer %s is no longer valid", id.Value)
			continue
		}
		offered.Add(o.res...)
		delete(m.offers, o.id)
	}
	if len(a.OfferIDs) == 0 {
		invalid = "No offers specified"
	}
	remaining := offered.Clone()
	for _, op := range a.Operations {
		if op.GetType() != mesos.Offer_Operation_LAUNCH || op.Launch == nil {
			continue // only LAUNCH is modelled
		}
		for _, ti := range op.Launch.TaskInfos {
			if invalid != "" {
				// Not partition-aware: TASK_LOST (TASK_DROPPED otherwise).
				fw.stream.send(m.masterUpdate(ti.TaskID.Value, mesos.TASK_LOST, mesos.REASON_INVALID_OFFERS, "Task launched with invalid offers: "+invalid))
				continue
			}
			if why := m.validateTaskLocked(fw, &ti, remaining); why != "" {
				fw.stream.send(m.masterUpdate(ti.TaskID.Value, mesos.TASK_ERROR, mesos.REASON_TASK_INVALID, why))
				continue
			}
			remaining.Subtract(ti.Resources...)
			m.launchLocked(fw, ti)
		}
	}
	fw.addFilter(remaining, a.Filters)
}

// validateTaskLocked returns why the master would refuse to launch ti.
func (m *Master) validateTaskLocked(fw *framework, ti *mesos.TaskInfo, remaining mesos.Resources) string {
	if ti.TaskID.Value == "" {
		return "Task ID must not be empty"
	}
	if t := m.tasks[ti.TaskID.Value]; t != nil && t.fw == fw.id && !t.terminal() {
		return "Task has duplicate ID: " + ti.TaskID.Value
	}
	if ti.AgentID.Value != m.agentID {
		return fmt.Sprintf("Task uses agent %s but the offers are on agent %s", ti.AgentID.Value, m.agentID)
	}
	if ti.Command == nil || ti.Executor != nil {
		return "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present"
	}
	if err := resources.Validate(ti.Resources...); err != nil {
		return "Task uses invalid resources: " + err.Error()
	}
	if !resources.ContainsAll(remaining, ti.Resources) {
		return fmt.Sprintf("Task uses more resources %s than available %s", mesos.Resources(ti.Resources), remaining)
	}
	return ""
}

// launchLocked records a task and starts it.
func (m *Master) launchLocked(fw *framework, ti mesos.TaskInfo) {
	m.seq++
	t := &task{
		m: m, seq: m.seq, fw: fw.id, fwName: fw.info.Name, info: ti, state: mesos.TASK_STAGING,
		sandbox: filepath.Join(m.opts.WorkDir, "slaves", m.agentID, "frameworks", fw.id, "executors", ti.TaskID.Value, "runs", uuid4()),
		stop:    make(chan struct{}), exited: make(chan struct{}),
	}
	m.tasks[t.id()] = t
	go t.run()
}

// update records a status update from the agent or executor and delivers
// it reliably.
func (t *task) update(state mesos.TaskState, source mesos.TaskStatus_Source, reason *mesos.TaskStatus_Reason, msg string) {
	m := t.m
	st := mesos.TaskStatus{
		TaskID:     t.info.TaskID,
		State:      state.Enum(),
		Source:     source.Enum(),
		Reason:     reason,
		AgentID:    &mesos.AgentID{Value: m.agentID},
		ExecutorID: &mesos.ExecutorID{Value: t.id()},
		Timestamp:  now(),
		UUID:       uuidBytes(),
	}
	if msg != "" {
		st.Message = &msg
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.terminal() {
		return
	}
	t.state = state
	t.pending = append(t.pending, st)
	if len(t.pending) == 1 {
		m.sendHeadLocked(t)
	}
}

// sendHeadLocked sends the oldest unacknowledged update of t, if its
// framework is connected.
func (m *Master) sendHeadLocked(t *task) {
	if len(t.pending) == 0 {
		return
	}
	fw := m.frameworks[t.fw]
	if fw == nil || fw.stream == nil {
		return
	}
	fw.stream.send(&scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: t.pending[0]}})
}

// run fetches the task's URIs, runs its command and reports its states.
func (t *task) run() {
	defer close(t.exited)
	log := t.m.log.With(zap.String("task", t.id()))
	if err := os.MkdirAll(t.sandbox, 0o755); err != nil {
		t.update(mesos.TASK_FAILED, mesos.SOURCE_AGENT, mesos.REASON_CONTAINER_LAUNCH_FAILED.Enum(), "Failed to create the sandbox: "+err.Error())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := t.fetchAll(ctx)
	cancel()
	if err != nil {
		log.Info("fetch failed", zap.Error(err))
		t.update(mesos.TASK_FAILED, mesos.SOURCE_AGENT, mesos.REASON_CONTAINER_LAUNCH_FAILED.Enum(),
			fmt.Sprintf("Failed to launch container: Failed to fetch all URIs for container: %v", err))
		return
	}
	if t.stopped() {
		t.update(mesos.TASK_KILLED, mesos.SOURCE_AGENT, nil, "Task killed before it started")
		return
	}
	t.update(mesos.TASK_STARTING, mesos.SOURCE_EXECUTOR, nil, "")
	cmd, err := t.command()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		t.update(mesos.TASK_FAILED, mesos.SOURCE_EXECUTOR, mesos.REASON_COMMAND_EXECUTOR_FAILED.Enum(), "Failed to launch the command: "+err.Error())
		return
	}
	t.pmu.Lock()
	t.pid, t.started = cmd.Process.Pid, true
	t.pmu.Unlock()
	t.update(mesos.TASK_RUNNING, mesos.SOURCE_EXECUTOR, nil, "")
	log.Info("task running", zap.Int("pid", cmd.Process.Pid), zap.String("sandbox", t.sandbox))

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-t.stop:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case werr = <-waited:
		case <-time.After(t.grace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr = <-waited
		}
	}
	// Nothing of the task may outlive it (the agent destroys the
	// container's cgroup): kill what is left of its process group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	t.pmu.Lock()
	killed := t.killed
	t.pmu.Unlock()
	state, reason, msg := exitStatus(werr, killed)
	log.Info("task ended", zap.Stringer("state", state), zap.String("message", msg))
	t.update(state, mesos.SOURCE_EXECUTOR, reason, msg)
}

// exitStatus maps a command's end to the command executor's update.
func exitStatus(err error, killed bool) (mesos.TaskState, *mesos.TaskStatus_Reason, string) {
	var ee *exec.ExitError
	msg := "Command exited with status 0"
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			msg = "Command terminated with signal " + ws.Signal().String()
		} else {
			msg = fmt.Sprintf("Command exited with status %d", ee.ExitCode())
		}
	} else if err != nil {
		msg = "Command failed: " + err.Error()
	}
	switch {
	case killed:
		return mesos.TASK_KILLED, nil, msg
	case err == nil:
		return mesos.TASK_FINISHED, nil, msg
	default:
		return mesos.TASK_FAILED, mesos.REASON_COMMAND_EXECUTOR_FAILED.Enum(), msg
	}
}

func (t *task) stopped() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// kill stops the task as KILL does (TASK_KILLED); grace 0 kills at once.
func (t *task) kill(grace time.Duration) {
	t.pmu.Lock()
	t.killed = true
	t.grace = grace
	t.pmu.Unlock()
	t.stopOnce.Do(func() { close(t.stop) })
}

// crash kills the task's process with SIGKILL without asking (the task
// fails).
func (t *task) crash() bool {
	t.pmu.Lock()
	pid, started := t.pid, t.started
	t.pmu.Unlock()
	if !started {
		return false
	}
	select {
	case <-t.exited:
		return false
	default:
	}
	return syscall.Kill(pid, syscall.SIGKILL) == nil
}

// command builds the task's command as the command executor runs it.
func (t *task) command() (*exec.Cmd, error) {
	ci := t.info.Command
	var cmd *exec.Cmd
	switch {
	case ci.GetShell():
		if ci.GetValue() == "" {
			return nil, errors.New("shell command has no value")
		}
		cmd = exec.Command("/bin/sh", "-c", ci.GetValue())
	default:
		if ci.GetValue() == "" {
			return nil, errors.New("command has no value")
		}
		cmd = exec.Command(ci.GetValue())
		if len(ci.Arguments) > 0 {
			cmd.Args = append([]string(nil), ci.Arguments...)
		}
		if !filepath.IsAbs(ci.GetValue()) && strings.Contains(ci.GetValue(), "/") {
			cmd.Path = filepath.Join(t.sandbox, ci.GetValue())
		}
	}
	cmd.Dir = t.sandbox
	cmd.Env = sandboxEnv(t, t.m.agentID)
	out, err := os.OpenFile(filepath.Join(t.sandbox, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	errf, err := os.OpenFile(filepath.Join(t.sandbox, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		out.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// fetchAll fetches the command's URIs into the sandbox, as the Mesos
// fetcher does.
func (t *task) fetchAll(ctx context.Context) error {
	for _, u := range t.info.GetCommand().URIs {
		if err := fetchURI(ctx, u, t.sandbox); err != nil {
			return fmt.Errorf("%s: %w", u.Value, err)
		}
	}
	return nil
}

func fetchURI(ctx context.Context, u mesos.CommandInfo_URI, sandbox string) error {
	name := u.GetOutputFile()
	if name == "" {
		p := u.Value
		if pu, err := url.Parse(u.Value); err == nil && pu.Path != "" {
			p = pu.Path
		}
		name = path.Base(p)
	}
	if name == "" || name == "." || name == "/" {
		return errors.New("cannot tell the file name of the URI")
	}
	dst := filepath.Join(sandbox, filepath.FromSlash(name))
	if rel, err := filepath.Rel(sandbox, dst); err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("output_file %q is outside the sandbox", name)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	scheme := ""
	if pu, err := url.Parse(u.Value); err == nil {
		scheme = pu.Scheme
	}
	switch scheme {
	case "http", "https", "file":
	case "":
		if !filepath.IsAbs(u.Value) {
			return errors.New("a relative path needs the agent's --frameworks_home, which this agent does not have")
		}
	default:
		return fmt.Errorf("unsupported URI scheme %q (the fetcher plugin is not installed)", scheme)
	}
	if err := fetch.Fetch(ctx, u.Value, dst, "", nil); err != nil {
		return err
	}
	if u.GetExecutable() {
		return os.Chmod(dst, 0o755)
	}
	extract := u.Extract == nil || *u.Extract // on by default, as in Mesos
	lower := strings.ToLower(dst)
	if extract && (strings.HasSuffix(lower, ".tar.gz") || strings.HasSuffix(lower, ".tgz")) {
		return extractInto(ctx, dst, sandbox)
	}
	return nil
}

// extractInto unpacks a .tar.gz into dir, which may already hold files.
func extractInto(ctx context.Context, archive, dir string) error {
	tmp, err := os.MkdirTemp(dir, ".extract-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := fetch.Extract(ctx, archive, filepath.Join(tmp, "x")); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(tmp, "x"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(tmp, "x", e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
