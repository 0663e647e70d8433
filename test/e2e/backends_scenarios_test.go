package e2e

// The scenarios of the backend suite (backends_test.go). Each group runs
// one topology on the backend's cluster and covers one or more rows of the
// matrix, each row a subtest of its own (a cell). The groups use only the
// CLI, the state manager, the files the topologies write and the
// processes the backend runs on this machine (found from their executors'
// command lines), so every backend runs the same code.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/stmgr"
)

// The rows of the matrix, in its order.
const (
	rowSubmit          = "submit"
	rowLogsMetrics     = "logs-metrics"
	rowKillClean       = "kill-clean"
	rowAtLeastOnce     = "at-least-once-kill9"
	rowEffectivelyOnce = "effectively-once-kill9"
	rowRescale         = "rescale"
	rowUpgrade         = "rolling-upgrade"
	rowBackPressure    = "back-pressure"
	rowDrainedKill     = "drained-kill"
)

// row is one row of the matrix.
type row struct{ id, title string }

var rows = []row{
	{rowSubmit, "submit; tuples flow on every container"},
	{rowLogsMetrics, "logs and metrics reachable (`egret logs`, `egret metrics`)"},
	{rowKillClean, "kill leaves no process, job, file or state"},
	{rowAtLeastOnce, "at-least-once: every id acked, none lost, through kill -9 of an instance, a stream manager, the topology manager and a whole container"},
	{rowEffectivelyOnce, "effectively-once: exact counts through kill -9 of an instance, a stream manager, the topology manager and a whole container"},
	{rowRescale, "rescale down and up again (`egret update --component-parallelism`) with data flowing, none lost; update names the containers it replaces"},
	{rowUpgrade, "rolling upgrade: canary, rollback, full roll (`egret upgrade`), none lost"},
	{rowBackPressure, "back pressure: a slow bolt throttles the spout across containers; every id acked"},
	{rowDrainedKill, "drained kill (`egret kill`): every id emitted before it is acked before the containers stop"},
}

// group runs one topology and covers rows with cell.
type group struct {
	name string
	rows []string
	run  func(t *testing.T, c *cluster, cell cellFunc)
}

// cellFunc runs one row's checks as a subtest and reports whether they
// passed (a row the backend cannot run is skipped and reports false).
type cellFunc func(row string, f func(t *testing.T)) bool

var groups = []group{
	{"wordcount", []string{rowSubmit, rowLogsMetrics, rowKillClean}, groupWordCount},
	{"ackcheck", []string{rowRescale, rowAtLeastOnce}, groupAckCheck},
	{"eocount", []string{rowEffectivelyOnce}, groupEOCount},
	{"upgrade", []string{rowUpgrade}, groupUpgrade},
	{"slowbolt", []string{rowBackPressure}, groupBackPressure},
	{"drained", []string{rowDrainedKill}, groupDrainedKill},
}

// groupWordCount: submit word count on 2 containers, read its logs and
// metrics through the CLI, kill it.
func groupWordCount(t *testing.T, c *cluster, cell cellFunc) {
	var w *wordCount
	if !cell(rowSubmit, func(t *testing.T) {
		sc := *c
		sc.t = t
		w = startWordCount(t, &sc, 2)
		w.t = t
		if out := sc.mustEgret("list", c.name); !strings.Contains(out, "wordcount") || !strings.Contains(out, "running") {
			t.Errorf("egret list does not show wordcount running:\n%s", out)
		}
	}) {
		return
	}
	cell(rowLogsMetrics, func(t *testing.T) {
		sc := *c
		sc.t = t
		w.t, w.c = t, &sc
		awaitRise(t, "egret metrics to show the count bolts executing", recoverTimeout, func() float64 {
			out, _, code := sc.egret("metrics", c.name, w.name, "-o", "json")
			var m struct{ Components map[string]map[string]float64 }
			if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
				return -1
			}
			v, ok := m.Components["count"]["instance.executed"]
			if !ok {
				return -1
			}
			return v
		})
		out := sc.mustEgret("logs", c.name, w.name, "count", "--tail", "5")
		if strings.TrimSpace(out) == "" {
			t.Errorf("egret logs of the count bolt printed nothing")
		}
		for id := 0; id <= w.containers; id++ {
			want := "stmgr.log"
			if id == 0 {
				want = "tmanager.log"
			}
			if out := sc.mustEgret("logs", c.name, w.name, "container", strconv.Itoa(id)); !strings.Contains(out, want) {
				t.Errorf("egret logs container %d lists no %s:\n%s", id, want, out)
			}
		}
		out = sc.mustEgret("logs", c.name, w.name, "container", "1", "--file", "stmgr.log", "--tail", "3")
		if strings.TrimSpace(out) == "" {
			t.Errorf("egret logs container 1 --file stmgr.log printed nothing")
		}
	})
	cell(rowKillClean, func(t *testing.T) {
		sc := *c
		sc.t = t
		w.t, w.c = t, &sc
		killClean(t, &sc, w.name)
	})
}

