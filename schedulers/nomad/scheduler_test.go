package nomad

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/nomad/nomadtest"
)

var ctx = context.Background()

func TestScheduleKill(t *testing.T) {
	f := newFake(t)
	cfg := schedConfig(f.URL)
	if err := newSched(t, cfg).Schedule(ctx, wordcount(2)); err != nil {
		t.Fatal(err)
	}
	if got := observe(f, "wordcount"); len(got) != 3 {
		t.Fatalf("running containers %v, want 0..2", got)
	}
	// The register asked Nomad to create the job only if it is new.
	if r := requests(f, "PUT", "/v1/jobs"); len(r) != 1 || !strings.Contains(string(r[0].Body), `"EnforceIndex":true`) {
		t.Errorf("register requests %d, body %s", len(r), r[0].Body)
	}

	if err := newSched(t, cfg).Kill(ctx, "wordcount"); err != nil {
		t.Fatal(err)
	}
	del := requests(f, "DELETE", "/v1/job/")
	if len(del) != 1 || del[0].Path != "/v1/job/wordcount-7f3a9c" || del[0].Query.Get("purge") != "true" {
		t.Fatalf("deregister requests %+v, want one DELETE /v1/job/wordcount-7f3a9c?purge=true", del)
	}
	if len(f.Jobs()) != 0 || len(observe(f, "wordcount")) != 0 {
		t.Fatalf("after kill: jobs %d, containers %v", len(f.Jobs()), observe(f, "wordcount"))
	}
	for _, a := range f.Allocations() {
		if a.DesiredStatus != api.AllocDesiredStatusStop {
			t.Errorf("allocation %s of %s is %s after kill", a.ID, a.TaskGroup, a.DesiredStatus)
		}
	}
	// Idempotent: nothing left to deregister.
	if err := newSched(t, cfg).Kill(ctx, "wordcount"); err != nil {
		t.Fatal(err)
	}
	if n := len(requests(f, "DELETE", "/v1/job/")); n != 1 {
		t.Errorf("second kill sent %d more deregisters", n-1)
	}
}

