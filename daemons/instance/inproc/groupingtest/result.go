package groupingtest

import (
	"fmt"
	"slices"
	"strings"
)

// TB is the part of testing.TB the checks use.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Counters are a runtime's counters of one component, summed over its
// tasks.
type Counters struct {
	Emitted, Executed, Errors, Dropped int64
}

// Result is what a runtime observed of one run of a case.
type Result struct {
	// Records are every task's records, in any order across tasks and in
	// recording order within a task.
	Records []Record
	// Counters maps the components to their counters.
	Counters map[string]Counters
	// ContainerOf maps every task to its container (nil: one container).
	ContainerOf map[int]int
}

// Tuples returns the data tuples bolt executed.
func (r *Result) Tuples(bolt string) []Record { return r.filter(KindTuple, bolt) }

// Ticks returns the tick tuples bolt executed.
func (r *Result) Ticks(bolt string) []Record { return r.filter(KindTick, bolt) }

func (r *Result) filter(kind Kind, component string) []Record {
	var out []Record
	for _, rec := range r.Records {
		if rec.Kind == kind && rec.Component == component {
			out = append(out, rec)
		}
	}
	return out
}

// SpoutEmitted returns how many tuples the spout reported emitted.
func (r *Result) SpoutEmitted() int {
	n := 0
	for _, rec := range r.Records {
		if rec.Kind == KindSpoutDone {
			n += rec.N
		}
	}
	return n
}

// CustomCalls returns the task lists the custom grouping function got.
func (r *Result) CustomCalls() [][]int {
	var out [][]int
	for _, rec := range r.Records {
		if rec.Kind == KindCustomCall {
			out = append(out, rec.Tasks)
		}
	}
	return out
}

// Tasks returns the task ids of component as its tasks saw them
// (ComponentTasks), after checking that every one of those tasks started
// and that they all saw the same list.
func (r *Result) Tasks(t TB, component string) []int {
	t.Helper()
	var tasks []int
	prepared := map[int]bool{}
	for _, rec := range r.Records {
		if rec.Kind != KindPrepared || rec.Component != component {
			continue
		}
		if tasks == nil {
			tasks = rec.Tasks
		} else if !slices.Equal(tasks, rec.Tasks) {
			t.Fatalf("tasks of %q disagree on ComponentTasks(%q): %v and %v", component, component, tasks, rec.Tasks)
		}
		prepared[rec.Task] = true
	}
	if len(tasks) == 0 {
		t.Fatalf("no task of %q has started", component)
	}
	for _, task := range tasks {
		if !prepared[task] {
			t.Fatalf("task %d of %q (one of %v) has not started", task, component, tasks)
		}
	}
	return tasks
}

// containerOf returns the container of task (1 without a layout).
func (r *Result) containerOf(task int) int {
	if r.ContainerOf == nil {
		return 1
	}
	return r.ContainerOf[task]
}

// Complete reports whether the run has gone far enough to be checked:
// the spout emitted everything and the case's own condition holds. A
// runtime that drains in-flight tuples when it stops can stop then; one
// that cannot should wait until Passes too.
func (c *Case) Complete(r *Result) bool {
	return r.SpoutEmitted() >= c.N && (c.until == nil || c.until(r))
}

// Check asserts the case's behaviour on r.
func (c *Case) Check(t TB, r *Result) {
	t.Helper()
	// Every task that executed a tuple is a task of its bolt.
	seen := map[string]bool{}
	for _, rec := range r.Records {
		if rec.Kind != KindTuple || seen[rec.Component] {
			continue
		}
		seen[rec.Component] = true
		tasks := r.Tasks(t, rec.Component)
		for _, got := range r.Tuples(rec.Component) {
			if !slices.Contains(tasks, got.Task) {
				t.Fatalf("%q task %d executed a tuple but is not one of its tasks %v", rec.Component, got.Task, tasks)
			}
		}
	}
	c.check(t, c, r)
}

// Passes runs Check on r without failing a test and reports whether it
// passed and, if not, why. Runtimes whose records and counters arrive over
// time wait for it.
func Passes(c *Case, r *Result) (ok bool, why string) {
	p := &probe{}
	func() {
		defer func() {
			if v := recover(); v != nil && v != errProbeFatal {
				panic(v)
			}
		}()
		c.Check(p, r)
	}()
	return len(p.msgs) == 0, strings.Join(p.msgs, "; ")
}

// probe is a TB that collects failures; Fatalf unwinds with a panic that
// Passes recovers.
type probe struct{ msgs []string }

var errProbeFatal = &struct{ name string }{"probe fatal"}

func (p *probe) Helper() {}

func (p *probe) Errorf(format string, args ...any) {
	p.msgs = append(p.msgs, fmt.Sprintf(format, args...))
}

func (p *probe) Fatalf(format string, args ...any) {
	p.msgs = append(p.msgs, fmt.Sprintf(format, args...))
	panic(errProbeFatal)
}
