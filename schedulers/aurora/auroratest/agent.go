package auroratest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
	"github.com/egret-stream/egret/schedulers/aurora/thermos"
)

// Task is what the fake knows of one task, for tests.
type Task struct {
	Key      string // role/env/name
	Instance int
	ID       string
	Status   auroraapi.ScheduleStatus
	// Message is the message of the task's last event.
	Message string
	// Sandbox is the Thermos sandbox (the processes' working directory);
	// empty until the task was assigned.
	Sandbox string
	Ports   map[string]int32
	// Pid is the process the task runs now (0: none).
	Pid int
}

// task is a task and its runner; every field is guarded by Server.mu.
type task struct {
	st      *auroraapi.ScheduledTask
	killReq chan struct{} // closed when a kill was asked for
	killed  bool
	force   bool          // SIGKILL asked for (Close)
	runner  bool          // a runner was started
	done    chan struct{} // closed when the runner ended
	pid     int           // the running process (and its group), 0: none
	sandbox string
}

func (t *task) requestKill() {
	if !t.killed {
		t.killed = true
		close(t.killReq)
	}
}

// signal sends SIGTERM (SIGKILL when force) to the running process group.
func (t *task) signal(force bool) {
	t.force = t.force || force
	if t.pid <= 0 {
		return
	}
	sig := syscall.SIGTERM
	if t.force {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-t.pid, sig)
}

// slaveAssigned are Aurora's SLAVE_ASSIGNED_STATES: the task holds the
// agent's resources.
var slaveAssigned = []auroraapi.ScheduleStatus{
	auroraapi.ScheduleStatus_ASSIGNED, auroraapi.ScheduleStatus_DRAINING, auroraapi.ScheduleStatus_KILLING,
	auroraapi.ScheduleStatus_PREEMPTING, auroraapi.ScheduleStatus_RESTARTING, auroraapi.ScheduleStatus_RUNNING,
	auroraapi.ScheduleStatus_PARTITIONED, auroraapi.ScheduleStatus_STARTING,
}

// activeStates are Aurora's ACTIVE_STATES.
var activeStates = append([]auroraapi.ScheduleStatus{auroraapi.ScheduleStatus_PENDING, auroraapi.ScheduleStatus_THROTTLED}, slaveAssigned...)

// Tasks returns every task of the job role/env/name, in creation order.
func (s *Server) Tasks(role, env, name string) []Task {
	key := &auroraapi.JobKey{Role: role, Environment: env, Name: name}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Task
	for _, t := range s.tasks {
		if !sameKey(t.st.AssignedTask.Task.Job, key) {
			continue
		}
		msg := ""
		if evs := t.st.TaskEvents; len(evs) > 0 {
			msg = evs[len(evs)-1].GetMessage()
		}
		out = append(out, Task{Key: canonical(key), Instance: int(t.st.AssignedTask.InstanceId), ID: t.st.AssignedTask.TaskId,
			Status: t.st.Status, Message: msg, Sandbox: t.sandbox, Ports: t.st.AssignedTask.AssignedPorts, Pid: t.pid})
	}
	return out
}

// Running returns the RUNNING tasks of a job: instance → task id.
func (s *Server) Running(role, env, name string) map[int]string {
	out := map[int]string{}
	for _, t := range s.Tasks(role, env, name) {
		if t.Status == auroraapi.ScheduleStatus_RUNNING {
			out[t.Instance] = t.ID
		}
	}
	return out
}

// Live returns the pids of the task processes that run now, of every job.
func (s *Server) Live() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, t := range s.tasks {
		if t.pid > 0 {
			out = append(out, t.pid)
		}
	}
	return out
}

// KillTask kills the process group of the running task of an instance
// with SIGKILL, as when a machine kills the container's processes: the
// task fails and Aurora reschedules it.
// A task between two processes is waited for (up to 10s).
func (s *Server) KillTask(role, env, name string, instance int) error {
	key := &auroraapi.JobKey{Role: role, Environment: env, Name: name}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		for _, t := range s.activeLocked(key, []int32{int32(instance)}) {
			if t.pid > 0 {
				err := syscall.Kill(-t.pid, syscall.SIGKILL)
				s.mu.Unlock()
				return err
			}
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			return fmt.Errorf("auroratest: instance %d of %s runs no process", instance, canonical(key))
		}
	}
}