// TestKillLeavesOtherJobs: only egret's jobs of that topology go.
func TestKillLeavesOtherJobs(t *testing.T) {
	f := newFake(t)
	cfg := schedConfig(f.URL)
	other := wordcount(1)
	other.Topology, other.TopologyID = "wordcount2", "wordcount2-1"
	for _, j := range []spi.Job{wordcount(1), other} {
		if err := newSched(t, cfg).Schedule(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// A job that is not egret's, with the topology's name and prefix.
	c, err := api.NewClient(&api.Config{Address: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	foreign := api.NewServiceJob("wordcount-web", "wordcount", "global", 50)
	foreign.Datacenters = []string{"dc1"}
	tg := api.NewTaskGroup("web", 1).AddTask(api.NewTask("web", "docker").SetConfig("image", "nginx"))
	foreign.AddTaskGroup(tg)
	if _, _, err := c.Jobs().Register(foreign, nil); err != nil {
		t.Fatal(err)
	}
	if err := newSched(t, cfg).Kill(ctx, "wordcount"); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, j := range f.Jobs() {
		left = append(left, deref(j.ID))
	}
	if strings.Join(left, ",") != "wordcount-web,wordcount2-1" {
		t.Errorf("jobs left after kill: %v", left)
	}
}

func TestRestart(t *testing.T) {
	f := newFake(t)
	cfg := schedConfig(f.URL)
	if err := newSched(t, cfg).Schedule(ctx, wordcount(2)); err != nil {
		t.Fatal(err)
	}
	before := observe(f, "wordcount")
	if err := newSched(t, cfg).Restart(ctx, "wordcount", 2); err != nil {
		t.Fatal(err)
	}
	after := observe(f, "wordcount")
	if after[2] == before[2] || after[0] != before[0] || after[1] != before[1] {
		t.Fatalf("restart of container 2: before %v, after %v", before, after)
	}
	if strings.Split(after[2], "/")[0] != strings.Split(before[2], "/")[0] {
		t.Errorf("restart replaced the allocation (%s → %s); Nomad restarts in place", before[2], after[2])
	}
	r := requests(f, "PUT", "/v1/client/allocation/")
	if len(r) != 1 || !strings.HasSuffix(r[0].Path, "/restart") || !strings.Contains(string(r[0].Body), `"TaskName":"executor"`) {
		t.Errorf("restart requests %+v", r)
	}

	// Container 2 lists as pending while its executor starts again (as
	// on a real agent): a restart of all right after leaves it to start.
	// (One listed pending whose executor runs already is restarted:
	// TestRestartPendingWithRunningExecutor.)
	if err := newSched(t, cfg).Restart(ctx, "wordcount", spi.AllContainers); err != nil {
		t.Fatalf("restart of every container right after restarting container 2: %v", err)
	}
	all := observe(f, "wordcount")
	for c := range all {
		if restarted := all[c] != after[c]; restarted != (c != 2) {
			t.Errorf("container %d restarted by a restart of all: %v, want %v", c, restarted, c != 2)
		}
	}

	err := newSched(t, cfg).Restart(ctx, "wordcount", 7)
	if !errors.Is(err, spi.ErrNotFound) || !strings.Contains(err.Error(), "containers 0..2") {
		t.Errorf("restart of container 7: %v, want ErrNotFound naming the containers", err)
	}
	if err := newSched(t, cfg).Restart(ctx, "nosuch", 1); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("restart of an unknown topology: %v, want ErrNotFound", err)
	}
}

func TestUpdateAndScale(t *testing.T) {
	f := newFake(t)
	cfg := schedConfig(f.URL)
	if err := newSched(t, cfg).Schedule(ctx, wordcount(2)); err != nil {
		t.Fatal(err)
	}
	v0 := observe(f, "wordcount")
	if err := newSched(t, cfg).Update(ctx, wordcount(3)); err != nil {
		t.Fatal(err)
	}
	v1 := observe(f, "wordcount")
	if len(v1) != 4 || v1[0] != v0[0] || v1[1] != v0[1] || v1[2] != v0[2] {
		t.Fatalf("update 2 → 3 containers: before %v, after %v", v0, v1)
	}
	j := onlyJob(t, f)
	if deref(j.Version) != 1 {
		t.Errorf("job version %d after one update, want 1", deref(j.Version))
	}
	// The update was conditional on the version it read.
	r := requests(f, "PUT", "/v1/jobs")
	if body := string(r[len(r)-1].Body); !strings.Contains(body, `"EnforceIndex":true`) || !strings.Contains(body, `"JobModifyIndex":`) {
		t.Errorf("update body lacks the enforced index: %.200s", body)
	}

	// A container whose resources change is replaced; the others stay.
	bigger := wordcount(3)
	bigger.Plan.Containers[2].Required.RAM *= 2
	if err := newSched(t, cfg).Update(ctx, bigger); err != nil {
		t.Fatal(err)
	}
	v2 := observe(f, "wordcount")
	if v2[3] == v1[3] || v2[0] != v1[0] || v2[1] != v1[1] || v2[2] != v1[2] {
		t.Errorf("update of container 3's memory: before %v, after %v", v1, v2)
	}

	s := newSched(t, cfg)
	if err := s.RemoveContainers(ctx, "wordcount", bigger.Plan.Containers[1:]); err != nil {
		t.Fatal(err)
	}
	if got := containersOf(onlyJob(t, f)); len(got) != 2 {
		t.Errorf("groups after removing 2 and 3: %v", got)
	}
	extra := []plan.Container{{ID: 5, Required: plan.Resources{CPU: 2, RAM: 1 << 30, Disk: 1 << 30}}}
	if err := s.AddContainers(ctx, "wordcount", extra); err != nil {
		t.Fatal(err)
	}
	tg := group(t, onlyJob(t, f), "container-5")
	if r := tg.Tasks[0].Resources; deref(r.CPU) != 4000 || deref(r.MemoryMB) != 1024 {
		t.Errorf("added container 5 asks %s", mustJSON(t, r))
	}
	if args := mustJSON(t, tg.Tasks[0].Config["args"]); !strings.Contains(args, `"--container","5"`) {
		t.Errorf("added container 5 runs %s", args)
	}
	if got := observe(f, "wordcount"); len(got) != 3 || got[0] != v2[0] || got[1] != v2[1] || got[5] == "" {
		t.Errorf("containers after remove and add: %v", got)
	}
	if err := s.AddContainers(ctx, "wordcount", extra); !errors.Is(err, spi.ErrExists) {
		t.Errorf("adding container 5 twice: %v, want ErrExists", err)
	}
	if err := s.RemoveContainers(ctx, "wordcount", []plan.Container{{ID: 9}}); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("removing container 9: %v, want ErrNotFound", err)
	}
	if err := s.RemoveContainers(ctx, "wordcount", []plan.Container{{ID: 0}}); err == nil {
		t.Error("removing container 0 succeeded")
	}
	if err := s.Update(ctx, spi.Job{Topology: "nosuch"}); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("update of an unknown topology: %v, want ErrNotFound", err)
	}
}

func TestJobLinks(t *testing.T) {
	f := newFake(t)
	if err := newSched(t, schedConfig(f.URL, KeyNamespace, "streams")).Schedule(ctx, wordcount(1)); err != nil {
		t.Fatal(err)
	}
	links, err := newSched(t, schedConfig(f.URL, KeyNamespace, "streams")).JobLinks(ctx, "wordcount")
	if err != nil || len(links) != 1 || links[0] != f.URL+"/ui/jobs/wordcount-7f3a9c@streams" {
		t.Errorf("links %v, %v", links, err)
	}
	links, _ = newSched(t, schedConfig(f.URL, KeyNamespace, "streams", KeyUIAddress, "https://nomad.example.com/")).JobLinks(ctx, "wordcount")
	if len(links) != 1 || links[0] != "https://nomad.example.com/ui/jobs/wordcount-7f3a9c@streams" {
		t.Errorf("links with a UI address: %v", links)
	}
	// The job lives in its namespace only.
	if _, err := newSched(t, schedConfig(f.URL)).JobLinks(ctx, "wordcount"); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("links from the default namespace: %v, want ErrNotFound", err)
	}
}

