package hadoop

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/egret-stream/egret/internal/clitest"
	"github.com/egret-stream/egret/internal/hdfsx"
	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/yarn"
)

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	clitest.WaitFor(t, what, timeout, time.Second, cond)
}

// waitRise waits until a count read by read rises between two reads made
// during the wait (a value read before, from a process since replaced,
// could make the rise impossible); a drop (a replaced process counting
// from zero) becomes the new baseline, as does the first readable value.
func waitRise(t *testing.T, what string, timeout time.Duration, read func() float64) {
	t.Helper()
	base := -1.0
	waitFor(t, what, timeout, func() bool {
		v := read()
		if v >= 0 && (base < 0 || v < base) {
			base = v
			return false
		}
		return base >= 0 && v > base
	})
}

// executorPid finds the pid of the executor of container c among the
// cluster's processes.
func executorPid(t *testing.T, c int) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) < 3 || filepath.Base(args[0]) != "egret" || args[1] != "executor" {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if !strings.HasPrefix(cwd, cluster.Dir) {
			continue
		}
		for i := range args[:len(args)-1] {
			if args[i] == "--container" && args[i+1] == fmt.Sprint(c) {
				var pid int
				fmt.Sscan(e.Name(), &pid)
				return pid
			}
		}
	}
	return 0
}

// TestWordCountOnYARN runs `egret submit yarn ./examples/wordcount` on the
// mini-cluster: counts rise, a kill -9 of an executor is repaired by
// YARN, an update to 3 containers flexes the service with data flowing,
// and kill removes the application, the HDFS files and the state.
func TestWordCountOnYARN(t *testing.T) {
	c := needCluster(t)
	zk := zktest.Start(t)
	egret := plugintest.Build(t, "github.com/egret-stream/egret/cmd/egret")
	cl := dfs(t)
	core := "/egret/core/" + randomName("egret") + "/egret"
	if err := cl.MkdirAll(filepath.Dir(core), 0o755); err != nil {
		t.Fatal(err)
	}
	putFile(t, cl, egret, core)
	defer cl.RemoveAll(filepath.Dir(core))
	x := &clitest.CLI{T: t, Egret: egret, Home: t.TempDir(), Timeout: 8 * time.Minute, Props: []string{
		"egret.yarn.resourcemanager.address=" + c.RM,
		"egret.uploader.hdfs.namenode=" + c.NameNode,
		"egret.uploader.hdfs.replication=1",
		"egret.statemgr.connection.string=" + zk,
		"egret.package.core.uri=" + hdfsx.Location{NameNode: c.NameNode, Path: core}.String(),
		"egret.yarn.tmanager.memory=256MiB",
		"egret.packing.default.instance.ram=128MiB",
		"egret.packing.padding.ram=128MiB",
		"egret.metrics.export.interval=1s",
		"egret.executor.restart.backoff.initial=200ms",
	}}
	out := x.Must("config", "validate", "yarn", "--check-connectivity")
	for _, want := range []string{"state manager zookeeper: created", "uploader hdfs: reachable", "scheduler yarn: reachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("config validate --check-connectivity printed no %q:\n%s", want, out)
		}
	}
	bad := x.With("egret.yarn.queue=nosuch")
	if out, errOut, code := bad.Run("config", "validate", "yarn", "--check-connectivity"); code == 0 || !strings.Contains(errOut, `queue "nosuch" does not exist`) {
		t.Errorf("--check-connectivity with an unknown queue: exit %d\n%s%s", code, out, errOut)
	}

	out = x.Must("submit", "yarn", "./examples/wordcount", "--wait", "5m", "--", "--containers", "2", "--rate", "200")
	if !strings.Contains(out, "is running") {
		t.Fatalf("submit did not report a running topology:\n%s", out)
	}
	killed := false
	defer func() {
		if !killed {
			x.Run("kill", "yarn", "wordcount")
		}
	}()
	ctx := context.Background()
	containers, err := observe(ctx, "wordcount")
	if err != nil || len(containers) != 3 {
		t.Fatalf("YARN runs containers %v (%v), want 0, 1 and 2", containers, err)
	}
	executed := func() float64 { return x.Executed("yarn", "wordcount") }
	var last float64
	waitFor(t, "word counts to rise", 3*time.Minute, func() bool { last = executed(); return last > 0 })
	t.Logf("executed %.0f tuples", last)

	// kill -9 of container 1's executor: its YARN container exits and the
	// service's application master starts a new one.
	pid := executorPid(t, 1)
	if pid == 0 {
		t.Fatal("no executor process of container 1 found")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	old := containers[1]
	waitFor(t, "YARN to replace container 1", 3*time.Minute, func() bool {
		now, err := observe(ctx, "wordcount")
		return err == nil && now[1] != "" && now[1] != old
	})
	waitRise(t, "counts to rise after the restart", 3*time.Minute, executed)

	// update to 3 containers: YARN flexes the worker component.
	x.Must("update", "yarn", "wordcount", "--container-number", "3")
	waitFor(t, "a third worker container", 3*time.Minute, func() bool {
		now, err := observe(ctx, "wordcount")
		return err == nil && len(now) == 4
	})
	waitRise(t, "counts to rise on 3 containers", 3*time.Minute, executed)

	links := x.Must("list", "yarn")
	if !strings.Contains(links, "wordcount") {
		t.Errorf("list does not show wordcount:\n%s", links)
	}

	// The package's directory (one per topology) and the service's own.
	hdfsDirs := []string{"/egret/topologies/yarn/" + c.User + "/wordcount", "/user/" + c.User + "/.yarn/services/" + yarn.ServiceName("wordcount")}
	for _, dir := range hdfsDirs {
		if _, err := cl.Stat(dir); err != nil {
			t.Errorf("before kill, %s: %v", dir, err)
		}
	}
	x.Must("kill", "yarn", "wordcount")
	killed = true
	if now, err := observe(ctx, "wordcount"); err != nil || len(now) != 0 {
		t.Errorf("after kill YARN runs %v (%v)", now, err)
	}
	var svc yarn.Service
	if err := cluster.GetJSON(ctx, "/app/v1/services/"+yarn.ServiceName("wordcount"), &svc); err == nil {
		t.Errorf("the service survived kill (state %s)", svc.State)
	}
	for _, dir := range hdfsDirs {
		if _, err := cl.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("kill left %s in HDFS (stat: %v)", dir, err)
		}
	}
	if out, _, _ := x.Run("list", "yarn"); strings.Contains(out, "wordcount") {
		t.Errorf("the state survived kill:\n%s", out)
	}
}

// putFile copies a local file into HDFS.
func putFile(t *testing.T, cl *hdfs.Client, local, remote string) {
	t.Helper()
	if err := hdfsx.PutFile(context.Background(), cl, local, remote, time.Minute); err != nil {
		t.Fatalf("put %s in HDFS: %v", local, err)
	}
}