// activeLocked returns the active tasks of key (of instances, if given).
func (s *Server) activeLocked(key *auroraapi.JobKey, instances []int32) []*task {
	var out []*task
	for _, t := range s.tasks {
		if sameKey(t.st.AssignedTask.Task.Job, key) && slices.Contains(activeStates, t.st.Status) &&
			(len(instances) == 0 || slices.Contains(instances, t.st.AssignedTask.InstanceId)) {
			out = append(out, t)
		}
	}
	return out
}

// newTaskLocked adds a task of config for instance.
func (s *Server) newTaskLocked(config *auroraapi.TaskConfig, instance int32, ancestor string, status auroraapi.ScheduleStatus) *task {
	k := config.Job
	id := fmt.Sprintf("%s-%s-%s-%d-%s", k.Role, k.Environment, k.Name, instance, newID())
	t := &task{
		st: &auroraapi.ScheduledTask{
			AssignedTask: &auroraapi.AssignedTask{TaskId: id, Task: config, InstanceId: instance, AssignedPorts: map[string]int32{}},
			AncestorId:   ancestor,
		},
		killReq: make(chan struct{}),
	}
	s.transitionLocked(t, status, "")
	s.tasks = append(s.tasks, t)
	return t
}

func (s *Server) transitionLocked(t *task, status auroraapi.ScheduleStatus, msg string) {
	t.st.Status = status
	ev := &auroraapi.TaskEvent{Timestamp: time.Now().UnixMilli(), Status: status, Scheduler: &s.hostname}
	if msg != "" {
		ev.Message = &msg
	}
	t.st.TaskEvents = append(t.st.TaskEvents, ev)
}

// killLocked moves a task to KILLING or RESTARTING and stops its
// processes; it reports whether the task changed state.
func (s *Server) killLocked(t *task, to auroraapi.ScheduleStatus, msg string) bool {
	switch t.st.Status {
	case auroraapi.ScheduleStatus_KILLING:
		return false
	case auroraapi.ScheduleStatus_RESTARTING:
		// A kill wins over a restart under way: no replacement.
		if to != auroraapi.ScheduleStatus_KILLING {
			return false
		}
		s.transitionLocked(t, to, msg)
		return true
	case auroraapi.ScheduleStatus_PENDING, auroraapi.ScheduleStatus_THROTTLED, auroraapi.ScheduleStatus_INIT:
		s.transitionLocked(t, to, msg)
		s.endLocked(t, auroraapi.ScheduleStatus_KILLED, "Task killed.")
		return true
	}
	s.transitionLocked(t, to, msg)
	t.requestKill()
	t.signal(false)
	return true
}

// endLocked moves a task to a terminal state and replaces it as Aurora
// does: a restarted task at once, a service task that ended by itself
// after the reschedule delay, a killed one never.
func (s *Server) endLocked(t *task, status auroraapi.ScheduleStatus, msg string) {
	prev := t.st.Status
	if prev == auroraapi.ScheduleStatus_KILLING || prev == auroraapi.ScheduleStatus_RESTARTING {
		status, msg = auroraapi.ScheduleStatus_KILLED, "Task killed."
	}
	t.pid = 0
	s.transitionLocked(t, status, msg)
	switch {
	case s.closed || prev == auroraapi.ScheduleStatus_KILLING:
	case prev == auroraapi.ScheduleStatus_RESTARTING:
		s.newTaskLocked(t.st.AssignedTask.Task, t.st.AssignedTask.InstanceId, t.st.AssignedTask.TaskId, auroraapi.ScheduleStatus_PENDING)
	case t.st.AssignedTask.Task.IsService:
		next := s.newTaskLocked(t.st.AssignedTask.Task, t.st.AssignedTask.InstanceId, t.st.AssignedTask.TaskId, auroraapi.ScheduleStatus_THROTTLED)
		time.AfterFunc(s.reschedule, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if next.st.Status == auroraapi.ScheduleStatus_THROTTLED {
				s.transitionLocked(next, auroraapi.ScheduleStatus_PENDING, "Rescheduled")
				s.scheduleLocked()
			}
		})
	}
	s.scheduleLocked()
}

