package e2e

// The Mesos scheduler end to end (docs/schedulers/mesos.md): the real
// egret CLI submits to the fake Mesos master of schedulers/mesos/mesostest,
// running in the test process; the topology's framework is the real
// `egret mesos-framework` process the CLI starts, and the master's one
// agent runs every task (`egret executor` fetched through the Mesos URI
// fetcher) as real local processes in sandboxes below the cluster's
// EGRET_HOME, so the harness's leftover-process checks cover them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mesoslib "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/mesos"
	"github.com/egret-stream/egret/schedulers/mesos/mesostest"
)

// newMesosCluster returns a "mesos" cluster whose master is a fake in this
// process, with local state and packages.
func newMesosCluster(t *testing.T) (*cluster, *mesostest.Master) {
	t.Helper()
	c := newCluster(t, "mesos")
	m := mesostest.New(t, mesostest.Options{WorkDir: filepath.Join(c.home, "mesos-agent"), HeartbeatInterval: time.Second})
	c.props = append(c.props,
		"egret.mesos.master.uri="+m.URL,
		"egret.statemgr=localfs",
		"egret.statemgr.root.path="+filepath.Join(c.home, "state", c.name),
		"egret.uploader=localfs",
		"egret.uploader.localfs.directory="+filepath.Join(c.home, "repository", "topologies", c.name),
		"egret.package.core.uri=file://"+binary(t, "egret"),
		"egret.mesos.tmanager.cpu=0.5",
		"egret.mesos.tmanager.ram=256MiB",
		"egret.mesos.tmanager.disk=256MiB",
		"egret.mesos.relaunch.backoff.initial=200ms",
		"egret.mesos.relaunch.backoff.max=2s",
	)
	return c, m
}

// mesosTasks returns the running tasks of a topology at the master,
// container → task id.
func mesosTasks(m *mesostest.Master, topology string) map[int]string {
	out := map[int]string{}
	for _, tv := range m.Tasks(mesos.FrameworkName(topology)) {
		if tv.State == mesoslib.TASK_RUNNING {
			n, _ := strconv.Atoi(tv.Labels[mesos.LabelContainer])
			out[n] = tv.ID
		}
	}
	return out
}

// awaitTasks waits until the containers want run, each with a task id
// that cond accepts.
func awaitTasks(t *testing.T, m *mesostest.Master, topology, what string, want int, cond func(map[int]string) bool) map[int]string {
	t.Helper()
	var got map[int]string
	await(t, what, recoverTimeout, func() (bool, string) {
		got = mesosTasks(m, topology)
		return len(got) == want && (cond == nil || cond(got)), fmt.Sprintf("running tasks %v", got)
	})
	return got
}

// frameworkPID is the pid of the topology's framework process.
func frameworkPID(t *testing.T, c *cluster, topology string) int {
	t.Helper()
	var ep struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(c.workDir(topology), "scheduler.json"))
	if err == nil {
		err = json.Unmarshal(b, &ep)
	}
	if err != nil || ep.PID <= 0 {
		t.Fatalf("read the framework's endpoint: %v", err)
	}
	return ep.PID
}

