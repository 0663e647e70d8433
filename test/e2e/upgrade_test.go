package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/proto/egretpb"
)

// taggedAckcheck names a build of the ackcheck topology with ackcheck.Tag
// set to tag (its sink then records which build recorded each tuple): the
// binary's name for binary(), which builds it on first use.
func taggedAckcheck(t *testing.T, tag string) string {
	t.Helper()
	return taggedAckcheckSetting(t, tag, "")
}

// taggedAckcheckSetting is taggedAckcheck whose sink also records the
// value of setting it started with (ackcheck.TagSetting), when not empty.
func taggedAckcheckSetting(t *testing.T, tag, setting string) string {
	t.Helper()
	name := "ackcheck-" + tag
	ldflags := "-X github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck.Tag=" + tag
	if setting != "" {
		name += "-" + setting
		ldflags += " -X github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck.TagSetting=" + setting
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	variants[name] = variant{pkg: packages["ackcheck"], ldflags: ldflags}
	return name
}

// upgradeResult is egret upgrade -o json.
type upgradeResult struct {
	Steps []struct {
		Container int       `json:"container"`
		From      string    `json:"from_sha256"`
		To        string    `json:"to_sha256"`
		Restarted time.Time `json:"restarted"`
		Healthy   int64     `json:"healthy_after_ns"`
		Drained   bool      `json:"drained"`
		Drain     int64     `json:"drain_ns"`
		TimedOut  bool      `json:"drain_timed_out"`
	} `json:"steps"`
	Unchanged []int `json:"unchanged"`
	Packages  []struct {
		SHA256     string `json:"sha256"`
		Containers []int  `json:"containers"`
	} `json:"packages"`
}

// upgrade runs egret upgrade -o json and decodes its result.
func (r *ackRun) upgrade(args ...string) upgradeResult {
	r.t.Helper()
	out := r.c.mustEgret(append([]string{"upgrade", r.c.name, r.name, "-o", "json"}, args...)...)
	var res upgradeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		r.t.Fatalf("egret upgrade -o json: %v\n%s", err, out)
	}
	return res
}

// defineArgs are the ackcheck flags the run was submitted with.
func (r *ackRun) defineArgs(flags ...string) []string {
	return append([]string{"--", "--name", r.name, "--messages", strconv.FormatInt(r.n, 10), "--state", r.state, "--containers", "2"}, flags...)
}

// sinkTasks returns the sink tasks of each container, failing unless both
// containers have one.
func (r *ackRun) sinkTasks() map[int][]int {
	r.t.Helper()
	out := map[int][]int{}
	for c := 1; c <= 2; c++ {
		out[c] = r.tasksOf(c, ackcheck.Sink)
		if len(out[c]) == 0 {
			r.t.Fatalf("container %d has no sink task: %+v", c, r.plan.Containers)
		}
	}
	return out
}

// tagged reads the sink records.
func (r *ackRun) tagged() map[int][]ackcheck.Tagged {
	r.t.Helper()
	recs, err := ackcheck.TaggedRecords(r.state)
	if err != nil {
		r.t.Fatal(err)
	}
	return recs
}

// waitTagged waits until every task of tasks has recorded a tuple with tag
// after since.
func (r *ackRun) waitTagged(what string, tasks []int, tag string, since time.Time) {
	r.t.Helper()
	await(r.t, what, recoverTimeout, func() (bool, string) {
		recs := r.tagged()
		for _, task := range tasks {
			list := recs[task]
			if len(list) == 0 || list[len(list)-1].Tag != tag || list[len(list)-1].Millis < since.UnixMilli() {
				return false, fmt.Sprintf("sink task %d has not recorded a %s tuple since %s", task, tag, since.Format(time.StampMilli))
			}
		}
		return true, ""
	})
}