// vetoesLocked says why a pending task does not fit the agent ("" when it
// fits), as Aurora's getPendingReason does.
func (s *Server) vetoesLocked(t *task) string {
	var used resources
	for _, o := range s.tasks {
		if o != t && slices.Contains(slaveAssigned, o.st.Status) {
			r := taskResources(o.st.AssignedTask.Task)
			used.cpus += r.cpus
			used.ramMb += r.ramMb
			used.diskMb += r.diskMb
		}
	}
	need := taskResources(t.st.AssignedTask.Task)
	var v []string
	if used.cpus+need.cpus > s.capacity.cpus+1e-9 {
		v = append(v, "Insufficient: CPU")
	}
	if used.ramMb+need.ramMb > s.capacity.ramMb {
		v = append(v, "Insufficient: RAM")
	}
	if used.diskMb+need.diskMb > s.capacity.diskMb {
		v = append(v, "Insufficient: disk")
	}
	return strings.Join(v, ",")
}

// scheduleLocked assigns the pending tasks that fit and starts them.
func (s *Server) scheduleLocked() {
	if s.closed {
		return
	}
	for _, t := range s.tasks {
		if t.st.Status != auroraapi.ScheduleStatus_PENDING || s.vetoesLocked(t) != "" {
			continue
		}
		for _, r := range t.st.AssignedTask.Task.GetResources() {
			if r.IsSetNamedPort() {
				t.st.AssignedTask.AssignedPorts[r.GetNamedPort()] = freePort()
			}
		}
		t.st.AssignedTask.SlaveHost = s.hostname
		t.st.AssignedTask.SlaveId = "fake-agent-S0"
		t.sandbox = filepath.Join(s.root, t.st.AssignedTask.TaskId, "sandbox")
		t.runner = true
		t.done = make(chan struct{})
		s.transitionLocked(t, auroraapi.ScheduleStatus_ASSIGNED, "")
		go s.run(t)
	}
}

// run runs a task Thermos-like: sandbox, then its processes in order.
func (s *Server) run(t *task) {
	defer close(t.done)
	s.mu.Lock()
	if t.killed {
		// Killed (or restarted) while ASSIGNED: the task keeps its
		// KILLING/RESTARTING state, so that it is replaced only when
		// restarted.
		s.endLocked(t, auroraapi.ScheduleStatus_KILLED, "Task killed.")
		s.mu.Unlock()
		return
	}
	st := clone(t.st)
	s.transitionLocked(t, auroraapi.ScheduleStatus_STARTING, "Initializing sandbox.")
	s.mu.Unlock()
	end := func(status auroraapi.ScheduleStatus, msg string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.endLocked(t, status, msg)
	}
	role := st.AssignedTask.Task.Job.Role
	if len(s.users) > 0 && !slices.Contains(s.users, role) {
		end(auroraapi.ScheduleStatus_FAILED, "Failed to initialize sandbox: Could not create sandbox because user does not exist: "+role)
		return
	}
	if err := os.MkdirAll(t.sandbox, 0o755); err != nil {
		end(auroraapi.ScheduleStatus_FAILED, "Failed to initialize sandbox: Failed to create the sandbox: "+err.Error())
		return
	}
	procs, wait, err := s.processes(st)
	if err != nil {
		end(auroraapi.ScheduleStatus_FAILED, "Thermos received an invalid task.")
		return
	}
	s.mu.Lock()
	if t.killed {
		s.endLocked(t, auroraapi.ScheduleStatus_KILLED, "Task killed.")
		s.mu.Unlock()
		return
	}
	s.transitionLocked(t, auroraapi.ScheduleStatus_RUNNING, "")
	s.mu.Unlock()
	for _, p := range procs {
		status, msg, ok := s.runProcess(t, p, wait, st)
		if !ok {
			end(status, msg)
			return
		}
	}
	end(auroraapi.ScheduleStatus_FINISHED, "Task finished.")
}