func TestScheduleTwice(t *testing.T) {
	f := newFake(t)
	cfg := schedConfig(f.URL)
	if err := newSched(t, cfg).Schedule(ctx, wordcount(1)); err != nil {
		t.Fatal(err)
	}
	// A resubmission has another topology id, so another job ID.
	again := wordcount(1)
	again.TopologyID = "wordcount-000001"
	err := newSched(t, cfg).Schedule(ctx, again)
	if !errors.Is(err, spi.ErrExists) || !strings.Contains(err.Error(), "wordcount-7f3a9c") {
		t.Fatalf("second submit: %v, want ErrExists naming the running job", err)
	}
	// A stopped job (nomad job stop without -purge) is replaced.
	c, _ := api.NewClient(&api.Config{Address: f.URL})
	if _, _, err := c.Jobs().Deregister("wordcount-7f3a9c", false, nil); err != nil {
		t.Fatal(err)
	}
	if err := newSched(t, cfg).Schedule(ctx, wordcount(1)); err != nil {
		t.Fatalf("submit over a stopped job: %v", err)
	}
	if got := observe(f, "wordcount"); len(got) != 2 {
		t.Errorf("containers %v after resubmitting over the stopped job", got)
	}
}

func TestErrors(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		f := newFake(t)
		addr := f.URL
		f.Close()
		err := newSched(t, schedConfig(addr)).Schedule(ctx, wordcount(1))
		if err == nil || !strings.Contains(err.Error(), "cannot reach Nomad at "+addr) || !strings.Contains(err.Error(), "egret.nomad.address") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		f := newFake(t)
		err := newSched(t, schedConfig(f.URL, KeyRestartAttempts, "100")).Schedule(ctx, wordcount(1))
		if err == nil || !strings.Contains(err.Error(), "Nomad rejected job wordcount-7f3a9c (HTTP 500)") ||
			!strings.Contains(err.Error(), "can't restart the TaskGroup 100 times") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("no token", func(t *testing.T) {
		f := newFake(t, nomadtest.WithToken("secret"))
		err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(1))
		if err == nil || !strings.Contains(err.Error(), "denied access (HTTP 403: Permission denied)") || !strings.Contains(err.Error(), "NOMAD_TOKEN") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("invalid token", func(t *testing.T) {
		f := newFake(t, nomadtest.WithToken("secret"))
		err := newSched(t, schedConfig(f.URL, KeyToken, "wrong")).Kill(ctx, "wordcount")
		if err == nil || !strings.Contains(err.Error(), "ACL token not found") || !strings.Contains(err.Error(), "invalid") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("token from config", func(t *testing.T) {
		f := newFake(t, nomadtest.WithToken("secret"))
		if err := newSched(t, schedConfig(f.URL, KeyToken, "secret")).Schedule(ctx, wordcount(1)); err != nil {
			t.Error(err)
		}
	})
	t.Run("memory exhausted", func(t *testing.T) {
		f := newFake(t, nomadtest.WithNodes(
			nomadtest.Node{CPU: 100000, MemoryMB: 2048, DiskMB: 100000},
			nomadtest.Node{CPU: 100000, MemoryMB: 2048, DiskMB: 100000},
		))
		// Container 0 takes 1024 MiB, 1: 1024, 2: 1536, 3: 2048; two
		// nodes of 2048 MiB hold 0..2 but not 3.
		err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(3))
		if !errors.Is(err, spi.ErrCannotFit) {
			t.Fatalf("error %v, want ErrCannotFit", err)
		}
		for _, want := range []string{"cannot place 1 of the 4 containers", "container-3: memory exhausted on 2 of 2 nodes", "memory 2048 MiB", "the job was removed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if len(f.Jobs()) != 0 || len(observe(f, "wordcount")) != 0 {
			t.Errorf("the job that cannot be placed is still there")
		}
	})
	t.Run("missing driver", func(t *testing.T) {
		f := newFake(t, nomadtest.WithNodes(nomadtest.Node{CPU: 100000, MemoryMB: 100000, DiskMB: 100000, Drivers: []string{"docker"}}))
		err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(1))
		if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), "filtered by missing drivers") || !strings.Contains(err.Error(), `plugin "raw_exec"`) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("no consul", func(t *testing.T) {
		// A stock agent (nomad agent -dev) has no Consul: the default
		// provider is Nomad's own.
		f := newFake(t)
		err := newSched(t, schedConfig(f.URL, KeyMetricsServiceProvider, "consul")).Schedule(ctx, wordcount(1))
		if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), "${attr.consul.version} semver >= 1.7.0") ||
			!strings.Contains(err.Error(), "egret.nomad.metrics.service.provider: nomad") {
			t.Errorf("error %v", err)
		}
		if err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(1)); err != nil {
			t.Errorf("with the default (Nomad's services): %v", err)
		}
		consul := newFake(t, nomadtest.WithNodes(nomadtest.Node{CPU: 100000, MemoryMB: 100000, DiskMB: 100000, Consul: true}))
		if err := newSched(t, schedConfig(consul.URL, KeyMetricsServiceProvider, "consul")).Schedule(ctx, wordcount(1)); err != nil {
			t.Errorf("Consul services on a node with Consul: %v", err)
		}
	})
	t.Run("no nodes in datacenter", func(t *testing.T) {
		f := newFake(t)
		err := newSched(t, schedConfig(f.URL, KeyDatacenters, "eu-west")).Schedule(ctx, wordcount(1))
		if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), "no ready client node") || !strings.Contains(err.Error(), KeyDatacenters) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("update cannot place", func(t *testing.T) {
		f := newFake(t, nomadtest.WithNodes(nomadtest.Node{CPU: 100000, MemoryMB: 3000, DiskMB: 100000}))
		cfg := schedConfig(f.URL)
		if err := newSched(t, cfg).Schedule(ctx, wordcount(1)); err != nil {
			t.Fatal(err)
		}
		err := newSched(t, cfg).Update(ctx, wordcount(2))
		if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), "container-2: memory exhausted") || !strings.Contains(err.Error(), "keep running") {
			t.Errorf("error %v", err)
		}
		if got := observe(f, "wordcount"); len(got) != 2 {
			t.Errorf("containers %v after the failed update, want 0 and 1 still running", got)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		f := newFake(t)
		c, cancel := context.WithCancel(ctx)
		cancel()
		if err := newSched(t, schedConfig(f.URL)).Schedule(c, wordcount(1)); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v", err)
		}
		if n := len(f.Requests()); n != 0 {
			t.Errorf("%d requests with a cancelled context", n)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s := newSched(t, schedConfig("http://127.0.0.1:1"))
		_ = s.Close()
		if err := s.Kill(ctx, "x"); !errors.Is(err, spi.ErrClosed) {
			t.Errorf("error %v", err)
		}
	})
}

