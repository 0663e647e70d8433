package executor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/topobin"
	"github.com/egret-stream/egret/daemons/executor/internal/cgroup"
	"github.com/egret-stream/egret/daemons/shellapi"
	"github.com/egret-stream/egret/internal/logfile"
	"github.com/egret-stream/egret/internal/loglevel"
	"github.com/egret-stream/egret/internal/safepath"
)

// The process kinds, states and statuses the executor publishes in its
// pid file are the shell's contract (daemons/shellapi).
type (
	Kind          = shellapi.Kind
	State         = shellapi.State
	ProcessStatus = shellapi.ProcessStatus
	PidFile       = shellapi.PidFile
)

// The kinds and states of children.
const (
	KindTManager   = shellapi.KindTManager
	KindMetricsMgr = shellapi.KindMetricsMgr
	KindStmgr      = shellapi.KindStmgr
	KindInstance   = shellapi.KindInstance
	KindShell      = shellapi.KindShell
	KindCkptMgr    = shellapi.KindCkptMgr
	KindHealthMgr  = shellapi.KindHealthMgr
	KindContainer  = shellapi.KindContainer

	StateStarting = shellapi.StateStarting
	StateRunning  = shellapi.StateRunning
	StateBackoff  = shellapi.StateBackoff
	StateStopping = shellapi.StateStopping
	StateStopped  = shellapi.StateStopped
)

// EventKind says what happened to a child.
type EventKind string

// The supervision events.
const (
	// EventStarted: a process was started (PID).
	EventStarted EventKind = "started"
	// EventStartFailed: exec failed (Err); treated like an exit.
	EventStartFailed EventKind = "start-failed"
	// EventExited: a process exited on its own (PID, ExitCode, Reason).
	EventExited EventKind = "exited"
	// EventRestarting: the process will be started again after Delay
	// (Reason says why).
	EventRestarting EventKind = "restarting"
	// EventStopped: the executor stopped the process (PID; Killed when it
	// ignored SIGTERM for the grace period and got SIGKILL).
	EventStopped EventKind = "stopped"
)

// Event is one supervision event.
type Event struct {
	Kind    EventKind
	Process string
	PID     int
	// ExitCode is the exit status (-1 when killed by a signal).
	ExitCode int
	// Uptime is how long an exited process ran.
	Uptime time.Duration
	Delay  time.Duration
	Reason string
	Killed bool
	Err    error
}

// process supervises one child: it runs it, restarts it when it exits and
// stops it on request. Its mutable fields are guarded by ex.mu.
type process struct {
	ex   *Executor
	name string
	kind Kind
	task int
	args []string
	// component, limits and dir are an instance's: its component, what
	// the packing plan gives it and its working directory (W for the
	// daemons).
	component string
	limits    Limits
	dir       string
	// group is the process's cgroup (nil without cgroups).
	group *cgroup.Group
	res   resourceState

	stopCh    chan struct{} // closed: stop for good
	restartCh chan string   // a reason: restart now (buffered 1)
	done      chan struct{} // closed when the child is gone for good

	pid       int
	state     State
	restarts  int
	startedAt time.Time
	lastExit  string
	oomKills  int
}

func newProcess(ex *Executor, name string, kind Kind, task int, args []string) *process {
	return &process{
		ex: ex, name: name, kind: kind, task: task, args: args,
		state:     StateStarting,
		stopCh:    make(chan struct{}),
		restartCh: make(chan string, 1),
		done:      make(chan struct{}),
	}
}

// requestStop asks the process to stop; wait on done.
func (p *process) requestStop() {
	p.ex.mu.Lock()
	defer p.ex.mu.Unlock()
	select {
	case <-p.stopCh:
	default:
		close(p.stopCh)
	}
}

// requestRestart asks for an immediate restart (a pending request absorbs
// a second one).
func (p *process) requestRestart(reason string) {
	select {
	case p.restartCh <- reason:
	default:
	}
}

// exitInfo describes how a run ended.
type exitInfo struct {
	code   int
	reason string
	uptime time.Duration
}

// run is the supervision loop.
func (p *process) run() {
	defer close(p.done)
	s := p.ex.set
	log := p.ex.log.With(zap.String("process", p.name))
	pol := restartPolicy{set: s}
	for {
		select {
		case <-p.stopCh:
			p.setStopped()
			return
		default:
		}
		var ex exitInfo
		cmd, started, waitCh, err := p.start()
		if err != nil {
			log.Error("cannot start process", zap.Strings("args", p.args), zap.Error(err))
			p.emit(Event{Kind: EventStartFailed, Process: p.name, Err: err, ExitCode: -1})
			ex = exitInfo{code: -1, reason: "start failed: " + err.Error()}
		} else {
			select {
			case werr := <-waitCh:
				ex = p.exited(cmd, started, werr)
				log.Warn("process exited", zap.Int("pid", cmd.Process.Pid), zap.String("status", ex.reason),
					zap.Duration("uptime", ex.uptime))
			case <-p.stopCh:
				p.terminate(cmd, waitCh, log)
				p.setStopped()
				return
			case reason := <-p.restartCh:
				log.Info("restarting process", zap.String("reason", reason))
				p.terminate(cmd, waitCh, log)
				p.countRestart(reason, 0)
				pol.reset()
				continue
			}
		}

		wait, layout := pol.next(p.kind, ex.code, ex.uptime)
		reason := ex.reason
		if layout {
			reason = "task layout changed (exit code 3)"
		}
		p.countRestart(reason, wait)
		if wait > 0 {
			log.Info("restarting process after backoff", zap.Duration("backoff", wait))
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.stopCh:
				t.Stop()
				p.setStopped()
				return
			case <-p.restartCh:
				t.Stop()
			}
		}
	}
}