// runProcess runs one process of t to its end; ok is false when the task
// ends with it (status and msg say how).
func (s *Server) runProcess(t *task, p thermos.Process, wait time.Duration, st *auroraapi.ScheduledTask) (status auroraapi.ScheduleStatus, msg string, ok bool) {
	logs := filepath.Join(t.sandbox, ".logs", p.Name, "0")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return auroraapi.ScheduleStatus_FAILED, "Task failed.", false
	}
	stdout, err1 := os.Create(filepath.Join(logs, "stdout"))
	stderr, err2 := os.Create(filepath.Join(logs, "stderr"))
	if err1 != nil || err2 != nil {
		return auroraapi.ScheduleStatus_FAILED, "Task failed.", false
	}
	defer stdout.Close()
	defer stderr.Close()
	cmd := exec.Command("bash", "-c", p.Cmdline)
	cmd.Dir = t.sandbox
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(), "MESOS_SANDBOX="+filepath.Dir(t.sandbox), "MESOS_TASK_ID="+st.AssignedTask.TaskId)
	cmd.SysProcAttr = sysProcAttr()

	s.mu.Lock()
	if t.killed {
		s.mu.Unlock()
		return auroraapi.ScheduleStatus_KILLED, "Task killed.", false
	}
	err := cmd.Start()
	if err == nil {
		t.pid = cmd.Process.Pid
		if t.force {
			t.signal(true)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return auroraapi.ScheduleStatus_FAILED, "Task failed.", false
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-t.killReq:
		// killLocked sent SIGTERM; Thermos escalates to SIGKILL after the
		// task's finalization wait.
		timer := time.NewTimer(wait)
		select {
		case err = <-exited:
		case <-timer.C:
			s.mu.Lock()
			t.signal(true)
			s.mu.Unlock()
			err = <-exited
		}
		timer.Stop()
	}
	// Whatever the process left in its group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	s.mu.Lock()
	t.pid = 0
	killed := t.killed
	s.mu.Unlock()
	switch {
	case killed:
		return auroraapi.ScheduleStatus_KILLED, "Task killed.", false
	case err != nil:
		return auroraapi.ScheduleStatus_FAILED, "Task failed.", false
	}
	return 0, "", true
}

// processes reads a task's Thermos job, binds its references and orders
// its processes.
func (s *Server) processes(st *auroraapi.ScheduledTask) ([]thermos.Process, time.Duration, error) {
	ec := st.AssignedTask.Task.ExecutorConfig
	if ec == nil {
		return nil, 0, fmt.Errorf("no executor config")
	}
	var j thermos.Job
	dec := json.NewDecoder(bytes.NewReader([]byte(ec.Data)))
	if err := dec.Decode(&j); err != nil {
		return nil, 0, err
	}
	if len(j.Task.Processes) == 0 {
		return nil, 0, fmt.Errorf("no processes")
	}
	var procs []thermos.Process
	byName := map[string]thermos.Process{}
	for _, p := range j.Task.Processes {
		c, err := s.bind(p.Cmdline, st)
		if err != nil {
			return nil, 0, err
		}
		p.Cmdline = c
		byName[p.Name] = p
	}
	for _, c := range j.Task.Constraints {
		for _, n := range c.Order {
			if p, ok := byName[n]; ok {
				procs = append(procs, p)
				delete(byName, n)
			}
		}
	}
	for _, p := range j.Task.Processes {
		if _, ok := byName[p.Name]; ok {
			procs = append(procs, byName[p.Name])
		}
	}
	wait := time.Duration(j.Task.FinalizationWait) * time.Second
	if wait <= 0 {
		wait = 30 * time.Second // Thermos's default
	}
	return procs, wait, nil
}

var reference = regexp.MustCompile(`\{\{([^{}]*)\}\}`)

// bind replaces the mustache references Thermos binds per task.
func (s *Server) bind(cmdline string, st *auroraapi.ScheduledTask) (string, error) {
	var bad []string
	out := reference.ReplaceAllStringFunc(cmdline, func(m string) string {
		ref := strings.TrimSpace(m[2 : len(m)-2])
		switch {
		case ref == "mesos.instance":
			return strconv.Itoa(int(st.AssignedTask.InstanceId))
		case ref == "mesos.hostname":
			return st.AssignedTask.SlaveHost
		case ref == "thermos.task_id":
			return st.AssignedTask.TaskId
		case strings.HasPrefix(ref, "thermos.ports[") && strings.HasSuffix(ref, "]"):
			name := ref[len("thermos.ports[") : len(ref)-1]
			if p, ok := st.AssignedTask.AssignedPorts[name]; ok {
				return strconv.Itoa(int(p))
			}
		}
		bad = append(bad, m)
		return m
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("unbound references %v", bad)
	}
	return out, nil
}

func freePort() int32 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
