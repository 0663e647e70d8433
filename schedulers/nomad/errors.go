package nomad

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

// fail turns an error of the Nomad client into one that says what went
// wrong and how to fix it. A cancelled context wins over everything.
func (sc *Scheduler) fail(ctx context.Context, what string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("nomad scheduler: %s: %w", what, cerr)
	}
	var ure api.UnexpectedResponseError
	if errors.As(err, &ure) {
		body := oneLine(ure.Body())
		switch ure.StatusCode() {
		case 401, 403:
			why := "is invalid, expired, or its policies do not allow this"
			if sc.ccfg.SecretID == "" {
				why = "is not set (set egret.nomad.token, or NOMAD_TOKEN in the environment)"
			}
			return fmt.Errorf("nomad scheduler: %s: Nomad at %s denied access (HTTP %d: %s): the ACL token %s in namespace %q",
				what, sc.ccfg.Address, ure.StatusCode(), body, why, sc.ccfg.Namespace)
		case 404:
			return fmt.Errorf("nomad scheduler: %s: %s: %w", what, body, spi.ErrNotFound)
		}
		return fmt.Errorf("nomad scheduler: %s: Nomad answered HTTP %d: %s", what, ure.StatusCode(), body)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("nomad scheduler: %s: cannot reach Nomad at %s: %v; check that the agent runs and that egret.nomad.address (or NOMAD_ADDR) is its HTTP address",
			what, sc.ccfg.Address, uerr.Err)
	}
	return fmt.Errorf("nomad scheduler: %s: %w", what, err)
}

func isNotFound(err error) bool {
	var ure api.UnexpectedResponseError
	return errors.As(err, &ure) && ure.StatusCode() == 404
}

// placement waits until Nomad has evaluated the registration (at most
// egret.nomad.placement.timeout) and returns an error wrapping
// spi.ErrCannotFit when it could not place some task groups. It returns
// the evaluation, nil when there is none or Nomad took too long.
func (sc *Scheduler) placement(ctx context.Context, j *api.Job, evalID string) (*api.Evaluation, error) {
	if evalID == "" {
		return nil, nil
	}
	ev, err := sc.waitEval(ctx, evalID)
	if err != nil {
		return nil, err
	}
	if ev == nil {
		sc.log.Warn("Nomad has not evaluated the job yet; not waiting longer", zap.String("job", deref(j.ID)),
			zap.String("eval", evalID), zap.Duration("waited", sc.s.placementTimeout))
		return nil, nil
	}
	if ev.Status == "failed" {
		return ev, fmt.Errorf("nomad scheduler: Nomad's evaluation %s of job %s failed: %s", ev.ID, deref(j.ID), ev.StatusDescription)
	}
	if len(ev.FailedTGAllocs) == 0 {
		return ev, nil
	}
	return ev, placementError(j, ev)
}