// killClean kills topology and checks that nothing of it is left: no
// process, no state node, nothing the resource manager holds, no row in
// egret list.
func killClean(t *testing.T, c *cluster, topology string) {
	t.Helper()
	began := time.Now()
	c.mustEgret("kill", c.name, topology)
	t.Logf("egret kill took %s", time.Since(began).Round(time.Millisecond))
	c.waitGone(t)
	if _, err := c.store().Topology(context.Background(), topology); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("topology state left after kill: %v", err)
	}
	if c.leftovers != nil {
		await(t, "the resource manager to hold nothing of "+topology, recoverTimeout, func() (bool, string) {
			left := c.leftovers(t, topology)
			return len(left) == 0, strings.Join(left, "; ")
		})
	}
	if out := c.mustEgret("list", c.name); strings.Contains(out, topology+" ") {
		t.Errorf("egret list still shows %s:\n%s", topology, out)
	}
	if _, stderr, code := c.egret("kill", c.name, topology); code != 1 || !strings.Contains(stderr, "no topology") {
		t.Errorf("a second kill: exit %d, %q; want exit 1 saying there is no topology", code, stderr)
	}
}

// suiteAckFlags: about 1,000 messages a second, a short message timeout so
// that the trees a kill loses are replayed soon.
var suiteAckFlags = []string{"--rate", "1000", "--max-pending", "500", "--timeout", "5s"}

// groupAckCheck: the ackcheck topology (every message acked, every copy
// recorded) through a rescale up and down, then kill -9 of an instance, a
// stream manager, the topology manager and a whole container.
func groupAckCheck(t *testing.T, c *cluster, cell cellFunc) {
	const n = 90000
	sc := *c
	sc.t = t
	r := startAckCheck(t, &sc, "ackcheck", n, suiteAckFlags...)
	r.waitAcked("the first 3,000 messages", 3000, recoverTimeout)
	onT := func(t *testing.T) *cluster {
		cc := *c
		cc.t = t
		r.t, r.c = t, &cc
		return &cc
	}
	cell(rowRescale, func(t *testing.T) {
		cc := onT(t)
		relays := relayTasks(r.plan.Containers)
		if relays < 2 {
			t.Fatalf("the packing plan has %d relay tasks, the scenario scales 2 or more down by one", relays)
		}
		// Down first, then back up: every container keeps at most the
		// size it was started with, which schedulers that cannot resize
		// a running container (YARN, Aurora) need.
		for _, step := range []struct {
			what string
			n    int
		}{{"scale-down", relays - 1}, {"scale-up", relays}} {
			before := r.allProcs()
			acked := r.check().Acked
			out := cc.mustEgret("update", c.name, r.name, "--component-parallelism", ackcheck.Relay+":"+strconv.Itoa(step.n))
			t.Logf("%s to %d relay tasks:\n%s", step.what, step.n, strings.TrimSpace(out))
			pp, _, err := r.store.PackingPlan(context.Background(), r.name)
			if err != nil {
				t.Fatal(err)
			}
			r.plan = pp
			if got := relayTasks(pp.Containers); got != step.n {
				t.Fatalf("the packing plan has %d relay tasks after the %s, want %d", got, step.what, step.n)
			}
			await(t, fmt.Sprintf("%d relay instances to run", step.n), recoverTimeout, func() (bool, string) {
				n := 0
				for name := range r.allProcs() {
					if strings.Contains(name, "/instance-"+ackcheck.Relay+"-") {
						n++
					}
				}
				return n == step.n, fmt.Sprintf("%d relay instances", n)
			})
			r.waitAcked("acks to go on after the "+step.what, acked+2000, recoverTimeout)
			// What egret update said must be what happened: "rescaling it
			// while it runs" keeps every process; the containers the
			// scheduler replaces are named.
			replaced := replacedProcs(before, r.allProcs())
			t.Logf("processes replaced by the %s: %v", step.what, replaced)
			if strings.Contains(out, "rescaling it while it runs") && len(replaced) > 0 {
				t.Errorf("egret update said that no instance stops, and the %s replaced %v", step.what, replaced)
			}
			if len(replaced) > 0 && !strings.Contains(out, "the scheduler replaces container") {
				t.Errorf("the %s replaced %v and egret update did not say so", step.what, replaced)
			}
		}
	})
	cell(rowAtLeastOnce, func(t *testing.T) {
		onT(t)
		if pp, _, err := r.store.PackingPlan(context.Background(), r.name); err == nil {
			r.plan = pp
		}
		relay := 1
		if len(r.tasksOf(relay, ackcheck.Relay)) == 0 {
			relay = 2
		}
		for _, v := range []struct {
			what      string
			container int
			names     func() []string
		}{
			{"a relay instance", relay, func() []string {
				return []string{fmt.Sprintf("instance-%s-%d", ackcheck.Relay, r.tasksOf(relay, ackcheck.Relay)[0])}
			}},
			{"a stream manager", 1, func() []string { return []string{"stmgr"} }},
			{"the topology manager", 0, func() []string { return []string{"tmanager"} }},
			{"container 2 (its executor and every process)", 2, func() []string { return procNames(r.procs(2)) }},
		} {
			atKill := r.check()
			if atKill.Acked >= n {
				t.Fatalf("every message was acked before the kill of %s: the fault came too late to test anything", v.what)
			}
			old := r.killProcs(v.container, v.names())
			t.Logf("kill -9 of %s with %d of %d messages acked", v.what, atKill.Acked, n)
			waitDead(t, "the killed processes to exit", old)
			r.waitRestarted(v.container, old)
			r.waitAcked("acks to go on after the kill of "+v.what, r.check().Acked+1000, allAckedTimeout)
		}
		res := r.waitAcked("every message to be acked", n, allAckedTimeout)
		t.Logf("%s", res)
		if !res.Complete() {
			t.Errorf("messages lost: %s", res)
		}
	})
	sc.mustEgret("kill", c.name, r.name, "--now")
	sc.waitGone(t)
}

