package nomad

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/egret-stream/egret/core/spi"
)

var _ spi.Diagnoser = (*Scheduler)(nil)

// quietEvents are task events of a normal start; a diagnosis names the
// last other one.
var quietEvents = []string{"Received", "Task Setup", "Downloading Artifacts", "Started", "Not Restarting", "Restarting", "Alloc Unhealthy"}

// Diagnose reports the containers whose latest allocation is not running,
// or whose executor has failed or restarted, with the task event that
// says why (the event Nomad shows in `nomad alloc status`).
func (sc *Scheduler) Diagnose(ctx context.Context, topology string) (string, error) {
	if err := sc.check(ctx); err != nil {
		return "", err
	}
	j, err := sc.runningJob(ctx, topology)
	if err != nil {
		return "", err
	}
	allocs, _, err := sc.client.Jobs().Allocations(deref(j.ID), false, sc.qopts(ctx))
	if err != nil {
		return "", sc.fail(ctx, "list allocations of job "+deref(j.ID), err)
	}
	// Containers failing the same way are reported together.
	type report struct {
		groups []string
		alloc  string // an example allocation
	}
	var order []string
	reports := map[string]*report{}
	for _, c := range containersOf(j) {
		g := GroupName(c)
		a := latestAlloc(allocs, g)
		what, alloc := "no allocation", ""
		if a != nil {
			st := a.TaskStates[TaskName]
			if a.ClientStatus == api.AllocClientStatusRunning && (st == nil || (!st.Failed && st.Restarts == 0)) {
				continue
			}
			why := "no task events yet"
			if st != nil {
				why = cause(st)
			}
			what, alloc = a.ClientStatus+": "+why, shortID(a.ID)
		}
		r := reports[what]
		if r == nil {
			r = &report{alloc: alloc}
			reports[what] = r
			order = append(order, what)
		}
		r.groups = append(r.groups, g)
	}
	var lines []string
	for _, what := range order {
		r := reports[what]
		where := fmt.Sprintf("nomad job status %s", deref(j.ID))
		if r.alloc != "" {
			where = fmt.Sprintf("nomad alloc status %s; nomad alloc logs -stderr %s %s", r.alloc, r.alloc, TaskName)
		}
		lines = append(lines, fmt.Sprintf("%s %s (%s)", strings.Join(r.groups, ", "), what, where))
	}
	return strings.Join(lines, "; "), nil
}

// latestAlloc returns the newest allocation of group.
func latestAlloc(allocs []*api.AllocationListStub, group string) *api.AllocationListStub {
	var out *api.AllocationListStub
	for _, a := range allocs {
		if a.TaskGroup == group && (out == nil || a.CreateIndex > out.CreateIndex) {
			out = a
		}
	}
	return out
}

// cause names the task event that explains a task's state: the last one
// that is not part of a normal start.
func cause(st *api.TaskState) string {
	for i := len(st.Events) - 1; i >= 0; i-- {
		e := st.Events[i]
		if slices.Contains(quietEvents, e.Type) {
			continue
		}
		msg := e.DisplayMessage
		if msg == "" {
			msg = e.DriverError
		}
		return oneLine(e.Type + ": " + msg)
	}
	if st.Restarts > 0 {
		return fmt.Sprintf("the executor restarted %d times", st.Restarts)
	}
	return "task " + st.State
}
