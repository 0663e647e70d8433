package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

// TestContainerModeProcessPerContainer runs ackcheck with
// topology.container.mode process-per-container on 2 containers. Each
// container runs one topology process ("container": the stream manager
// and the container's instances, connected in memory) beside its metrics
// manager and shell. A kill -9 of container 1's process while messages
// flow restarts it, and a rescale that adds tasks to both containers
// restarts each container process with its new tasks; through both, every
// message is acked and every copy reaches the sink (duplicates allowed:
// the in-flight trees of a restarted container are replayed).
func TestContainerModeProcessPerContainer(t *testing.T) {
	c := newCluster(t, "local", "egret.update.drain.timeout=60s")
	const n = 40000
	r := startAckCheck(t, c, "ppc", n, "--rate", "6000", "--timeout", "5s", "--set", "topology.container.mode=process-per-container")
	for ct := 1; ct <= 2; ct++ {
		if names := procNames(r.procs(ct)); strings.Join(names, " ") != "container executor metricsmgr shell" {
			t.Fatalf("container %d runs %v, want the executor, one container process, the metrics manager and the shell", ct, names)
		}
	}
	r.waitAcked("a fifth of the messages to be acked", n/5, time.Minute)

	old := r.killProcs(1, []string{"container"})
	if atKill := r.check(); atKill.Acked >= n {
		t.Fatalf("every message was acked before the kill took effect")
	}
	waitDead(t, "the killed container process to exit", old)
	r.waitRestarted(1, old)
	r.waitAcked("half of the messages to be acked after the kill", n/2, allAckedTimeout)

	relays := len(r.tasksOf(1, ackcheck.Relay)) + len(r.tasksOf(2, ackcheck.Relay))
	before := r.allProcs()
	out := c.mustEgret("update", c.name, "ppc", "--component-parallelism", ackcheck.Relay+":"+strconv.Itoa(2*relays))
	if !strings.Contains(out, "deactivating") {
		t.Errorf("a rescale that adds tasks to running containers did not pause the topology:\n%s", out)
	}
	// The executors restart the containers' processes as the new plan
	// reaches them: on a busy machine after update has returned.
	await(t, "every container's process to be restarted with its new tasks", recoverTimeout, func() (bool, string) {
		after := r.allProcs()
		var same []string
		for ct := 1; ct <= 2; ct++ {
			key := strconv.Itoa(ct) + "/container"
			if after[key] == before[key] {
				same = append(same, key)
			}
		}
		return len(same) == 0, fmt.Sprintf("not restarted yet: %v", same)
	})
	pp, _, err := r.store.PackingPlan(context.Background(), r.name)
	if err != nil {
		t.Fatalf("read the packing plan: %v", err)
	}
	r.plan = pp
	if got := len(r.tasksOf(1, ackcheck.Relay)) + len(r.tasksOf(2, ackcheck.Relay)); got != 2*relays {
		t.Fatalf("%d %s tasks after the update, want %d", got, ackcheck.Relay, 2*relays)
	}

	res := r.waitAcked("every message to be acked", n, allAckedTimeout)
	t.Logf("%s", res)
	if !res.Complete() {
		t.Fatalf("messages lost in process-per-container mode: %s", res)
	}
	r.kill()
}

func procNames(ps map[string]proc) []string {
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
