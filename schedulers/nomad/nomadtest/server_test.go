package nomadtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func ptrTo[T any](v T) *T { return &v }

func client(t *testing.T, s *Server) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func webJob(id string) *api.Job {
	j := api.NewServiceJob(id, id, "", 50)
	j.Datacenters = []string{"dc1"}
	tg := api.NewTaskGroup("web", 1)
	tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	task := api.NewTask("server", "raw_exec").
		SetConfig("command", "/bin/server").
		SetConfig("args", []string{"--port", "${NOMAD_PORT_http}"})
	task.Resources = &api.Resources{CPU: ptrTo(100), MemoryMB: ptrTo(64)}
	tg.AddTask(task)
	j.AddTaskGroup(tg)
	return j
}

func statusOf(err error) int {
	var ure api.UnexpectedResponseError
	if errors.As(err, &ure) {
		return ure.StatusCode()
	}
	return 0
}

func TestRegisterReadDeregister(t *testing.T) {
	s := New(t)
	c := client(t, s)
	resp, wm, err := c.Jobs().Register(webJob("web"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" || resp.JobModifyIndex == 0 || wm.LastIndex == 0 {
		t.Errorf("register response %+v, index %d", resp, wm.LastIndex)
	}
	j, qm, err := c.Jobs().Info("web", nil)
	if err != nil || deref(j.Status, "") != "running" || deref(j.Version, uint64(9)) != 0 || qm.LastIndex == 0 || !qm.KnownLeader {
		t.Fatalf("info %+v %+v %v", j, qm, err)
	}
	ev, _, err := c.Evaluations().Info(resp.EvalID, nil)
	if err != nil || ev.Status != "complete" || ev.JobID != "web" || len(ev.FailedTGAllocs) != 0 {
		t.Fatalf("evaluation %+v %v", ev, err)
	}
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 1 || allocs[0].TaskGroup != "web" || allocs[0].ClientStatus != "running" {
		t.Fatalf("allocations %+v %v", allocs, err)
	}
	if err := c.Allocations().Restart(&api.Allocation{ID: allocs[0].ID}, "server", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Allocations().Restart(&api.Allocation{ID: "nope"}, "", nil); statusOf(err) != 404 {
		t.Errorf("restart of an unknown allocation: %v", err)
	}
	// Register again only if new: refused.
	if _, _, err := c.Jobs().EnforceRegister(webJob("web"), 0, nil); err == nil || !strings.Contains(err.Error(), "Enforcing job modify index 0: job already exists") {
		t.Errorf("enforced register of an existing job: %v", err)
	}
	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Info("web", nil); statusOf(err) != 404 {
		t.Errorf("info after purge: %v", err)
	}
	if _, _, err := c.Jobs().Deregister("web", true, nil); statusOf(err) != 404 {
		t.Errorf("deregister of a purged job: %v", err)
	}
	a := s.Allocations()
	if len(a) != 1 || a[0].DesiredStatus != "stop" || a[0].TaskStates["server"].Restarts != 1 {
		t.Errorf("allocations after purge %+v", a[0])
	}
}

func TestValidation(t *testing.T) {
	s := New(t)
	c := client(t, s)
	for name, tc := range map[string]struct {
		edit func(*api.Job)
		want string
	}{
		"unknown port": {func(j *api.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"P": "${NOMAD_PORT_grpc}"} }, `refers to port "grpc"`},
		"bad label":    {func(j *api.Job) { j.TaskGroups[0].Networks[0].DynamicPorts[0].Label = "my-port" }, "not a valid environment variable name"},
		"no command":   {func(j *api.Job) { delete(j.TaskGroups[0].Tasks[0].Config, "command") }, `"command"`},
		"restart": {func(j *api.Job) {
			j.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: ptrTo(10), Delay: ptrTo(time.Minute), Interval: ptrTo(time.Minute)}
		}, "can't restart"},
		"checksum": {func(j *api.Job) {
			j.TaskGroups[0].Tasks[0].Artifacts = []*api.TaskArtifact{{GetterSource: ptrTo("http://x/a.tgz"), GetterOptions: map[string]string{"checksum": "sha256:abc"}}}
		}, "checksum"},
		"memory":      {func(j *api.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = ptrTo(5) }, "Minimum MemoryMB value is 10"},
		"space in id": {func(j *api.Job) { j.ID = ptrTo("a b") }, "space"},
	} {
		t.Run(name, func(t *testing.T) {
			j := webJob("web-" + strings.ReplaceAll(name, " ", "-"))
			tc.edit(j)
			_, _, err := c.Jobs().Register(j, nil)
			if statusOf(err) != 500 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("register: %v, want HTTP 500 with %q", err, tc.want)
			}
		})
	}
	// Unknown fields are refused, as a typo in a hand-written job would be.
	resp, err := http.Post(s.URL+"/v1/jobs", "application/json", strings.NewReader(`{"Job":{"ID":"x","Name":"x","TaskGroup":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "TaskGroup") {
		t.Errorf("unknown field: %d %s", resp.StatusCode, b)
	}
}

func TestACL(t *testing.T) {
	s := New(t, WithToken("t0k3n"))
	c := client(t, s)
	if _, _, err := c.Jobs().List(nil); statusOf(err) != 403 || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("anonymous list: %v", err)
	}
	c.SetSecretID("t0k3n")
	if _, _, err := c.Jobs().List(nil); err != nil {
		t.Errorf("list with the token: %v", err)
	}
}

// TestReadBackLikeNomad: a job reads back as a Nomad 1.6 agent returns
// it, with a job-level update block of zeros but stagger and
// max_parallel; sent back with a new group, it is rejected with Nomad's
// messages, as a real agent did in issue 13.
func TestReadBackLikeNomad(t *testing.T) {
	s := New(t)
	c := client(t, s)
	if _, _, err := c.Jobs().Register(webJob("web"), nil); err != nil {
		t.Fatal(err)
	}
	j, _, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	u := j.Update
	if u == nil || deref(u.HealthCheck, "x") != "" || deref(u.HealthyDeadline, 1) != 0 || deref(u.MaxParallel, 0) != 1 || deref(u.Stagger, 0) != 30*time.Second {
		t.Fatalf("job-level update read back: %+v", u)
	}
	gu := j.TaskGroups[0].Update
	if gu == nil || deref(gu.HealthCheck, "") != "checks" || deref(gu.HealthyDeadline, 0) != 5*time.Minute || deref(gu.MinHealthyTime, 0) != 10*time.Second {
		t.Fatalf("group update read back: %+v", gu)
	}
	added := api.NewTaskGroup("web2", 1).AddTask(api.NewTask("server", "raw_exec").SetConfig("command", "/bin/server"))
	j.AddTaskGroup(added)
	_, _, err = c.Jobs().Register(j, nil)
	for _, want := range []string{"Task group web2 validation failed: 1 error occurred:\n\t* 3 errors occurred:\n\t* Invalid health check given: \"\"",
		"Healthy deadline must be greater than zero: 0s", "Minimum healthy time must be less than healthy deadline: 0s > 0s"} {
		if statusOf(err) != 500 || !strings.Contains(err.Error(), want) {
			t.Errorf("register of the read-back job with a new group: %v, want HTTP 500 with %q", err, want)
		}
	}
	j.Update = nil
	if _, _, err := c.Jobs().Register(j, nil); err != nil {
		t.Errorf("without the job-level update block: %v", err)
	}
}

// TestArtifacts: the client downloads artifacts as Nomad 1.6 does (no
// file scheme) and the driver needs the command the task runs.
func TestArtifacts(t *testing.T) {
	pkg := tarGzOf(t, "topology")
	s := New(t, WithArtifacts(map[string][]byte{"http://pkg/p.tar.gz": pkg}))
	c := client(t, s)
	for name, tc := range map[string]struct {
		source, command string
		event, want     string
	}{
		"file scheme": {"file:///etc/hostname", "/bin/true", "Failed Artifact Download",
			`failed to download artifact "file:///etc/hostname": getter subprocess failed: exit status 1: failed to download artifact: download not supported for scheme 'file'`},
		"not found": {"http://pkg/missing.tar.gz", "/bin/true", "Failed Artifact Download",
			`failed to download artifact "http://pkg/missing.tar.gz": getter subprocess failed: exit status 1: failed to download artifact: bad response code: 404`},
		"command not in the package": {"http://pkg/p.tar.gz", "${NOMAD_TASK_DIR}/pkg/egret", "Driver Failure",
			`failed to launch command with executor: rpc error: code = Unknown desc = binary "/var/nomad/alloc/<alloc>/server/local/pkg/egret" could not be found`},
		"command in the package": {"http://pkg/p.tar.gz", "${NOMAD_TASK_DIR}/pkg/topology", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			id := "art-" + strings.ReplaceAll(name, " ", "-")
			j := webJob(id)
			task := j.TaskGroups[0].Tasks[0]
			task.Config["command"] = tc.command
			task.Artifacts = []*api.TaskArtifact{{GetterSource: ptrTo(tc.source), RelativeDest: ptrTo("local/pkg")}}
			if _, _, err := c.Jobs().Register(j, nil); err != nil {
				t.Fatal(err)
			}
			allocs, _, err := c.Jobs().Allocations(id, false, nil)
			if err != nil || len(allocs) != 1 {
				t.Fatalf("allocations %v %v", allocs, err)
			}
			a := allocs[0]
			if tc.event == "" {
				if a.ClientStatus != "running" {
					t.Errorf("allocation %s: %s", a.ClientStatus, mustEvents(a))
				}
				return
			}
			if a.ClientStatus != "failed" || !a.TaskStates["server"].Failed || !strings.Contains(mustEvents(a), tc.event+": "+tc.want) {
				t.Errorf("allocation %s, events %s; want failed with %s: %s", a.ClientStatus, mustEvents(a), tc.event, tc.want)
			}
		})
	}
}

func mustEvents(a *api.AllocationListStub) string {
	var out []string
	for _, e := range a.TaskStates["server"].Events {
		out = append(out, e.Type+": "+e.DisplayMessage)
	}
	return strings.Join(out, " | ")
}

func tarGzOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: 1, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
