package e2e

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/procinfo"
	"github.com/egret-stream/egret/internal/zktest"
)

// longWordcount are the arguments of a wordcount that emits for minutes.
var longWordcount = []string{"--containers", "1", "--sentences", "10000000", "--rate", "500"}

// concurrentSubmits submits one topology name n times at once: exactly one
// submit wins; the others fail with exit 1 and one line, having uploaded
// and deleted nothing; the winner runs and processes data.
func concurrentSubmits(t *testing.T, c *cluster) {
	const n = 4
	type result struct {
		stdout, stderr string
		code           int
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"submit", "--wait", "2m", c.name, binary(t, "wordcount"), "--"}, longWordcount...)
			r := &results[i]
			r.stdout, r.stderr, r.code = c.egret(args...)
		}()
	}
	wg.Wait()
	winners := 0
	for i, r := range results {
		if r.code == 0 {
			winners++
			continue
		}
		oneLineError(t, "submit "+strconv.Itoa(i), r.stderr, r.code, 1, `topology "wordcount" is already running`)
	}
	if winners != 1 {
		t.Fatalf("%d of %d concurrent submits succeeded, want exactly one: %+v", winners, n, results)
	}
	es, err := c.store().ExecutionState(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(es.GetPackageUri())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(u.Path); err != nil {
		t.Errorf("the winner's package %s is gone: %v", u.Path, err)
	}
	waitFor(t, "the winner to process data", 60*time.Second, func() bool {
		return c.metric("wordcount", "count", "instance.executed") > 0
	})
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}

func TestConcurrentSubmitsLocal(t *testing.T) {
	concurrentSubmits(t, newCluster(t, "local"))
}

func TestConcurrentSubmitsLocalZooKeeper(t *testing.T) {
	addr := zktest.Start(t)
	c := newCluster(t, "localzk", "egret.statemgr.connection.string="+addr, "egret.statemgr.session.timeout=5s")
	c.zk = addr
	concurrentSubmits(t, c)
}

// schedulerPID reads the pid of a topology's local scheduler service.
func (c *cluster) schedulerPID(t *testing.T, topology string) int {
	t.Helper()
	var ep struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(c.workDir(topology), "scheduler.json"))
	if err == nil {
		err = json.Unmarshal(b, &ep)
	}
	if err != nil || ep.PID <= 0 {
		t.Fatalf("read scheduler.json: %v (%s)", err, b)
	}
	return ep.PID
}