// TestPlacementWait: Schedule waits for a pending evaluation, and gives
// up waiting (without failing) after the placement timeout.
func TestPlacementWait(t *testing.T) {
	f := newFake(t, nomadtest.WithPendingEvals(3))
	if err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(1)); err != nil {
		t.Fatal(err)
	}
	if n := len(requests(f, "GET", "/v1/evaluation/")); n != 4 {
		t.Errorf("%d evaluation reads, want 4 (3 pending, then complete)", n)
	}

	slow := newFake(t, nomadtest.WithPendingEvals(1<<30), nomadtest.WithNodes(nomadtest.Node{CPU: 1, MemoryMB: 1, DiskMB: 1}))
	if err := newSched(t, schedConfig(slow.URL, KeyPlacementTimeout, "50ms")).Schedule(ctx, wordcount(1)); err != nil {
		t.Errorf("schedule with an evaluation that stays pending: %v", err)
	}
}

func TestClientConfig(t *testing.T) {
	t.Setenv("NOMAD_ADDR", "http://from-env:4646")
	t.Setenv("NOMAD_TOKEN", "env-token")
	t.Setenv("NOMAD_NAMESPACE", "env-ns")
	t.Setenv("NOMAD_REGION", "env-region")
	t.Setenv("NOMAD_CACERT", "/env/ca.pem")
	t.Setenv("NOMAD_SKIP_VERIFY", "true")

	s, err := parseSettings(spi.Config{KeyNamespace: "", keyCoreBundle: "true"})
	if err != nil {
		t.Fatal(err)
	}
	c := s.clientConfig()
	if c.Address != "http://from-env:4646" || c.SecretID != "env-token" || c.Namespace != "env-ns" || c.Region != "env-region" ||
		c.TLSConfig.CACert != "/env/ca.pem" || !c.TLSConfig.Insecure {
		t.Errorf("from the environment: %+v %+v", c, c.TLSConfig)
	}

	s, err = parseSettings(spi.Config{KeyAddress: "https://nomad.example.com:4646", KeyToken: "cfg-token", KeyNamespace: "cfg-ns",
		KeyRegion: "cfg-region", KeyTLSCACert: "/cfg/ca.pem", KeyTLSClientCert: "/cfg/c.pem", KeyTLSClientKey: "/cfg/k.pem", KeyTLSServerName: "server.global.nomad", keyCoreBundle: "true"})
	if err != nil {
		t.Fatal(err)
	}
	c = s.clientConfig()
	if c.Address != "https://nomad.example.com:4646" || c.SecretID != "cfg-token" || c.Namespace != "cfg-ns" || c.Region != "cfg-region" ||
		c.TLSConfig.CACert != "/cfg/ca.pem" || c.TLSConfig.ClientCert != "/cfg/c.pem" || c.TLSConfig.ClientKey != "/cfg/k.pem" ||
		c.TLSConfig.TLSServerName != "server.global.nomad" {
		t.Errorf("from the config: %+v %+v", c, c.TLSConfig)
	}
}