func relayTasks(cs []plan.Container) int {
	n := 0
	for _, ct := range cs {
		for _, in := range ct.Instances {
			if in.Component == ackcheck.Relay {
				n++
			}
		}
	}
	return n
}

// replacedProcs lists the processes of before that after runs anew
// (another process under the same name), sorted.
func replacedProcs(before, after map[string]proc) []string {
	var out []string
	for name, p := range before {
		if q, ok := after[name]; ok && q != p {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// groupEOCount: the effectively-once word count through kill -9 of a
// count instance, a stream manager, the topology manager and a whole
// container, each after the counts moved on from the previous one; the
// counts end exact and never pass the expected ones.
func groupEOCount(t *testing.T, c *cluster, cell cellFunc) {
	cell(rowEffectivelyOnce, func(t *testing.T) {
		sc := *c
		sc.t = t
		const n = 80000
		r := startEOCount(t, &sc, "eocount", n, "--rate", "2000", "--interval", "500ms")
		r.waitCounted("a tenth of the words to be counted", 0.1, recoverTimeout)
		await(t, "a checkpoint to complete", recoverTimeout, func() (bool, string) {
			v := r.checkpointMetric("checkpoint.completed")
			return v >= 1, fmt.Sprintf("checkpoint.completed = %v", v)
		})
		for i, v := range []struct {
			what      string
			container int
			names     func() []string
		}{
			{"a count instance", 1, func() []string {
				return []string{fmt.Sprintf("instance-%s-%d", eocount.Count, r.tasksOf(1, eocount.Count)[0])}
			}},
			{"a stream manager", 1, func() []string { return []string{"stmgr"} }},
			{"the topology manager", 0, func() []string { return []string{"tmanager"} }},
			{"container 2 (its executor and every process)", 2, func() []string { return procNames(r.procs(2)) }},
		} {
			atKill := r.check()
			if atKill.Exact() {
				t.Fatalf("every word was counted before the kill of %s: the fault came too late to test anything", v.what)
			}
			old := r.killProcs(v.container, v.names())
			t.Logf("kill -9 of %s at %s", v.what, atKill)
			waitDead(t, "the killed processes to exit", old)
			r.waitRestarted(v.container, old)
			r.waitCounted(fmt.Sprintf("%d0%% of the words to be counted after the kill of %s", i+2, v.what), float64(i+2)/10, allAckedTimeout)
		}
		res := r.waitCounted("every word to be counted exactly", 1, allAckedTimeout)
		t.Logf("%s; restores %v", res, r.checkpointMetric("checkpoint.restores"))
		sc.mustEgret("kill", c.name, r.name, "--now")
		sc.waitGone(t)
	})
}

// groupUpgrade: ackcheck built as v1, a canary of v2 on container 1, a
// rollback, then a roll of every container to v2; every message acked.
func groupUpgrade(t *testing.T, c *cluster, cell cellFunc) {
	cell(rowUpgrade, func(t *testing.T) {
		sc := *c
		sc.t = t
		v1, v2 := taggedAckcheck(t, "v1"), taggedAckcheck(t, "v2")
		// The source must still emit when the last step restarts its
		// container (the health check waits for its tuples): at most 2,000
		// messages a second for at least 3 minutes, where four container
		// restarts on Slurm took 2.5.
		const n = 360000
		flags := []string{"--rate", "2000", "--max-pending", "500", "--timeout", "5s"}
		r := startAckCheckWith(t, &sc, "rolled", v1, n, nil, flags...)
		tasks := r.sinkTasks()
		r.waitAcked("the first 3,000 messages", 3000, recoverTimeout)

		res := r.upgrade(append([]string{sc.bin(t, v2), "--canary", "1", "--wait-healthy", "2m"}, r.defineArgs(flags...)...)...)
		canaried := time.Now()
		if len(res.Steps) != 1 || res.Steps[0].Container != 1 || len(res.Packages) != 2 {
			t.Fatalf("the canary restarted %+v and left %+v, want container 1 only on its own package", res.Steps, res.Packages)
		}
		r.waitTagged("container 1 to record v2 after the canary", tasks[1], "v2", canaried)
		r.waitTagged("container 2 to record v1 after the canary", tasks[2], "v1", canaried)

		back := r.upgrade("--rollback", "--wait-healthy", "2m")
		rolledBack := time.Now()
		if len(back.Steps) != 1 || back.Steps[0].Container != 1 || len(back.Packages) != 1 || back.Steps[0].To != res.Steps[0].From {
			t.Fatalf("the rollback restarted %+v and left %+v, want container 1 back on %s", back.Steps, back.Packages, res.Steps[0].From)
		}
		r.waitTagged("every sink to record v1 after the rollback", append(tasks[1], tasks[2]...), "v1", rolledBack)

		all := r.upgrade(append([]string{sc.bin(t, v2), "--wait-healthy", "2m"}, r.defineArgs(flags...)...)...)
		rolled := time.Now()
		if len(all.Steps) != 2 || len(all.Packages) != 1 {
			t.Fatalf("the roll restarted %+v and left %+v, want containers 1 and 2 on one package", all.Steps, all.Packages)
		}
		r.waitTagged("every sink to record v2 after the roll", append(tasks[1], tasks[2]...), "v2", rolled)
		final := r.waitAcked("every message", n, allAckedTimeout)
		if !final.Complete() {
			t.Fatalf("after the canary, the rollback and the roll: %s; want every message acked and every copy recorded", final)
		}
		sc.mustEgret("kill", c.name, r.name, "--now")
		sc.waitGone(t)
	})
}

// groupBackPressure: the slow bolt of container 2 holds the spout of
// container 1 back; every id of a finite space is acked and received.
func groupBackPressure(t *testing.T, c *cluster, cell cellFunc) {
	cell(rowBackPressure, func(t *testing.T) {
		sc := *c
		sc.t = t
		const ids, rate = 20000, 3000
		start := time.Now()
		s := startSlowBolt(t, &sc, rate, "--acking", "--ids", strconv.Itoa(ids), "--pending", "8000")
		s.waitBackPressure(true, start)
		await(t, fmt.Sprintf("every one of %d ids acked and received", ids), 3*time.Minute, func() (bool, string) {
			src, ok1 := s.source()
			slow, ok2 := s.slow()
			return ok1 && ok2 && src.AckedDistinct == ids && slow.Distinct == ids, fmt.Sprintf("spout %+v, bolt %+v", src, slow)
		})
		if v, _, _ := s.stmgrMetric(1, stmgr.MetricBackPressureThrottled); v <= 0 {
			t.Errorf("back pressure never throttled the spout (%s = %v)", stmgr.MetricBackPressureThrottled, v)
		}
		s.kill()
	})
}

// groupDrainedKill: an ackcheck with messages in flight (a million at
// 2,000 a second: it never ends by itself here) is killed with the default
// drain; every id its spouts emitted was acked when its containers
// stopped.
func groupDrainedKill(t *testing.T, c *cluster, cell cellFunc) {
	cell(rowDrainedKill, func(t *testing.T) {
		sc := *c
		sc.t = t
		r := startAckCheck(t, &sc, "drained", 1000000, "--rate", "2000", "--max-pending", "500")
		r.waitAcked("the first 2,000 messages", 2000, recoverTimeout)
		out := sc.mustEgret("kill", c.name, r.name)
		if !strings.Contains(out, `drained "drained" in`) {
			t.Fatalf("egret kill did not drain:\n%s", out)
		}
		sc.waitGone(t)
		emitted, unacked := r.unacked()
		if len(unacked) > 0 {
			t.Fatalf("%d ids emitted, some not acked when the drained kill stopped the topology: %v", emitted, unacked)
		}
		t.Logf("%d ids emitted, every one acked before the stop", emitted)
	})
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
