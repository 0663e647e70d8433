package e2e

// The columns of the backend suite (backends_test.go): how each backend's
// cluster is made for it, what its resource manager still holds of a
// killed topology, and what it cannot run.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mesoslib "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/egret-stream/egret/internal/hdfsx"
	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/schedulers/mesos"
	"github.com/egret-stream/egret/schedulers/nomad/nomadtest"
	"github.com/egret-stream/egret/schedulers/slurm"
	"github.com/egret-stream/egret/schedulers/slurm/slurmtest"
	"github.com/egret-stream/egret/schedulers/yarn"
	"github.com/egret-stream/egret/schedulers/yarn/yarntest"
)

func init() {
	registerBackend(backend{name: "local", start: func(t *testing.T) *cluster { return newCluster(t, "local") }})
	registerBackend(backend{name: "localzk", start: startLocalZK})
	registerBackend(backend{name: "nomad", start: startNomadBackend})
	registerBackend(backend{name: "yarn", start: startYARNBackend})
	registerBackend(backend{name: "slurm", start: startSlurmBackend})
	registerBackend(backend{name: "mesos", start: startMesosBackend})
	registerBackend(backend{name: "aurora", start: startAuroraBackend})
}

// suiteCheckpointRoot is the checkpoint storage of a cluster whose
// containers do not share the CLI's EGRET_HOME: a directory every
// container of this machine reaches.
func suiteCheckpointRoot(c *cluster) string {
	return "egret.checkpoint.localfs.root=" + filepath.Join(c.home, "checkpoints", c.name)
}

func startLocalZK(t *testing.T) *cluster {
	addr := zktest.Start(t)
	c := newCluster(t, "localzk", "egret.statemgr.connection.string="+addr, "egret.statemgr.session.timeout=5s")
	c.zk = addr
	return c
}

// startNomadBackend: a real Nomad dev agent (nomadtest.StartAgent), the
// packages on `egret serve-packages`, the state in local files.
func startNomadBackend(t *testing.T) *cluster {
	agent := nomadtest.StartAgent(t)
	c, pkgs := nomadCluster(t, agent)
	c.props = append(c.props, suiteCheckpointRoot(c))
	c.roots = []string{agent.DataDir}
	c.leftovers = func(t *testing.T, topology string) []string {
		var left []string
		var stubs []struct{ ID, Status string }
		if err := agent.Get("/v1/jobs", &stubs); err != nil {
			return []string{err.Error()}
		}
		for _, s := range stubs {
			if strings.Contains(s.ID, topology) {
				left = append(left, fmt.Sprintf("Nomad job %s (%s)", s.ID, s.Status))
			}
		}
		return append(left, dirEntries(pkgs, "package")...)
	}
	return c
}

// startMesosBackend: the Mesos master fake of mesostest, whose agent runs
// the tasks as local processes.
func startMesosBackend(t *testing.T) *cluster {
	c, m := newMesosCluster(t)
	c.props = append(c.props, suiteCheckpointRoot(c))
	c.leftovers = func(t *testing.T, topology string) []string {
		var left []string
		for _, tv := range m.Tasks(mesos.FrameworkName(topology)) {
			switch tv.State {
			case mesoslib.TASK_FINISHED, mesoslib.TASK_FAILED, mesoslib.TASK_KILLED, mesoslib.TASK_LOST, mesoslib.TASK_ERROR, mesoslib.TASK_DROPPED, mesoslib.TASK_GONE:
			default:
				left = append(left, fmt.Sprintf("Mesos task %s (%s)", tv.ID, tv.State))
			}
		}
		for _, fw := range m.Frameworks(mesos.FrameworkName(topology)) {
			if !m.Removed(fw.ID) {
				left = append(left, "Mesos framework "+fw.ID)
			}
		}
		return left
	}
	return c
}

// startAuroraBackend: the Aurora scheduler fake of auroratest, whose agent
// runs the tasks Thermos-like as local processes.
func startAuroraBackend(t *testing.T) *cluster {
	a := newAuroraCluster(t)
	c := a.cluster
	c.props = append(c.props, suiteCheckpointRoot(c))
	c.leftovers = func(t *testing.T, topology string) []string {
		var left []string
		for _, task := range a.fake.Tasks("www", "prod", topology) {
			if task.Pid > 0 {
				left = append(left, fmt.Sprintf("Aurora task %s (%s, pid %d)", task.ID, task.Status, task.Pid))
			}
		}
		return left
	}
	return c
}