// TestUpdateKeepsRunningGroups: an update by a user whose config differs
// (MHz per core, a config override) replaces no unchanged container.
func TestUpdateKeepsRunningGroups(t *testing.T) {
	f := newFake(t)
	if err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(2)); err != nil {
		t.Fatal(err)
	}
	before := observe(f, "wordcount")
	job := wordcount(3)
	job.Config = spi.Config{"egret.statemgr": "somewhere-else"}
	if err := newSched(t, schedConfig(f.URL, KeyMHzPerCore, "4000")).Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	after := observe(f, "wordcount")
	if len(after) != 4 || after[0] != before[0] || after[1] != before[1] || after[2] != before[2] {
		t.Fatalf("before %v, after %v", before, after)
	}
	j := onlyJob(t, f)
	g3 := group(t, j, "container-3")
	if cpu := deref(g3.Tasks[0].Resources.CPU); cpu != 14000 {
		t.Errorf("container 3 asks %d MHz, want 3.5 cores × 4000", cpu)
	}
	if tmpl := deref(g3.Tasks[0].Templates[0].EmbeddedTmpl); !strings.Contains(tmpl, "zk-1:2181") {
		t.Errorf("container 3 does not get the running job's config:\n%s", tmpl)
	}
}

// TestRestartPendingWithRunningExecutor: an allocation the server still
// lists as pending whose executor runs again (the server learns a
// client's task states late) is restarted by a restart of every
// container: its executor predates the restart asked for.
func TestRestartPendingWithRunningExecutor(t *testing.T) {
	f := newFake(t)
	cfg := schedConfig(f.URL)
	if err := newSched(t, cfg).Schedule(ctx, wordcount(2)); err != nil {
		t.Fatal(err)
	}
	before := observe(f, "wordcount")
	f.ListStale(GroupName(2))
	if err := newSched(t, cfg).Restart(ctx, "wordcount", spi.AllContainers); err != nil {
		t.Fatal(err)
	}
	after := observe(f, "wordcount")
	for c := range before {
		if after[c] == before[c] {
			t.Errorf("container %d not restarted by a restart of all (%s)", c, after[c])
		}
	}
}
