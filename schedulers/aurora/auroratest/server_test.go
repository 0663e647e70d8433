package auroratest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
	"github.com/egret-stream/egret/schedulers/aurora/thermos"
)

// client talks to the fake through the generated client over Thrift's
// own HTTP transport, with the given content type.
func client(t *testing.T, s *Server, binary bool) *auroraapi.AuroraSchedulerManagerClient {
	t.Helper()
	tr, err := thrift.NewTHttpClient(s.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	var f thrift.TProtocolFactory = thrift.NewTJSONProtocolFactory()
	if binary {
		h := tr.(*thrift.THttpClient)
		h.DelHeader("Content-Type")
		h.SetHeader("Content-Type", "application/vnd.apache.thrift.binary")
		f = thrift.NewTBinaryProtocolFactoryConf(nil)
	}
	return auroraapi.NewAuroraSchedulerManagerClientFactory(tr, f)
}

// job is a job whose one process runs cmdline.
func job(name string, instances int32, cmdline string, finalizationWait int) *auroraapi.JobConfiguration {
	data, _ := json.Marshal(thermos.Job{Name: name, Role: "www", Environment: "prod", Cluster: "devcluster", Instances: int(instances), Service: true,
		Task: thermos.Task{Name: "t", Processes: []thermos.Process{{Name: "main", Cmdline: cmdline}}, FinalizationWait: finalizationWait}})
	key := &auroraapi.JobKey{Role: "www", Environment: "prod", Name: name}
	cpus := 0.5
	ram, disk, port := int64(64), int64(64), "http"
	// The Go code writes an unset struct field as an empty struct, which
	// Aurora takes for an owner without a user.
	owner := &auroraapi.Identity{User: "alice"}
	return &auroraapi.JobConfiguration{Key: key, Owner: owner, InstanceCount: instances, TaskConfig: &auroraapi.TaskConfig{
		Job: key, IsService: true, Owner: owner, Container: &auroraapi.Container{Mesos: &auroraapi.MesosContainer{}},
		Resources:      []*auroraapi.Resource{{NumCpus: &cpus}, {RamMb: &ram}, {DiskMb: &disk}, {NamedPort: &port}},
		ExecutorConfig: &auroraapi.ExecutorConfig{Name: auroraapi.AURORA_EXECUTOR_NAME, Data: string(data)},
	}}
}

func details(r *auroraapi.Response) string {
	var s []string
	for _, d := range r.GetDetails() {
		s = append(s, d.GetMessage())
	}
	return strings.Join(s, "; ")
}

func expect(t *testing.T, what string, r *auroraapi.Response, err error, code auroraapi.ResponseCode, msg string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.GetResponseCode() != code || details(r) != msg {
		t.Errorf("%s: %s %q, want %s %q", what, r.GetResponseCode(), details(r), code, msg)
	}
	if r.GetServerInfo().GetClusterName() != "devcluster" {
		t.Errorf("%s: server info %v, want cluster devcluster", what, r.GetServerInfo())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAPIAnswers checks the calls' codes and messages, in both protocols.
func TestAPIAnswers(t *testing.T) {
	for _, binary := range []bool{false, true} {
		s := New(t, WithRescheduleDelay(10*time.Millisecond))
		c := client(t, s, binary)
		ctx := context.Background()
		key := &auroraapi.JobKey{Role: "www", Environment: "prod", Name: "sleeper"}

		bad := job("sleeper", 1, "sleep 60", 1)
		bad.Key = &auroraapi.JobKey{Role: "www", Environment: "qa", Name: "sleeper"}
		r, err := c.CreateJob(ctx, bad)
		expect(t, "createJob in environment qa", r, err, auroraapi.ResponseCode_INVALID_REQUEST, `Job environment qa doesn't match: ^(prod|devel|test|staging\d*)$`)
		bad = job("sleeper", 0, "sleep 60", 1)
		r, err = c.CreateJob(ctx, bad)
		expect(t, "createJob of 0 instances", r, err, auroraapi.ResponseCode_INVALID_REQUEST, "Instance count must be positive.")
		bad = job("sleeper", 1, "sleep 60", 1)
		bad.TaskConfig.ExecutorConfig.Name = "Other"
		r, err = c.CreateJob(ctx, bad)
		expect(t, "createJob with another executor", r, err, auroraapi.ResponseCode_INVALID_REQUEST, "Configuration for executor 'Other' doesn't exist.")
		bad = job("sleeper", 1, "sleep 60", 1)
		bad.Key.Name = "a b"
		r, err = c.CreateJob(ctx, bad)
		expect(t, "createJob with a bad name", r, err, auroraapi.ResponseCode_INVALID_REQUEST, "Job key JobKey(role:www, environment:prod, name:a b) is invalid.")

		r, err = c.KillTasks(ctx, key, nil, "")
		expect(t, "killTasks of no job", r, err, auroraapi.ResponseCode_OK, "No tasks to kill.")
		r, err = c.CreateJob(ctx, job("sleeper", 2, "exec sleep 60", 1))
		expect(t, "createJob", r, err, auroraapi.ResponseCode_OK, "")
		r, err = c.CreateJob(ctx, job("sleeper", 2, "exec sleep 60", 1))
		expect(t, "createJob again", r, err, auroraapi.ResponseCode_INVALID_REQUEST, "Job www/prod/sleeper already exists")
		waitFor(t, "2 running instances", func() bool { return len(s.Running("www", "prod", "sleeper")) == 2 })

		r, err = c.RestartShards(ctx, key, []int32{1, 5})
		expect(t, "restartShards of an inactive shard", r, err, auroraapi.ResponseCode_INVALID_REQUEST, "Not all requested shards are active.")
		r, err = c.AddInstances(ctx, &auroraapi.InstanceKey{JobKey: key, InstanceId: 7}, 1)
		expect(t, "addInstances from a missing instance", r, err, auroraapi.ResponseCode_INVALID_REQUEST, "No active task found for a given instance ID.")
		r, err = c.AddInstances(ctx, &auroraapi.InstanceKey{JobKey: key, InstanceId: 0}, 0)
		expect(t, "addInstances of 0", r, err, auroraapi.ResponseCode_INVALID_REQUEST, "Instance count must be positive.")
		r, err = c.AddInstances(ctx, &auroraapi.InstanceKey{JobKey: key, InstanceId: 0}, 2)
		expect(t, "addInstances", r, err, auroraapi.ResponseCode_OK, "")
		waitFor(t, "instances 0..3 to run", func() bool { return len(s.Running("www", "prod", "sleeper")) == 4 })

		r, err = c.GetTasksWithoutConfigs(ctx, &auroraapi.TaskQuery{JobKeys: []*auroraapi.JobKey{key}, InstanceIds: []int32{3},
			Statuses: []auroraapi.ScheduleStatus{auroraapi.ScheduleStatus_RUNNING}})
		expect(t, "getTasksWithoutConfigs", r, err, auroraapi.ResponseCode_OK, "")
		ts := r.GetResult_().GetScheduleStatusResult_().GetTasks()
		if len(ts) != 1 || ts[0].GetAssignedTask().GetInstanceId() != 3 || ts[0].GetAssignedTask().GetTask().GetExecutorConfig().GetData() != "" ||
			ts[0].GetAssignedTask().GetAssignedPorts()["http"] == 0 {
			t.Errorf("getTasksWithoutConfigs of instance 3: %v", ts)
		}
		r, err = c.GetPendingReason(ctx, &auroraapi.TaskQuery{Statuses: []auroraapi.ScheduleStatus{auroraapi.ScheduleStatus_RUNNING}})
		if err != nil || r.GetResponseCode() != auroraapi.ResponseCode_INVALID_REQUEST || !strings.HasPrefix(details(r), "Statuses is not supported in TaskQuery(") {
			t.Errorf("getPendingReason with statuses: %v %v", r, err)
		}

		r, err = c.KillTasks(ctx, key, []int32{2, 3}, "scale in")
		expect(t, "killTasks of instances", r, err, auroraapi.ResponseCode_OK, "")
		waitFor(t, "instances 0..1 to run", func() bool { return len(s.Running("www", "prod", "sleeper")) == 2 })
		r, err = c.KillTasks(ctx, key, nil, "")
		expect(t, "killTasks", r, err, auroraapi.ResponseCode_OK, "")
		waitFor(t, "no process", func() bool { return len(s.Live()) == 0 })
	}
}

func TestHTTP(t *testing.T) {
	s := New(t, WithCredentials("alice", "s3cret"))
	resp, err := http.Get(s.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /api: %s, want 405", resp.Status)
	}
	resp, err = http.Post(s.URL+"/api", "application/x-thrift", strings.NewReader(`[1,"getTasksWithoutConfigs",1,0,{"1":{"rec":{}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="Apache Aurora Scheduler"` {
		t.Errorf("POST /api without credentials: %s %q, want 401 with a Basic challenge", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api", strings.NewReader(`[1,"getTasksWithoutConfigs",1,0,{"1":{"rec":{}}}]`))
	req.SetBasicAuth("alice", "s3cret")
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.apache.thrift.json" ||
		!strings.HasPrefix(body.String(), `[1,"getTasksWithoutConfigs",2,0,{"0":{"rec":{"1":{"i32":1}`) {
		t.Errorf("POST /api as alice: %s %q %s", resp.Status, resp.Header.Get("Content-Type"), body.String())
	}

	s.Stop()
	if _, err := http.Post(s.URL+"/api", "application/x-thrift", strings.NewReader("[]")); err == nil {
		t.Error("the API answers after Stop")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	s.Unavailable(1)
	for _, want := range []int{http.StatusServiceUnavailable, http.StatusUnauthorized} {
		resp, err := http.Post(s.URL+"/api", "application/x-thrift", strings.NewReader("[]"))
		if err != nil {
			t.Fatalf("after Start: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("after Start and Unavailable(1): %s, want %d", resp.Status, want)
		}
	}
}

// TestAgent: a process that fails fails its task and the instance gets a
// new one; a killed task whose process ignores SIGTERM is SIGKILLed after
// the finalization wait; an unknown port reference makes an invalid task.
func TestAgent(t *testing.T) {
	s := New(t, WithRescheduleDelay(10*time.Millisecond))
	c := client(t, s, false)
	ctx := context.Background()
	r, err := c.CreateJob(ctx, job("flaky", 1, "echo {{thermos.ports[http]}} {{mesos.instance}} > out; exit 3", 1))
	expect(t, "createJob", r, err, auroraapi.ResponseCode_OK, "")
	waitFor(t, "the failed task to be replaced", func() bool {
		ts := s.Tasks("www", "prod", "flaky")
		return len(ts) >= 2 && ts[0].Status == auroraapi.ScheduleStatus_FAILED && ts[0].Message == "Task failed."
	})
	if _, err := c.KillTasks(ctx, &auroraapi.JobKey{Role: "www", Environment: "prod", Name: "flaky"}, nil, ""); err != nil {
		t.Fatal(err)
	}

	r, err = c.CreateJob(ctx, job("stubborn", 1, "trap '' TERM; echo ready > ready; while true; do sleep 0.05; done", 1))
	expect(t, "createJob", r, err, auroraapi.ResponseCode_OK, "")
	var pid int
	waitFor(t, "the stubborn process to run", func() bool {
		ts := s.Tasks("www", "prod", "stubborn")
		if len(ts) == 0 || ts[0].Pid == 0 {
			return false
		}
		pid = ts[0].Pid
		return true
	})
	began := time.Now()
	if _, err := c.KillTasks(ctx, &auroraapi.JobKey{Role: "www", Environment: "prod", Name: "stubborn"}, nil, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stubborn task to be killed", func() bool {
		ts := s.Tasks("www", "prod", "stubborn")
		return ts[0].Status == auroraapi.ScheduleStatus_KILLED
	})
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the process ignoring SIGTERM survived the kill: %v", err)
	}
	t.Logf("killed after %s (finalization wait 1s)", time.Since(began).Round(time.Millisecond))

	r, err = c.CreateJob(ctx, job("invalid", 1, "echo {{thermos.ports[nope]}}", 1))
	expect(t, "createJob", r, err, auroraapi.ResponseCode_OK, "")
	waitFor(t, "the invalid task to fail", func() bool {
		ts := s.Tasks("www", "prod", "invalid")
		return len(ts) > 0 && ts[0].Status == auroraapi.ScheduleStatus_FAILED && ts[0].Message == "Thermos received an invalid task."
	})
	if _, err := c.KillTasks(ctx, &auroraapi.JobKey{Role: "www", Environment: "prod", Name: "invalid"}, nil, ""); err != nil {
		t.Fatal(err)
	}
}

// TestCloseKillsEverything: Close leaves no task process behind.
func TestCloseKillsEverything(t *testing.T) {
	s := New(t)
	c := client(t, s, false)
	if _, err := c.CreateJob(context.Background(), job("sleeper", 3, "sleep 600", 30)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 processes", func() bool { return len(s.Live()) == 3 })
	pids := s.Live()
	s.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d survived Close: %v", pid, err)
		}
	}
}

// TestKillWhileAssigned: a task killed after it was assigned but before
// its runner began stays killed (it once became STARTING again and was
// replaced like a task that failed); one restarted then is replaced once.
func TestKillWhileAssigned(t *testing.T) {
	s := New(t, WithRescheduleDelay(10*time.Millisecond))
	for _, c := range []struct {
		to   auroraapi.ScheduleStatus
		want int // tasks of the job in the end
	}{{auroraapi.ScheduleStatus_KILLING, 1}, {auroraapi.ScheduleStatus_RESTARTING, 2}} {
		name := strings.ToLower(c.to.String())
		cfg := job(name, 1, "sleep 600", 1).TaskConfig
		s.mu.Lock()
		tk := s.newTaskLocked(cfg, 0, "", auroraapi.ScheduleStatus_PENDING)
		s.scheduleLocked() // ASSIGNED; its runner waits for the lock
		if tk.st.Status != auroraapi.ScheduleStatus_ASSIGNED {
			t.Fatalf("%s: task %s, want ASSIGNED", name, tk.st.Status)
		}
		s.killLocked(tk, c.to, "by the test")
		s.mu.Unlock()
		waitFor(t, name+": the first task to end", func() bool { return s.Tasks("www", "prod", name)[0].Status == auroraapi.ScheduleStatus_KILLED })
		if ts := s.Tasks("www", "prod", name); len(ts) != c.want {
			t.Errorf("%s while ASSIGNED: %d tasks %v, want %d", name, len(ts), ts, c.want)
		}
		if _, err := client(t, s, false).KillTasks(context.Background(), cfg.Job, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
}
