package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/topology"
)

// taskState is the state of a task whose component keeps state
// (api.Stateful) or registers timers (api.TimerHandler): its States over a
// state backend (topology.state.backend) that holds the task's key groups,
// the grouping fields that make a tuple's key current before Execute, and
// the timer of the earliest processing-time timer.
type taskState struct {
	in       *Instance
	name     string // the backend's
	opts     statebackend.Options
	backend  statebackend.Backend
	states   *api.States
	stateful api.Stateful     // nil unless implemented
	handler  api.TimerHandler // nil unless implemented
	// tempDir is removed at close (a StateDir the instance made up).
	tempDir string
	// keyFields[stream index] are the indexes of the grouping fields of
	// an input of this bolt with a fields grouping, nil for the others.
	keyFields [][]int
	// timer fires at armed, the earliest processing-time timer.
	timer *time.Timer
	armed int64
	// keyErrLogged limits the log of tuples whose key is not the task's.
	keyErrLogged bool
}

// newTaskState opens the task's backend when component keeps state; it
// returns nil for a component that does not.
func newTaskState(in *Instance, component any) (*taskState, error) {
	stateful, _ := component.(api.Stateful)
	handler, _ := component.(api.TimerHandler)
	if stateful == nil && handler == nil {
		return nil, nil
	}
	lt := in.cfg.Topology.Logical
	maxP := lt.MaxParallelism(in.comp.Name)
	tasks := in.cfg.Layout.Tasks[in.comp.Name]
	index := -1
	for i, t := range tasks {
		if t == in.cfg.TaskID {
			index = i
		}
	}
	if index < 0 {
		return nil, fmt.Errorf("task %d is not among the tasks of %s", in.cfg.TaskID, in.comp.Name)
	}
	if err := keygroup.Check(len(tasks), maxP); err != nil {
		return nil, fmt.Errorf("component %s: %w", in.comp.Name, err)
	}
	ts := &taskState{in: in, name: lt.StateBackend(), stateful: stateful, handler: handler, armed: -1}
	dir := in.cfg.StateDir
	if dir == "" {
		d, err := os.MkdirTemp("", fmt.Sprintf("egret-state-task%d-", in.cfg.TaskID))
		if err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		dir, ts.tempDir = d, d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	ts.opts = statebackend.Options{
		Dir:            dir,
		MaxParallelism: maxP,
		Groups:         keygroup.RangeOf(index, len(tasks), maxP),
		Now:            in.cfg.Now,
	}
	b, err := statebackend.Open(ts.name, ts.opts)
	if err != nil {
		ts.removeDir()
		return nil, fmt.Errorf("open the state backend: %w", err)
	}
	ts.backend = b
	if ts.states, err = ts.open(nil); err != nil {
		ts.close()
		return nil, err
	}
	if in.comp.Kind == topology.Bolt {
		ts.keyFields = keyFields(in)
	}
	return ts, nil
}

// keyFields returns, by stream index, the grouping fields of the inputs
// of the instance's bolt that have a fields grouping.
func keyFields(in *Instance) [][]int {
	var out [][]int
	for _, input := range in.comp.Inputs {
		if input.Grouping != topology.Fields {
			continue
		}
		idx, ok := in.cfg.Streams.Index(input.Component, input.Stream)
		if !ok {
			continue
		}
		info, err := in.cfg.Streams.Stream(idx)
		if err != nil {
			continue
		}
		fields := make([]int, 0, len(input.Fields))
		for _, f := range input.Fields {
			fields = append(fields, indexOf(info.Fields, f))
		}
		if int(idx) >= len(out) {
			out = append(out, make([][]int, int(idx)+1-len(out))...)
		}
		out[idx] = fields
	}
	return out
}

// open returns States over the backend (restored already) with the
// operator states encoded in operator, the component as timer handler.
func (ts *taskState) open(operator []byte) (*api.States, error) {
	s, err := api.OpenStates(ts.backend, ts.opts, ts.in.cfg.Types, operator)
	if err != nil {
		return nil, err
	}
	if ts.handler != nil {
		s.SetTimerHandler(ts.handler)
	}
	ts.states = s
	ts.armed = -1
	return s, nil
}

// initState calls InitState with the task's states.
func (ts *taskState) initState() error {
	if ts.stateful == nil {
		return nil
	}
	s := ts.states
	return ts.in.call("InitState", func() error { return ts.stateful.InitState(s) })
}

// setKey makes the key of t current before Execute: the values of its
// grouping fields when its input has a fields grouping, else none (the
// bolt may select one with States.SetCurrentKey).
func (ts *taskState) setKey(stream uint32, t *inTuple) {
	if int(stream) >= len(ts.keyFields) || ts.keyFields[stream] == nil {
		ts.states.ClearCurrentKey()
		return
	}
	if err := ts.states.SetKeyFields(t.values(), ts.keyFields[stream]); err != nil {
		// Only a tuple routed by another layout (a rescale in flight)
		// or damaged gets here: its keyed state is not this task's.
		ts.in.metrics.Errors.Add(1)
		if !ts.keyErrLogged {
			ts.keyErrLogged = true
			ts.in.log.Error("a tuple's key is not this task's; it is executed with no current key (logged once)", zap.Error(err))
		}
	}
}

// timerC returns the channel of the processing-time timer, armed for the
// earliest processing-time timer (nil when there is none, or when the
// task may not process yet).
func (ts *taskState) timerC(processing bool) <-chan time.Time {
	if ts == nil || !processing {
		return nil
	}
	next, ok := ts.states.NextProcessingTime()
	if !ok {
		return nil
	}
	if next != ts.armed || ts.timer == nil {
		d := time.Until(time.UnixMilli(next))
		if ts.in.cfg.Now != nil {
			d = time.UnixMilli(next).Sub(ts.in.cfg.Now())
		}
		if ts.timer == nil {
			ts.timer = time.NewTimer(d)
		} else {
			ts.timer.Reset(d)
		}
		ts.armed = next
	}
	return ts.timer.C
}

// fireTimers fires the processing-time timers that are due.
func (ts *taskState) fireTimers() {
	ts.armed = -1
	now := ts.states.ProcessingTime()
	_ = ts.in.call("OnTimer", func() error {
		if err := ts.states.FireProcessingTimers(now); err != nil {
			ts.in.metrics.Errors.Add(1)
			ts.in.log.Error("processing-time timers", zap.Error(err))
		}
		return nil
	})
}

func (ts *taskState) removeDir() {
	if ts.tempDir != "" {
		_ = os.RemoveAll(ts.tempDir)
	}
}

// close closes the backend (and removes a directory the instance made
// up).
func (ts *taskState) close() {
	if ts == nil {
		return
	}
	if ts.timer != nil {
		ts.timer.Stop()
	}
	if ts.backend != nil {
		if err := ts.backend.Close(); err != nil {
			ts.in.log.Warn("close the state backend", zap.Error(err))
		}
	}
	ts.removeDir()
}

// DefaultStateDir is the directory a task's state backend lives in when
// Config.StateDir is empty and the instance runs in a container: under
// the instance's working directory, which the executor makes in the
// container's.
func DefaultStateDir(task int) string {
	wd, err := os.Getwd()
	if err != nil {
		wd = os.TempDir()
	}
	return filepath.Join(wd, "state", fmt.Sprintf("task-%d", task))
}