// restartPolicy computes restart delays: exponential backoff from the
// initial value, doubling, capped at the max, reset after a long run; an
// instance's exit code 3 restarts at once unless it repeats within the
// initial backoff (no hot loop).
type restartPolicy struct {
	set        settings
	delay      time.Duration // the next backoff (0: initial)
	lastLayout bool          // the previous run ended with exit code 3
}

// next returns how long to wait before restarting a process of kind that
// exited with code after uptime, and whether this is a layout restart.
func (r *restartPolicy) next(kind Kind, code int, uptime time.Duration) (time.Duration, bool) {
	if r.delay == 0 {
		r.delay = r.set.backoffInitial
	}
	if kind == KindInstance && code == topobin.ExitPlanChanged && !(r.lastLayout && uptime < r.set.backoffInitial) {
		r.lastLayout = true
		return 0, true
	}
	r.lastLayout = code == topobin.ExitPlanChanged
	if uptime >= r.set.resetAfter {
		r.delay = r.set.backoffInitial
	}
	d := r.delay
	r.delay = min(2*d, r.set.backoffMax)
	return d, false
}

// reset forgets the history (after a requested restart).
func (r *restartPolicy) reset() { *r = restartPolicy{set: r.set} }

// pipeDrain bounds how long the executor reads a child's output after the
// child exited: a process the child left behind (outside its process
// group) may hold the pipe open.
const pipeDrain = 5 * time.Second

// start starts one run of the child with its output appended to its log,
// rotated by size (egret.logging.max.size, egret.logging.max.files). The
// returned channel receives the result of cmd.Wait once the child exited
// and its output is written; the log is closed then.
func (p *process) start() (*exec.Cmd, time.Time, <-chan error, error) {
	e := p.ex
	logPath, err := safepath.Join(e.paths.LogsDir, p.name+".log")
	if err != nil {
		return nil, time.Time{}, nil, fmt.Errorf("log file: %w", err)
	}
	lf, err := logfile.Open(logPath, e.set.logs, e.log)
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	fmt.Fprintf(lf, "==== %s egret executor: starting %s: %s\n", time.Now().Format(time.RFC3339Nano), p.name, quoteArgs(p.args))
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), e.cfg.ExtraEnv...)
	cmd.Env = append(cmd.Env, p.limits.env(e.cfg.ExtraEnv)...)
	cmd.Env = append(cmd.Env, p.logLevelEnv()...)
	cmd.Stdin = nil
	// One writer for both: the executor copies the child's output into
	// the log through one pipe; the sniffer notices the Go runtime's out
	// of memory crash on the way.
	// A new run: what the monitor and the sniffer noted of the last
	// one (if it was stopped rather than died) does not carry over.
	p.res.watchdog.Store(false)
	p.res.goOOM.Store(false)
	out := &oomSniffer{w: lf, hit: &p.res.goOOM}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = pipeDrain
	cmd.SysProcAttr = sysProcAttr()
	placed := false
	if p.group != nil && p.group.Unified() {
		if dir, err := os.Open(p.group.Path()); err == nil {
			placed = intoCgroup(cmd.SysProcAttr, int(dir.Fd()))
			err = cmd.Start()
			dir.Close()
			if err != nil && placed {
				// An older kernel without clone3 into a cgroup:
				// start normally, then move it.
				e.log.Debug("cannot start the process inside its cgroup; moving it after the start", zap.String("process", p.name), zap.Error(err))
				cmd = rebuild(cmd)
				placed = false
			} else if err != nil {
				fmt.Fprintf(lf, "==== egret executor: start failed: %v\n", err)
				lf.Close()
				return nil, time.Time{}, nil, err
			}
		}
	}
	if cmd.Process == nil {
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(lf, "==== egret executor: start failed: %v\n", err)
			lf.Close()
			return nil, time.Time{}, nil, err
		}
	}
	if p.group != nil && !placed {
		// The child ran for the moment between fork and this write
		// outside its group: its first allocations are not limited.
		if err := p.group.Add(cmd.Process.Pid); err != nil {
			e.log.Warn("cannot move the process into its cgroup; only its Go limits apply",
				zap.String("process", p.name), zap.Error(err))
		}
	}
	waitCh := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		lf.Close()
		waitCh <- err
	}()
	now := time.Now()
	e.mu.Lock()
	p.pid = cmd.Process.Pid
	p.state = StateRunning
	p.startedAt = now
	e.writePidsLocked()
	e.mu.Unlock()
	e.log.Info("process started", zap.String("process", p.name), zap.Int("pid", cmd.Process.Pid))
	p.emit(Event{Kind: EventStarted, Process: p.name, PID: cmd.Process.Pid})
	return cmd, now, waitCh, nil
}