// waitEval polls the evaluation until it is no longer pending. It returns
// nil (and no error) when the placement timeout passes first.
func (sc *Scheduler) waitEval(ctx context.Context, id string) (*api.Evaluation, error) {
	deadline := time.NewTimer(sc.s.placementTimeout)
	defer deadline.Stop()
	pause := sc.evalPoll
	for {
		ev, _, err := sc.client.Evaluations().Info(id, sc.qopts(ctx))
		if err != nil {
			return nil, sc.fail(ctx, "read evaluation "+id, err)
		}
		if ev.Status != "pending" && ev.Status != "" {
			return ev, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("nomad scheduler: waiting for evaluation %s: %w", id, ctx.Err())
		case <-deadline.C:
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// placementError describes, per task group, why Nomad could not place it.
func placementError(j *api.Job, ev *api.Evaluation) error {
	groups := make([]string, 0, len(ev.FailedTGAllocs))
	for g := range ev.FailedTGAllocs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var b strings.Builder
	fmt.Fprintf(&b, "nomad scheduler: Nomad cannot place %d of the %d containers of topology %q (job %s, evaluation %s)",
		len(groups), len(j.TaskGroups), deref(j.Name), deref(j.ID), shortID(ev.ID))
	var hints []string
	for _, g := range groups {
		m := ev.FailedTGAllocs[g]
		reasons, h := metricReasons(m)
		hints = append(hints, h...)
		fmt.Fprintf(&b, "; %s: %s", g, strings.Join(reasons, ", "))
		if ask := asked(j, g); ask != "" {
			fmt.Fprintf(&b, " (it asks for %s)", ask)
		}
		if m != nil && m.CoalescedFailures > 0 {
			fmt.Fprintf(&b, " [+%d more]", m.CoalescedFailures)
		}
	}
	if len(hints) == 0 {
		hints = append(hints, "free or add capacity, or lower the topology's resources (component resources, egret.packing.*, egret.nomad.mhz.per.core, egret.nomad.tmanager.*)")
	}
	fmt.Fprintf(&b, ". %s", strings.Join(dedup(hints), "; "))
	return fmt.Errorf("%s: %w", b.String(), spi.ErrCannotFit)
}

// metricReasons reads an allocation metric: which dimension was short on
// how many nodes, which constraints filtered nodes out, and hints.
func metricReasons(m *api.AllocationMetric) (reasons, hints []string) {
	if m == nil {
		return []string{"no placement metrics"}, nil
	}
	if m.NodesEvaluated == 0 {
		dcs := make([]string, 0, len(m.NodesAvailable))
		for dc, n := range m.NodesAvailable {
			dcs = append(dcs, fmt.Sprintf("%s: %d", dc, n))
		}
		sort.Strings(dcs)
		reasons = append(reasons, fmt.Sprintf("no ready client node to evaluate (nodes per datacenter: %s)", orNone(dcs)))
		hints = append(hints, "check egret.nomad.datacenters and that the Nomad clients are up (nomad node status)")
	}
	for _, kv := range sortedCounts(m.DimensionExhausted) {
		reasons = append(reasons, fmt.Sprintf("%s exhausted on %d of %d nodes", kv.k, kv.n, m.NodesEvaluated))
	}
	for _, kv := range sortedCounts(m.ConstraintFiltered) {
		reasons = append(reasons, fmt.Sprintf("%d nodes filtered by %s", kv.n, kv.k))
		switch {
		case strings.Contains(kv.k, "missing drivers"):
			hints = append(hints, `no node offers the task driver (egret.nomad.driver): enable it on the clients, for raw_exec with plugin "raw_exec" { config { enabled = true } }`)
		case strings.Contains(kv.k, "consul"):
			hints = append(hints, "the metrics service needs Consul on the clients: set egret.nomad.metrics.service.provider: nomad, or egret.nomad.metrics.service.register: false")
		case strings.Contains(kv.k, "attr.kernel.name") || strings.Contains(kv.k, "attr.cpu.arch"):
			hints = append(hints, "no node has the OS/architecture the topology was built for (egret.package.goos, egret.package.goarch)")
		}
	}
	for _, kv := range sortedCounts(m.ClassExhausted) {
		reasons = append(reasons, fmt.Sprintf("node class %s exhausted on %d nodes", kv.k, kv.n))
	}
	if len(m.QuotaExhausted) > 0 {
		reasons = append(reasons, "quota exhausted: "+strings.Join(m.QuotaExhausted, ", "))
		hints = append(hints, "raise the namespace's Nomad quota")
	}
	if len(reasons) == 0 {
		reasons = append(reasons, fmt.Sprintf("%d of %d nodes exhausted", m.NodesExhausted, m.NodesEvaluated))
	}
	return reasons, hints
}

// asked renders the resources group g asks for.
func asked(j *api.Job, g string) string {
	for _, tg := range j.TaskGroups {
		if deref(tg.Name) != g || len(tg.Tasks) == 0 || tg.Tasks[0].Resources == nil {
			continue
		}
		r := tg.Tasks[0].Resources
		s := fmt.Sprintf("cpu %d MHz, memory %d MiB", deref(r.CPU), deref(r.MemoryMB))
		if tg.EphemeralDisk != nil && tg.EphemeralDisk.SizeMB != nil {
			s += fmt.Sprintf(", disk %d MiB", *tg.EphemeralDisk.SizeMB)
		}
		return s
	}
	return ""
}

type count struct {
	k string
	n int
}

func sortedCounts(m map[string]int) []count {
	out := make([]count, 0, len(m))
	for k, n := range m {
		out = append(out, count{k, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].k < out[j].k })
	return out
}

func dedup(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

var (
	// occurred ends a go-multierror header: "3 errors occurred:".
	occurred = regexp.MustCompile(`\d+ errors? occurred:$`)
	// groupFailed is how Nomad introduces the errors of a task group.
	groupFailed = regexp.MustCompile(`^Task group (\S+) validation failed:`)
)

// oneLine turns the body of a Nomad error into one line. Nomad renders
// its nested go-multierror lists over many lines ("2 errors occurred:",
// "\t* Task group container-1 validation failed: 1 error occurred:",
// "\t* 3 errors occurred:", "\t* Invalid health check given: \"\"", ...,
// blank lines). The innermost messages are kept, each prefixed with the
// task groups it was reported for ("container-1, container-2: ...").
func oneLine(body string) string {
	var order []string              // task groups ("" for the job), first seen first
	leaves := map[string][]string{} // task group -> its messages
	group := ""
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "* ")
		if l == "" {
			continue
		}
		if m := groupFailed.FindStringSubmatch(l); m != nil {
			group = m[1]
		}
		if loc := occurred.FindStringIndex(l); loc != nil {
			continue // a header: its messages follow
		}
		if _, ok := leaves[group]; !ok {
			order = append(order, group)
		}
		leaves[group] = append(leaves[group], l)
	}
	var parts []string
	done := map[string]bool{}
	for _, g := range order {
		if done[g] {
			continue
		}
		msg := strings.Join(leaves[g], "; ")
		names := []string{}
		for _, other := range order {
			if other != "" && !done[other] && strings.Join(leaves[other], "; ") == msg {
				names = append(names, other)
				done[other] = true
			}
		}
		if g == "" {
			parts = append(parts, msg)
			continue
		}
		parts = append(parts, strings.Join(names, ", ")+": "+msg)
	}
	return strings.Join(parts, "; ")
}