// startSlurmBackend: a real one-node Slurm (slurmtest), the state in a
// real ZooKeeper.
func startSlurmBackend(t *testing.T) *cluster {
	if err := slurmtest.Available(); err != nil {
		requireOrSkip(t, slurmtest.RequireEnv, err)
	}
	dir, err := os.MkdirTemp("", "egret-slurm-") // reachable by munged (not t.TempDir)
	if err != nil {
		t.Fatal(err)
	}
	// The node advertises room for every group's containers (3 cpus
	// each, the topology manager's included) and a replacement job.
	sl, err := slurmtest.Start(context.Background(), slurmtest.Options{Dir: dir, CPUs: 32, Logf: t.Logf})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start Slurm: %v", err)
	}
	t.Cleanup(func() {
		sl.Stop()
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	zk := zktest.Start(t)
	c := newCluster(t, "slurm",
		"egret.statemgr.connection.string="+zk,
		"egret.slurm.egret.binary="+binary(t, "egret"),
		"egret.packing.default.instance.cpu=0.5",
		"egret.packing.padding.cpu=0.5",
		"egret.packing.default.instance.ram=128MiB",
		"egret.packing.padding.ram=128MiB",
	)
	c.zk = zk
	work := filepath.Join(c.home, "slurm-work")
	c.props = append(c.props, "egret.slurm.working.directory="+work, suiteCheckpointRoot(c))
	c.env = append(c.env, "SLURM_CONF="+sl.Conf)
	c.leftovers = func(t *testing.T, topology string) []string {
		ids, err := sl.JobsNamed(context.Background(), slurm.JobName(topology))
		if err != nil {
			return []string{err.Error()}
		}
		var left []string
		for _, id := range ids {
			left = append(left, "Slurm job "+id)
		}
		return append(left, dirEntries(work, "working directory")...)
	}
	return c
}

// startYARNBackend: the Hadoop mini-cluster (YARN and HDFS, yarntest),
// the packages and the egret binary in HDFS, the state in a real
// ZooKeeper.
func startYARNBackend(t *testing.T) *cluster {
	if err := yarntest.Available(); err != nil {
		requireOrSkip(t, yarntest.RequireEnv, err)
	}
	dir, err := os.MkdirTemp("", "egret-yarn-")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	y, err := yarntest.Start(context.Background(), yarntest.Options{Dir: dir, Logf: t.Logf})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start the Hadoop mini-cluster: %v", err)
	}
	t.Logf("the Hadoop mini-cluster started in %s", time.Since(began).Round(time.Second))
	t.Cleanup(func() {
		y.Stop()
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	fs, err := hdfsx.Dial(context.Background(), []string{y.NameNode}, y.User, 30*time.Second)
	if err != nil {
		t.Fatalf("connect to HDFS: %v", err)
	}
	t.Cleanup(func() { fs.Close() })
	core := "/egret/core/egret"
	if err := fs.MkdirAll(filepath.Dir(core), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hdfsx.PutFile(context.Background(), fs, binary(t, "egret"), core, time.Minute); err != nil {
		t.Fatalf("put egret in HDFS: %v", err)
	}
	zk := zktest.Start(t)
	c := newCluster(t, "yarn",
		"egret.yarn.resourcemanager.address="+y.RM,
		"egret.uploader.hdfs.namenode="+y.NameNode,
		"egret.uploader.hdfs.replication=1",
		"egret.statemgr.connection.string="+zk,
		"egret.package.core.uri="+hdfsx.Location{NameNode: y.NameNode, Path: core}.String(),
		"egret.yarn.tmanager.memory=256MiB",
		"egret.packing.default.instance.ram=128MiB",
		"egret.packing.padding.ram=128MiB",
	)
	c.zk = zk
	c.props = append(c.props, suiteCheckpointRoot(c))
	c.roots = []string{y.Dir}
	c.leftovers = func(t *testing.T, topology string) []string {
		var left []string
		var svc yarn.Service
		switch err := y.GetJSON(context.Background(), "/app/v1/services/"+yarn.ServiceName(topology), &svc); {
		case err == nil:
			left = append(left, fmt.Sprintf("YARN service %s (%s)", yarn.ServiceName(topology), svc.State))
		case !strings.Contains(err.Error(), "404"):
			left = append(left, err.Error())
		}
		for _, d := range []string{"/egret/topologies/yarn/" + y.User + "/" + topology, "/user/" + y.User + "/.yarn/services/" + yarn.ServiceName(topology)} {
			if _, err := fs.Stat(d); err == nil {
				left = append(left, "HDFS "+d)
			}
		}
		return left
	}
	return c
}

// requireOrSkip fails t when env requires the missing system (make test
// sets it), and skips it otherwise.
func requireOrSkip(t *testing.T, env string, err error) {
	t.Helper()
	if os.Getenv(env) == "1" {
		t.Fatalf("%v (%s=1 requires it)", err, env)
	}
	t.Skipf("%v; set %s=1 to require it", err, env)
}

// dirEntries lists what dir holds, as leftovers named what.
func dirEntries(dir, what string) []string {
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, what+" "+filepath.Join(dir, e.Name()))
	}
	return out
}