// rebuild returns a fresh copy of a command whose Start failed (an
// exec.Cmd cannot be started twice), without the cgroup placement.
func rebuild(c *exec.Cmd) *exec.Cmd {
	n := exec.Command(c.Path, c.Args[1:]...)
	n.Dir, n.Env, n.Stdin, n.Stdout, n.Stderr, n.WaitDelay = c.Dir, c.Env, c.Stdin, c.Stdout, c.Stderr, c.WaitDelay
	n.SysProcAttr = sysProcAttr()
	return n
}

// exited records a run that ended on its own.
func (p *process) exited(cmd *exec.Cmd, started time.Time, werr error) exitInfo {
	pid := cmd.Process.Pid
	// Kill what the child may have left in its process group.
	signalGroup(pid, syscall.SIGKILL)
	ex := exitInfo{code: -1, uptime: time.Since(started)}
	if ps := cmd.ProcessState; ps != nil {
		ex.code = ps.ExitCode()
		ex.reason = ps.String()
	} else if werr != nil {
		ex.reason = werr.Error()
	}
	if cause := p.oomCause(); cause != "" {
		ex.reason = p.reportOOM(pid, cause, ex.reason)
	}
	p.ex.mu.Lock()
	p.pid = 0
	p.state = StateBackoff
	p.lastExit = ex.reason
	p.ex.writePidsLocked()
	p.ex.mu.Unlock()
	p.emit(Event{Kind: EventExited, Process: p.name, PID: pid, ExitCode: ex.code, Reason: ex.reason, Uptime: ex.uptime})
	return ex
}

// terminate sends SIGTERM to the child's process group, SIGKILL after the
// grace period, and waits for the child.
func (p *process) terminate(cmd *exec.Cmd, waitCh <-chan error, log *zap.Logger) {
	pid := cmd.Process.Pid
	p.ex.mu.Lock()
	p.state = StateStopping
	p.ex.mu.Unlock()
	signalGroup(pid, syscall.SIGTERM)
	killed := false
	t := time.NewTimer(p.ex.set.stopGrace)
	select {
	case <-waitCh:
		t.Stop()
	case <-t.C:
		log.Warn("process ignored SIGTERM for the grace period; sending SIGKILL",
			zap.Int("pid", pid), zap.Duration("grace", p.ex.set.stopGrace))
		killed = true
		signalGroup(pid, syscall.SIGKILL)
		<-waitCh
	}
	signalGroup(pid, syscall.SIGKILL) // stragglers of the group
	reason := "stopped"
	if cmd.ProcessState != nil {
		reason = cmd.ProcessState.String()
	}
	p.ex.mu.Lock()
	p.pid = 0
	p.lastExit = reason
	p.ex.writePidsLocked()
	p.ex.mu.Unlock()
	log.Info("process stopped", zap.Int("pid", pid), zap.Bool("killed", killed))
	p.emit(Event{Kind: EventStopped, Process: p.name, PID: pid, Killed: killed, ExitCode: -1, Reason: reason})
}

func (p *process) countRestart(reason string, delay time.Duration) {
	p.ex.mu.Lock()
	p.restarts++
	p.state = StateBackoff
	p.ex.writePidsLocked() // the shell serves the restart count from it
	p.ex.mu.Unlock()
	p.emit(Event{Kind: EventRestarting, Process: p.name, Delay: delay, Reason: reason})
}

func (p *process) setStopped() {
	p.ex.mu.Lock()
	p.state = StateStopped
	p.pid = 0
	p.ex.writePidsLocked()
	p.ex.mu.Unlock()
}

func (p *process) emit(ev Event) {
	if f := p.ex.cfg.Hooks.OnEvent; f != nil {
		f(ev)
	}
}

// logLevelEnv tells the child where the container's live log-level
// override is and which names it answers to (internal/loglevel).
func (p *process) logLevelEnv() []string {
	comp := p.component
	if comp == "" {
		comp = string(p.kind)
	}
	return []string{
		loglevel.EnvFile + "=" + filepath.Join(p.ex.paths.WorkDir, loglevel.FileName),
		loglevel.EnvProcess + "=" + p.name,
		loglevel.EnvComponent + "=" + comp,
	}
}

// statusLocked snapshots the process; the caller holds ex.mu.
func (p *process) statusLocked() ProcessStatus {
	return ProcessStatus{
		Name: p.name, Kind: p.kind, Task: p.task, PID: p.pid, State: p.state,
		Restarts: p.restarts, StartedAt: p.startedAt, LastExit: p.lastExit,
		Args: append([]string(nil), p.args...), OOMKills: p.oomKills,
	}
}

// signalGroup signals the process group led by pid, falling back to the
// process alone when the group is gone or not ours.
func signalGroup(pid int, sig syscall.Signal) {
	if pid <= 0 {
		return
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, sig)
	}
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			a = strconv.Quote(a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