// TestMesosWordCount submits word count to the fake Mesos master and runs
// it through a task crash, a framework crash and failover (with a restart
// of one container), a scale-up with update, and kill.
func TestMesosWordCount(t *testing.T) {
	c, m := newMesosCluster(t)
	w := startWordCount(t, c, 2)
	fws := m.Frameworks(mesos.FrameworkName("wordcount"))
	if len(fws) != 1 || !fws[0].Connected || !fws[0].Info.GetCheckpoint() || fws[0].Info.GetRole() != "*" || fws[0].Info.GetFailoverTimeout() != (168*time.Hour).Seconds() {
		t.Fatalf("the master's view of the framework: %+v", fws)
	}
	fwID := fws[0].ID
	before := awaitTasks(t, m, "wordcount", "containers 0..2 to run", 3, nil)
	for _, tv := range m.Tasks(mesos.FrameworkName("wordcount")) {
		for _, f := range []string{"topology.tar.gz", "egret"} {
			if _, err := os.Stat(filepath.Join(tv.Sandbox, f)); err != nil {
				t.Errorf("task %s: the fetcher did not put %s in the sandbox: %v", tv.ID, f, err)
			}
		}
	}

	t.Log("a task crashes: the framework relaunches its container")
	if !m.KillTask(before[1]) {
		t.Fatalf("could not kill task %s", before[1])
	}
	after := awaitTasks(t, m, "wordcount", "container 1 to run a new task", 3, func(got map[int]string) bool { return got[1] != before[1] })
	if after[0] != before[0] || after[2] != before[2] {
		t.Errorf("a crash of container 1 replaced other containers: %v -> %v", before, after)
	}
	w.waitCountsGrow("every count task to count after the relaunch", w.countTasks())

	t.Log("the framework crashes: the tasks keep running; the next command fails it over")
	pid := frameworkPID(t, c, "wordcount")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(t, "the framework process to die", recoverTimeout, func() (bool, string) { return syscall.Kill(pid, 0) != nil, "alive" })
	w.waitCountsGrow("counts to grow while the framework is down", w.countTasks())
	c.mustEgret("restart", c.name, "wordcount", "2")
	restarted := awaitTasks(t, m, "wordcount", "container 2 to be restarted", 3, func(got map[int]string) bool { return got[2] != after[2] })
	if restarted[0] != after[0] || restarted[1] != after[1] {
		t.Errorf("the failover or restart of container 2 replaced other containers: %v -> %v", after, restarted)
	}
	fws = m.Frameworks(mesos.FrameworkName("wordcount"))
	if len(fws) != 1 || fws[0].ID != fwID || fws[0].Subscriptions != 2 || !fws[0].Connected {
		t.Errorf("after the failover the master has %+v, want framework %s subscribed twice and connected", fws, fwID)
	}
	if newPID := frameworkPID(t, c, "wordcount"); newPID == pid {
		t.Errorf("the framework process was not restarted (pid %d)", pid)
	}
	w.waitCountsGrow("every count task to count after the failover", w.countTasks())

	t.Log("update to 3 containers")
	c.mustEgret("update", c.name, "wordcount", "--container-number", "3")
	grown := awaitTasks(t, m, "wordcount", "container 3 to run", 4, nil)
	pp, _, err := w.store.PackingPlan(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	// A container keeps its task unless the new plan resized it (a Mesos
	// task's resources are fixed); container 0 is not in the plan.
	if grown[0] != restarted[0] {
		t.Errorf("update replaced container 0: %s -> %s", restarted[0], grown[0])
	}
	for _, ct := range pp.Containers {
		if old, ok := w.plan.Container(ct.ID); ok && old.Required == ct.Required && grown[ct.ID] != restarted[ct.ID] {
			t.Errorf("update replaced container %d, whose resources did not change: %s -> %s", ct.ID, restarted[ct.ID], grown[ct.ID])
		}
	}
	w.plan, w.containers = pp, 3
	w.waitCountsGrow("every count task, on 3 containers, to count", w.countTasks())

	t.Log("kill")
	c.mustEgret("kill", c.name, "wordcount")
	if n := len(mesosTasks(m, "wordcount")); n != 0 {
		t.Errorf("%d tasks still run after kill", n)
	}
	if !m.Removed(fwID) {
		t.Errorf("framework %s was not torn down", fwID)
	}
	c.waitGone(t)
	if _, err := c.store().Topology(context.Background(), "wordcount"); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("state left after kill: %v", err)
	}
	if _, err := os.Stat(c.workDir("wordcount")); !os.IsNotExist(err) {
		t.Errorf("the framework's working directory is left after kill: %v", err)
	}
	// A second kill: the mesos scheduler cannot tell whether it runs a
	// job, so it is asked to stop any container left, and the kill says
	// that there was no topology (exit 1; 0 with --ignore-not-found).
	if _, stderr, code := c.egret("kill", c.name, "wordcount"); code != 1 || !strings.Contains(stderr, `no topology "wordcount"`) {
		t.Errorf("second kill: exit %d, %q", code, stderr)
	}
	c.mustEgret("kill", c.name, "wordcount", "--ignore-not-found")
}

// TestMesosAtLeastOnceFailover: with at-least-once delivery, a framework
// crash followed by a task crash while no framework runs loses no message:
// the next command starts the framework again, which fails over to its
// tasks, reconciles and relaunches the crashed container, and every
// message is acked and reaches the sink.
func TestMesosAtLeastOnceFailover(t *testing.T) {
	c, m := newMesosCluster(t)
	const n = 20000
	r := startAckCheck(t, c, "ackcheck", n, "--rate", "2000")
	r.waitAcked("a fifth of the messages to be acked", n/5, time.Minute)

	pid := frameworkPID(t, c, "ackcheck")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(t, "the framework process to die", recoverTimeout, func() (bool, string) { return syscall.Kill(pid, 0) != nil, "alive" })
	before := mesosTasks(m, "ackcheck")
	if !m.KillTask(before[1]) {
		t.Fatalf("could not kill task %s", before[1])
	}
	if atKill := r.check(); atKill.Acked >= n {
		t.Fatal("every message was acked before the faults: they came too late to test anything")
	}
	c.mustEgret("restart", c.name, "ackcheck", "0") // starts the framework again
	awaitTasks(t, m, "ackcheck", "containers 0 and 1 to run new tasks", 3, func(got map[int]string) bool {
		return got[0] != before[0] && got[1] != before[1] && got[2] == before[2]
	})
	res := r.waitAcked("every message to be acked after the faults", n, allAckedTimeout)
	t.Logf("%s", res)
	if !res.Complete() {
		t.Errorf("messages lost after the framework and task crashes: %s", res)
	}
	r.kill()
}