// pauses measures, for each step of a roll, the pause in the output of the
// restarted container's sink tasks (from its last record before the
// restart to its first record of the new build) and the longest gap in
// the output of the whole topology during the step.
func pauses(t *testing.T, recs map[int][]ackcheck.Tagged, tasks map[int][]int, res upgradeResult, to string) {
	t.Helper()
	var all []int64
	for _, list := range recs {
		for _, r := range list {
			all = append(all, r.Millis)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, s := range res.Steps {
		restart := s.Restarted.UnixMilli()
		healthy := restart + s.Healthy/1e6
		var worst int64
		for _, task := range tasks[s.Container] {
			// The first record of the new build after the restart, and
			// the last of the old process before it.
			var last, first int64 = -1, -1
			for _, r := range recs[task] {
				if r.Tag == to && r.Millis >= restart {
					first = r.Millis
					break
				}
				if r.Tag != to {
					last = r.Millis
				}
			}
			if last < 0 || first < 0 {
				t.Errorf("container %d, sink task %d: no record before the restart (%d) or none of %s after it (%d)", s.Container, task, last, to, first)
				continue
			}
			worst = max(worst, first-last)
		}
		var gap int64
		for i := 1; i < len(all); i++ {
			if all[i] >= restart && all[i-1] <= healthy {
				gap = max(gap, all[i]-all[i-1])
			}
		}
		drain := "not drained"
		if s.Drained {
			drain = fmt.Sprintf("drained in %s before the restart (timed out: %v)", time.Duration(s.Drain).Round(time.Millisecond), s.TimedOut)
		}
		t.Logf("step container %d -> %s (%s): its sinks paused %d ms (last record of the old build to the first of the new one); longest gap of the topology's output during the step %d ms; healthy %s after the restart",
			s.Container, to, drain, worst, gap, time.Duration(s.Healthy).Round(time.Millisecond))
	}
}

// TestUpgradeRolling: a rolling upgrade of a flowing at-least-once
// topology to a build whose sink records another tag restarts container 1
// then 2, each drained first (egret.upgrade.drain.timeout); both builds
// record during the roll, only the new one after it, and every message is
// acked once with every copy recorded once: no replay.
func TestUpgradeRolling(t *testing.T) {
	c := newCluster(t, "local", "egret.upgrade.drain.timeout=90s")
	v1, v2 := taggedAckcheck(t, "v1"), taggedAckcheck(t, "v2")
	const n = 45000
	flags := []string{"--rate", "1500", "--max-pending", "500", "--timeout", "5s"}
	run := startAckCheckWith(t, c, "rolled", v1, n, nil, flags...)
	tasks := run.sinkTasks()
	run.waitAcked("the first 3,000 messages", 3000, 2*time.Minute)

	began := time.Now()
	res := run.upgrade(append([]string{binary(t, v2), "--wait-healthy", "90s"}, run.defineArgs(flags...)...)...)
	ended := time.Now()
	if len(res.Steps) != 2 || res.Steps[0].Container != 1 || res.Steps[1].Container != 2 {
		t.Fatalf("the upgrade restarted %+v, want containers 1 then 2", res.Steps)
	}
	if len(res.Packages) != 1 || res.Packages[0].SHA256 != res.Steps[0].To || len(res.Packages[0].Containers) != 2 {
		t.Fatalf("after the upgrade the containers run %+v, want every one on %s", res.Packages, res.Steps[0].To)
	}
	for _, s := range res.Steps {
		if !s.Drained || s.TimedOut {
			t.Errorf("container %d: drained %v, timed out %v; want a drain that completed before its restart (egret.upgrade.drain.timeout=90s)", s.Container, s.Drained, s.TimedOut)
		}
	}
	t.Logf("the roll of 2 containers took %s", ended.Sub(began).Round(time.Millisecond))
	short := res.Steps[0].To[:12]
	if out := c.mustEgret("list", c.name); !strings.Contains(out, short+" on containers 1,2") {
		t.Errorf("egret list does not show package %s on containers 1,2:\n%s", short, out)
	}
	run.waitTagged("every sink to record v2 tuples after the roll", append(tasks[1], tasks[2]...), "v2", ended)

	res2 := run.waitAcked("every message", n, allAckedTimeout)
	if !res2.ExactlyOnce() {
		t.Fatalf("after the drained rolling upgrade: %s; want every message acked once, every copy recorded once, no replay", res2)
	}
	t.Logf("at-least-once through the roll: %s", res2)
	recs := run.tagged()
	count := map[string]int{}
	for task, list := range recs {
		for _, r := range list {
			count[r.Tag]++
			if r.Tag != "v2" && r.Millis > ended.UnixMilli() {
				t.Errorf("sink task %d recorded a %s tuple at %d, after the roll ended (%d)", task, r.Tag, r.Millis, ended.UnixMilli())
				break
			}
		}
	}
	if count["v1"] == 0 || count["v2"] == 0 {
		t.Fatalf("records by build: %v; want both builds to have recorded", count)
	}
	// During the roll, container 2 still ran v1 while container 1 ran v2.
	mixed := false
	for _, task := range tasks[2] {
		for _, r := range recs[task] {
			if r.Tag == "v1" && r.Millis > res.Steps[0].Restarted.UnixMilli()+res.Steps[0].Healthy/1e6 && r.Millis < res.Steps[1].Restarted.UnixMilli() {
				mixed = true
			}
		}
	}
	if !mixed {
		t.Errorf("no v1 record of container 2 between the upgrade of container 1 and its own: both builds were not visible during the roll")
	}
	t.Logf("records by build: %v", count)
	pauses(t, recs, tasks, res, "v2")

	// Both packages are gone with the topology.
	es, err := c.store().ExecutionState(context.Background(), "rolled")
	if err != nil {
		t.Fatal(err)
	}
	c.mustEgret("kill", c.name, "rolled", "--now")
	c.waitGone(t)
	for _, uri := range []string{es.GetPackageUri(), state.TopologyPackage(es).GetUri()} {
		if p := strings.TrimPrefix(uri, "file://"); fileExists(p) {
			t.Errorf("package %s outlived the kill", p)
		}
	}
}

// TestUpgradeCanaryRollback: an incompatible binary is refused with its
// diff before anything changes; a canary upgrades container 1 only (it
// records v2, container 2 goes on with v1, egret list shows both); a
// rollback returns container 1 to v1; nothing is lost.
func TestUpgradeCanaryRollback(t *testing.T) {
	c := newCluster(t, "local")
	v1, v2 := taggedAckcheck(t, "v1"), taggedAckcheck(t, "v2")
	const n = 40000
	flags := []string{"--rate", "1500", "--max-pending", "500", "--timeout", "5s"}
	// Named as the word count, whose binary then defines a topology of the
	// same name and another logical plan.
	run := startAckCheckWith(t, c, "wordcount", v1, n, nil, flags...)
	tasks := run.sinkTasks()
	run.waitAcked("the first 3,000 messages", 3000, 2*time.Minute)

	_, stderr, code := c.egret("upgrade", c.name, "wordcount", binary(t, "wordcount"))
	if code != 2 || !strings.Contains(stderr, "not compatible") || !strings.Contains(stderr, `spout "source" is gone`) || !strings.Contains(stderr, "hint: ") {
		t.Fatalf("an incompatible upgrade: exit %d, %s; want exit 2 and the diff", code, stderr)
	}
	t.Logf("refused: %s", strings.TrimSpace(stderr))
	es, err := c.store().ExecutionState(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	if es.GetCurrentPackage() != nil || len(es.GetContainerPackages()) > 0 || es.GetUpgradeTimeUnix() != 0 {
		t.Fatalf("the refused upgrade changed the execution state: %v", es)
	}
	if _, stderr, code := c.egret("upgrade", c.name, "wordcount", "--rollback"); code != 2 || !strings.Contains(stderr, "no previous package") {
		t.Fatalf("a rollback of a topology never upgraded: exit %d, %s", code, stderr)
	}

	// Without a drain (--drain-timeout 0s) the container restarts while
	// tuples flow: the trees it held are replayed after their timeout.
	res := run.upgrade(append([]string{binary(t, v2), "--canary", "1", "--wait-healthy", "90s", "--drain-timeout", "0s"}, run.defineArgs(flags...)...)...)
	canaried := time.Now()
	if len(res.Steps) != 1 || res.Steps[0].Container != 1 || len(res.Packages) != 2 || res.Steps[0].Drained {
		t.Fatalf("the canary restarted %+v and left %+v, want container 1 only on its own package, not drained (--drain-timeout 0s)", res.Steps, res.Packages)
	}
	v2sha := res.Steps[0].To
	out := c.mustEgret("list", c.name)
	if !strings.Contains(out, v2sha[:12]+" on container 1") {
		t.Errorf("egret list does not show the canary's package on container 1:\n%s", out)
	}
	run.waitTagged("container 1 to record v2 after the canary", tasks[1], "v2", canaried)
	run.waitTagged("container 2 to record v1 after the canary", tasks[2], "v1", canaried)
	pauses(t, run.tagged(), tasks, res, "v2")

	// A topology the operator deactivated is rolled back without a drain
	// and stays deactivated.
	c.mustEgret("deactivate", c.name, "wordcount")
	back := run.upgrade("--rollback", "--wait-healthy", "90s")
	if len(back.Steps) != 1 || back.Steps[0].Container != 1 || len(back.Packages) != 1 || back.Steps[0].To != res.Steps[0].From || back.Steps[0].Drained {
		t.Fatalf("the rollback restarted %+v and left %+v, want container 1 back on %s, not drained (deactivated)", back.Steps, back.Packages, res.Steps[0].From)
	}
	if ph, err := c.store().PhysicalPlan(context.Background(), "wordcount"); err != nil || ph.GetState() != egretpb.TopologyState_TOPOLOGY_STATE_PAUSED {
		t.Fatalf("after the rollback of a deactivated topology its state is %v (%v), want it still deactivated", ph.GetState(), err)
	}
	c.mustEgret("activate", c.name, "wordcount")
	rolledBack := time.Now()
	run.waitTagged("every sink to record v1 after the rollback", append(tasks[1], tasks[2]...), "v1", rolledBack)
	pauses(t, run.tagged(), tasks, back, "v1")
	if _, stderr, code := c.egret("upgrade", c.name, "wordcount", "--rollback"); code != 2 || !strings.Contains(stderr, "no previous package") {
		t.Errorf("a second rollback: exit %d, %s; want exit 2, nothing to roll back to", code, stderr)
	}
	res2 := run.waitAcked("every message", n, allAckedTimeout)
	if !res2.Complete() {
		t.Fatalf("after the canary and the rollback: %s; want every message acked and every copy recorded", res2)
	}
	for task, list := range run.tagged() {
		for _, r := range list {
			if r.Tag != "v1" && r.Millis > rolledBack.UnixMilli() {
				t.Fatalf("sink task %d recorded a %s tuple after the rollback", task, r.Tag)
			}
		}
	}
	es, err = c.store().ExecutionState(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	if len(es.GetContainerPackages()) > 0 || es.GetPreviousPackage() != nil || state.TopologyPackage(es).GetSha256() != res.Steps[0].From {
		t.Errorf("after the rollback the execution state is %v", es)
	}
	c.mustEgret("kill", c.name, "wordcount", "--now")
	c.waitGone(t)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestUpgradeStopsAtUnhealthy: an upgrade to a build whose sink cannot
// start stops at container 1 (exit 1) with what runs where and the way
// back; container 2 goes on with the old build; --rollback returns
// container 1 to it and nothing is lost.
func TestUpgradeStopsAtUnhealthy(t *testing.T) {
	c := newCluster(t, "local")
	v1, broken := taggedAckcheck(t, "v1"), taggedAckcheck(t, "broken")
	const n = 30000
	flags := []string{"--rate", "1500", "--max-pending", "500", "--timeout", "5s"}
	run := startAckCheckWith(t, c, "broken", v1, n, nil, flags...)
	tasks := run.sinkTasks()
	run.waitAcked("the first 3,000 messages", 3000, 2*time.Minute)

	args := append([]string{"upgrade", c.name, "broken", binary(t, broken), "--wait-healthy", "15s"}, run.defineArgs(flags...)...)
	stdout, stderr, code := c.egret(args...)
	if code != 1 || !strings.Contains(stderr, "container 1 is") || !strings.Contains(stderr, "--rollback returns every container") || !strings.Contains(stderr, "on container 1;") {
		t.Fatalf("an upgrade to a broken build: exit %d, %s; want exit 1 naming container 1, the packages and --rollback; stdout:\n%s", code, stderr, stdout)
	}
	t.Logf("stopped: %s", strings.TrimSpace(stderr))
	// The step drained (deactivated) the topology: the failed step
	// activated it again.
	if ph, err := c.store().PhysicalPlan(context.Background(), "broken"); err != nil || ph.GetState() != egretpb.TopologyState_TOPOLOGY_STATE_RUNNING {
		t.Fatalf("after the stopped upgrade the topology's state is %v (%v), want it activated again", ph.GetState(), err)
	}
	// Container 2 stays on the old package (its tuples cannot flow while
	// the broken sink of container 1 blocks the topology: back pressure).
	es, err := c.store().ExecutionState(context.Background(), "broken")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := state.ContainerPackage(es, 2).GetSha256(), es.GetPreviousPackage().GetSha256(); got != want || got == "" || state.ContainerPackage(es, 1).GetSha256() == want {
		t.Fatalf("after the stopped upgrade container 1 runs %s, container 2 %s; want container 2 on the previous package %s", state.ContainerPackage(es, 1).GetSha256(), got, want)
	}

	back := run.upgrade("--rollback", "--wait-healthy", "90s")
	rolledBack := time.Now()
	if len(back.Steps) != 1 || back.Steps[0].Container != 1 || len(back.Packages) != 1 {
		t.Fatalf("the rollback restarted %+v and left %+v, want container 1 back", back.Steps, back.Packages)
	}
	run.waitTagged("every sink to record v1 after the rollback", append(tasks[1], tasks[2]...), "v1", rolledBack)
	res := run.waitAcked("every message", n, allAckedTimeout)
	if !res.Complete() {
		t.Fatalf("after the stopped upgrade and its rollback: %s; want every message acked and every copy recorded", res)
	}
	c.mustEgret("kill", c.name, "broken", "--now")
	c.waitGone(t)
}