// TestSchedulerServiceKilled: after kill -9 of the local scheduler
// service the topology keeps processing data; list says the service is
// dead; update is refused before it changes anything; restart brings the
// service back; kill removes everything.
func TestSchedulerServiceKilled(t *testing.T) {
	c := newCluster(t, "local")
	c.mustEgret(append([]string{"submit", c.name, binary(t, "wordcount"), "--"}, longWordcount...)...)
	waitFor(t, "the topology to process data", 60*time.Second, func() bool {
		return c.metric("wordcount", "count", "instance.executed") > 0
	})
	executor := c.pids("wordcount", 1)["executor"]
	pid := c.schedulerPID(t, "wordcount")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the service to die", 30*time.Second, func() bool { return !procinfo.Alive(pid, "") })

	awaitRise(t, "data to flow without the service", 60*time.Second, func() float64 { return c.metric("wordcount", "count", "instance.executed") })
	if !procinfo.Alive(executor, "") {
		t.Errorf("the executor of container 1 (pid %d) died with the service", executor)
	}
	list := c.mustEgret("list", c.name)
	if !strings.Contains(list, "running") || !strings.Contains(list, "scheduler service of \"wordcount\" is not running") {
		t.Errorf("list does not tell the service is dead:\n%s", list)
	}
	if out := c.mustEgret("metrics", c.name, "wordcount"); !strings.Contains(out, "count") {
		t.Errorf("metrics of the running topology:\n%s", out)
	}

	planBefore, versionBefore, err := c.store().PackingPlan(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := c.egret("update", c.name, "wordcount", "--component-parallelism", "count:3")
	oneLineError(t, "update without a scheduler service", stderr, code, 1, "cannot update", "not running", "egret restart")
	if pp, version, err := c.store().PackingPlan(context.Background(), "wordcount"); err != nil || version != versionBefore || !reflect.DeepEqual(pp, planBefore) {
		t.Errorf("the refused update changed the packing plan: %v (version %d, was %d; %v)", pp, version, versionBefore, err)
	}

	c.mustEgret("restart", c.name, "wordcount")
	if p := c.schedulerPID(t, "wordcount"); p == pid || !procinfo.Alive(p, "") {
		t.Fatalf("restart did not start a new service (pid %d, the dead one %d)", p, pid)
	}
	waitFor(t, "list to show a healthy topology", 60*time.Second, func() bool {
		out := c.mustEgret("list", c.name)
		return strings.Contains(out, "running") && !strings.Contains(out, "not running")
	})
	awaitRise(t, "data to flow after the restart", 60*time.Second, func() float64 { return c.metric("wordcount", "count", "instance.executed") })
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}

// TestKillWithoutSchedulerService: kill stops the containers of a
// topology whose service is dead.
func TestKillWithoutSchedulerService(t *testing.T) {
	c := newCluster(t, "local")
	c.mustEgret(append([]string{"submit", c.name, binary(t, "wordcount"), "--"}, longWordcount...)...)
	pid := c.schedulerPID(t, "wordcount")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the service to die", 30*time.Second, func() bool { return !procinfo.Alive(pid, "") })
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
	if names, err := c.store().Names(context.Background()); err != nil || len(names) > 0 {
		t.Errorf("state after kill: %v %v", names, err)
	}
}

// TestCorruptPackingPlanKill: a truncated packing plan node does not
// wedge the cluster: list marks the topology, kill removes it and the
// name can be submitted again.
func TestCorruptPackingPlanKill(t *testing.T) {
	c := newCluster(t, "local")
	c.mustEgret(append([]string{"submit", c.name, binary(t, "wordcount"), "--"}, longWordcount...)...)
	node := filepath.Join(c.home, "state", c.name, "tree", "packingplans", "wordcount", "@node")
	b, err := os.ReadFile(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(node, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	list := c.mustEgret("list", c.name)
	if !strings.Contains(list, "corrupt") || !strings.Contains(list, "/packingplans/wordcount") {
		t.Errorf("list does not mark the corrupt topology:\n%s", list)
	}
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
	c.mustEgret(append([]string{"submit", c.name, binary(t, "wordcount"), "--"}, longWordcount...)...)
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}

// TestUpdateRollbackLocal: an update whose new container cannot start
// (its directory is blocked by a file) fails after the scheduler applied
// it: the previous packing plan is restored, the scheduler stops the new
// container again, the topology is active again and processes data.
func TestUpdateRollbackLocal(t *testing.T) {
	c := newCluster(t, "local")
	c.mustEgret(append([]string{"submit", c.name, binary(t, "wordcount"), "--"}, longWordcount...)...)
	waitFor(t, "the topology to process data", 60*time.Second, func() bool {
		return c.metric("wordcount", "count", "instance.executed") > 0
	})
	planBefore, _, err := c.store().PackingPlan(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.workDir("wordcount"), "container-2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := c.egret("update", c.name, "wordcount", "--container-number", "2")
	oneLineError(t, "update whose new container cannot start", stderr, code, 1,
		"rolled back", "restore the previous packing plan (containers 1..1)", "reactivate the topology")
	if pp, _, err := c.store().PackingPlan(context.Background(), "wordcount"); err != nil || !reflect.DeepEqual(pp, planBefore) {
		t.Errorf("packing plan after the rollback: %v (%v), want %v", pp, err, planBefore)
	}
	if out := c.mustEgret("list", c.name); !strings.Contains(out, "running") {
		t.Errorf("list after the rollback:\n%s", out)
	}
	awaitRise(t, "data to flow after the rollback", 60*time.Second, func() float64 { return c.metric("wordcount", "count", "instance.executed") })
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}
