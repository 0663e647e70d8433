package aurora

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
	"github.com/egret-stream/egret/schedulers/aurora/auroratest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what was sent (run go test -run %s -update after checking the change):\n%s", path, t.Name(), got)
	}
}

// mutations renders the calls that change the job, in order, as JSON with
// their arguments; the addresses of the test servers are replaced by
// stable names.
func mutations(t *testing.T, f *auroratest.Server, replace ...string) []byte {
	t.Helper()
	type call struct {
		Method string
		Args   any
	}
	var calls []call
	for _, r := range f.Requests() {
		var args thrift.TStruct
		switch r.Method {
		case "createJob":
			args = &auroraapi.AuroraSchedulerManagerCreateJobArgs{}
		case "killTasks":
			args = &auroraapi.AuroraSchedulerManagerKillTasksArgs{}
		case "restartShards":
			args = &auroraapi.AuroraSchedulerManagerRestartShardsArgs{}
		case "addInstances":
			args = &auroraapi.AuroraSchedulerManagerAddInstancesArgs{}
		default:
			continue
		}
		if err := r.Decode(args); err != nil {
			t.Fatalf("decode %s: %v", r.Method, err)
		}
		calls = append(calls, call{r.Method, args})
	}
	b, err := json.MarshalIndent(calls, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	return []byte(s + "\n")
}

// TestRequestsGolden submits, scales out and in, restarts and kills a
// topology, and compares every call that changes the job with the golden
// file: the exact createJob (task config, Thermos job), addInstances,
// killTasks and restartShards requests.
func TestRequestsGolden(t *testing.T) {
	f := fakeServer(t)
	core := coreServer(t, fakeEgret)
	sc := newSched(t, schedConfig(f.URL, core.URL+"/egret", KeyRole, "", KeyEnviron, ""))
	sc.s.owner = "alice"
	job := wordcount(2)
	if err := sc.Schedule(ctx(t), job); err != nil {
		t.Fatal(err)
	}
	// The first request of a submission (a JSON Thrift message) as sent.
	create := slices.IndexFunc(f.Requests(), func(r auroratest.Request) bool { return r.Method == "createJob" })
	golden(t, "createJob.thrift.json", []byte(strings.ReplaceAll(string(f.Requests()[create].Body), core.URL, "http://core.example.com")+"\n"))

	grown := wordcount(3)
	grown.Plan.Containers[2].Required = grown.Plan.Containers[1].Required // Aurora cannot resize
	if err := sc.Update(ctx(t), grown); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "instance 3 to run", func() bool { return len(f.Running("www", "prod", "wordcount")) == 4 })
	if err := sc.Update(ctx(t), wordcount(1)); err != nil {
		t.Fatal(err)
	}
	sc.s.role, sc.s.environ = "www", "prod" // later commands take the key from the config
	if err := sc.Restart(ctx(t), "wordcount", 1); err != nil {
		t.Fatal(err)
	}
	if err := sc.Kill(ctx(t), "wordcount"); err != nil {
		t.Fatal(err)
	}
	golden(t, "requests.golden.json", mutations(t, f, core.URL, "http://core.example.com"))
	if live := f.Live(); len(live) > 0 {
		t.Errorf("processes %v run after Kill", live)
	}
}

// TestRenderJobGolden: the Thermos job of --dry-run-format aurora.
func TestRenderJobGolden(t *testing.T) {
	cfg := schedConfig("http://aurora.example.com:8081", "http://packages.example.com:7780/packages/egret", "egret.executor.stop.grace", "10s")
	b, err := RenderJob(wordcount(3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "wordcount.aurora.json", append(b, '\n'))

	// Without a core URI the agents run egret from their PATH and nothing
	// is fetched.
	cfg["egret.package.core.uri"] = ""
	b, err = RenderJob(wordcount(1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), ProcessFetchCore) || !strings.Contains(string(b), `exec env EGRET_CONTAINER_INDEX={{mesos.instance}}`) ||
		!strings.Contains(string(b), `{{thermos.ports[tmanager_http]}} egret executor`) {
		t.Errorf("without egret.package.core.uri the job must run egret from PATH and fetch nothing:\n%s", b)
	}
}

// TestExecutorCommandLine runs a job whose "egret" records its arguments
// and environment: each instance runs the executor of its container with
// the ports Aurora assigned to the task.
func TestExecutorCommandLine(t *testing.T) {
	f := fakeServer(t)
	core := coreServer(t, "#!/bin/sh\nprintf '%s\\n' \"$@\" > args.txt\nenv | grep -E '^EGRET_(CONTAINER_INDEX|HOST|PORT_)' | sort > env.txt\nexec sleep 3600\n")
	sc := newSched(t, schedConfig(f.URL, core.URL+"/egret", KeyRole, "www", KeyEnviron, "prod"))
	job := wordcount(2)
	if err := sc.Schedule(ctx(t), job); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, tk := range f.Tasks("www", "prod", "wordcount") {
		if tk.Status != auroraapi.ScheduleStatus_RUNNING {
			continue
		}
		var args, env []byte
		waitFor(t, "the executor of instance "+strconv.Itoa(tk.Instance)+" to start", func() bool {
			args, _ = os.ReadFile(filepath.Join(tk.Sandbox, "args.txt"))
			env, _ = os.ReadFile(filepath.Join(tk.Sandbox, "env.txt"))
			return len(args) > 0 && len(env) > 0
		})
		wantArgs := strings.Join([]string{"executor", "--topology", "wordcount", "--topology-id", "wordcount-7f3a9c",
			"--container", strconv.Itoa(tk.Instance), "--work-dir", "container", "--package-uri", job.PackageURI,
			"--package-sha256", testSHA, "--stmgr-port", strconv.Itoa(int(tk.Ports[PortStmgr]))}, "\n") + "\n"
		if string(args) != wantArgs {
			t.Errorf("instance %d: executor arguments\n%s\nwant\n%s", tk.Instance, args, wantArgs)
		}
		wantEnv := fmt.Sprintf("EGRET_CONTAINER_INDEX=%d\nEGRET_HOST=127.0.0.1\nEGRET_PORT_STMGR=%d\nEGRET_PORT_TMANAGER=%d\nEGRET_PORT_TMANAGER_HTTP=%d\n",
			tk.Instance, tk.Ports[PortStmgr], tk.Ports[PortTManager], tk.Ports[PortTManagerHTTP])
		if string(env) != wantEnv {
			t.Errorf("instance %d: executor environment\n%s\nwant\n%s", tk.Instance, env, wantEnv)
		}
		for _, now := range f.Tasks("www", "prod", "wordcount") {
			if now.ID == tk.ID { // the executor's pid, not fetch_core's
				pids = append(pids, now.Pid)
			}
		}
	}
	if len(pids) != 3 {
		t.Fatalf("%d instances run, want 3", len(pids))
	}
	if err := sc.Kill(ctx(t), "wordcount"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the executor process %d still exists after Kill (kill(0): %v)", pid, err)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{KeySchedulerURI, "", "egret.aurora.scheduler.uri is not set"},
		{KeySchedulerURI, "aurora:8081", "not an http(s):// address"},
		{KeyCluster, "a/b", "egret.aurora.cluster"},
		{KeyRole, "www data", "egret.aurora.role"},
		{KeyWaitTimeout, "0s", "egret.aurora.wait.timeout: must be positive"},
		{KeyWaitTimeout, "soon", "not a duration"},
		{KeyKillAttempts, "0", "must be at least 1"},
		{KeyPassword, "pw", "egret.aurora.username is not"},
		{"egret.package.core.uri", "ftp://x/egret", "curl"},
	} {
		cfg := schedConfig("http://127.0.0.1:8081", "")
		cfg[tc.key] = tc.value
		_, err := New(cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: error %v, want one mentioning %q", tc.key, tc.value, err, tc.want)
		}
	}
}

// TestBadJobSendsNothing: a job Aurora could not take fails before any
// request.
func TestBadJobSendsNothing(t *testing.T) {
	f := fakeServer(t)
	sc := newSched(t, schedConfig(f.URL, "", KeyRole, "", KeyEnviron, ""))
	noRole := wordcount(1)
	noRole.Role = ""
	gap := wordcount(3)
	gap.Plan.Containers = slices.Delete(gap.Plan.Containers, 1, 2)
	quote := wordcount(1)
	quote.PackageURI = "http://x/it's.tar.gz"
	for _, tc := range []struct {
		job  spi.Job
		want string
	}{
		{noRole, "no Aurora role given"},
		{gap, "must be 1..2"},
		{quote, "may not contain quotes"},
	} {
		err := sc.Schedule(ctx(t), tc.job)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Schedule: error %v, want one mentioning %q", err, tc.want)
		}
	}
	if err := sc.Kill(ctx(t), "wordcount"); err == nil || !strings.Contains(err.Error(), KeyRole) {
		t.Errorf("Kill without a role: error %v, want one naming %s", err, KeyRole)
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("%d requests were sent for bad jobs, want none", n)
	}
}

func TestUnreachable(t *testing.T) {
	sc := newSched(t, schedConfig("http://127.0.0.1:1", "", KeyKillAttempts, "2", KeyKillRetry, "1ms"))
	err := sc.Schedule(ctx(t), wordcount(1))
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Aurora scheduler at http://127.0.0.1:1") || !strings.Contains(err.Error(), KeySchedulerURI) {
		t.Errorf("Schedule: %v", err)
	}
	if err := sc.Kill(ctx(t), "wordcount"); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("Kill: %v", err)
	}
}

func TestAuthentication(t *testing.T) {
	f := fakeServer(t, auroratest.WithCredentials("alice", "s3cret", "www"))
	for _, tc := range []struct {
		user, password, role, want string
	}{
		{"", "", "www", "requires authentication: set egret.aurora.username"},
		{"alice", "nope", "www", `refused the credentials of user "alice" (check egret.aurora.username and egret.aurora.password) (HTTP 401)`},
		{"alice", "s3cret", "mallory", "Aurora denied it: Subject alice is not permitted to thrift.AuroraSchedulerManager:createJob:mallory:prod:wordcount."},
	} {
		sc := newSched(t, schedConfig(f.URL, "", KeyUsername, tc.user, KeyPassword, tc.password))
		job := wordcount(1)
		job.Role = tc.role
		err := sc.Schedule(ctx(t), job)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("user %q: error %v, want one with %q", tc.user, err, tc.want)
		}
	}
	if n := len(f.Tasks("mallory", "prod", "wordcount")); n != 0 {
		t.Errorf("a job of a role the user may not use has %d tasks", n)
	}
}

func TestWrongCluster(t *testing.T) {
	f := fakeServer(t, auroratest.WithCluster("west"))
	sc := newSched(t, schedConfig(f.URL, ""))
	err := sc.Schedule(ctx(t), wordcount(1))
	if err == nil || !strings.Contains(err.Error(), `serves cluster "west", not "devcluster"`) {
		t.Fatalf("Schedule: %v", err)
	}
	if slices.ContainsFunc(f.Requests(), func(r auroratest.Request) bool { return r.Method == "createJob" }) {
		t.Error("the job was created on the wrong cluster")
	}
}

// TestEnvironmentRejected: Aurora's answer to a job it refuses reaches the
// caller as is.
func TestEnvironmentRejected(t *testing.T) {
	f := fakeServer(t)
	sc := newSched(t, schedConfig(f.URL, ""))
	job := wordcount(1)
	job.Environ = "qa"
	err := sc.Schedule(ctx(t), job)
	if err == nil || !strings.Contains(err.Error(), `Aurora answered INVALID_REQUEST: Job environment qa doesn't match: ^(prod|devel|test|staging\d*)$`) {
		t.Fatalf("Schedule: %v", err)
	}
}

// TestRoleWithoutAccount: the tasks of a role the agents have no account
// for fail; Schedule says why and kills the job.
func TestRoleWithoutAccount(t *testing.T) {
	f := fakeServer(t, auroratest.WithUsers("www"))
	core := coreServer(t, fakeEgret)
	sc := newSched(t, schedConfig(f.URL, core.URL+"/egret"))
	job := wordcount(1)
	job.Role = "nobody"
	err := sc.Schedule(ctx(t), job)
	if err == nil || !strings.Contains(err.Error(), "Failed to initialize sandbox: Could not create sandbox because user does not exist: nobody") ||
		!strings.Contains(err.Error(), "the job was killed") {
		t.Fatalf("Schedule: %v", err)
	}
	assertNoActive(t, f, "nobody", "wordcount")
}

// TestNoRoom: instances no agent has room for stay pending; after the
// wait timeout Schedule reports Aurora's reasons, wraps spi.ErrCannotFit
// and kills the job.
func TestNoRoom(t *testing.T) {
	f := fakeServer(t, auroratest.WithCapacity(4, 64<<10, 64<<10))
	core := coreServer(t, fakeEgret)
	// The timeout also bounds the kill of the instance that did start: long
	// enough for its process to end on a loaded machine.
	sc := newSched(t, schedConfig(f.URL, core.URL+"/egret", KeyWaitTimeout, "5s"))
	err := sc.Schedule(ctx(t), wordcount(2)) // 3 instances of 2.5 cpus
	if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), "instance 2 is PENDING: Insufficient: CPU") ||
		!strings.Contains(err.Error(), "egret.aurora.wait.timeout") || !strings.Contains(err.Error(), "the job was killed") {
		t.Fatalf("Schedule: %v", err)
	}
	assertNoActive(t, f, "www", "wordcount")
}

// TestUpdateCannotResize: a plan whose containers need more than the
// running task config fails with spi.ErrUnsupported and changes nothing.
func TestUpdateCannotResize(t *testing.T) {
	f := fakeServer(t)
	core := coreServer(t, fakeEgret)
	sc := newSched(t, schedConfig(f.URL, core.URL+"/egret"))
	if err := sc.Schedule(ctx(t), wordcount(1)); err != nil {
		t.Fatal(err)
	}
	before := f.Running("www", "prod", "wordcount")
	err := sc.Update(ctx(t), wordcount(2)) // container 2 is larger than container 1
	if !errors.Is(err, spi.ErrUnsupported) || !strings.Contains(err.Error(), "container 2 needs more") {
		t.Fatalf("Update: %v", err)
	}
	sc.s.role, sc.s.environ = "www", "prod"
	err = sc.AddContainers(ctx(t), "wordcount", []plan.Container{{ID: 3, Required: plan.Resources{CPU: 1, RAM: 1 << 20, Disk: 1 << 20}}})
	if !errors.Is(err, spi.ErrUnsupported) || !strings.Contains(err.Error(), "must be 2") {
		t.Fatalf("AddContainers(3) to containers 0..1: %v", err)
	}
	for _, r := range f.Requests() {
		if r.Method == "addInstances" || r.Method == "killTasks" {
			t.Errorf("a refused update sent %s", r.Method)
		}
	}
	if after := f.Running("www", "prod", "wordcount"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused update changed the tasks from %v to %v", before, after)
	}
}

// TestKillRetriesTransientFailures: kill tries again while the scheduler
// answers 503 (no leader), up to egret.aurora.kill.max.attempts.
func TestKillRetriesTransientFailures(t *testing.T) {
	f := fakeServer(t)
	core := coreServer(t, fakeEgret)
	cfg := schedConfig(f.URL, core.URL+"/egret", KeyRole, "www", KeyEnviron, "prod", KeyKillAttempts, "3", KeyKillRetry, "1ms")
	sc := newSched(t, cfg)
	if err := sc.Schedule(ctx(t), wordcount(1)); err != nil {
		t.Fatal(err)
	}
	f.Unavailable(3)
	err := sc.Kill(ctx(t), "wordcount")
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("Kill with 3 attempts against 3 failures: %v", err)
	}
	f.Unavailable(2)
	if err := sc.Kill(ctx(t), "wordcount"); err != nil {
		t.Fatalf("Kill with 3 attempts against 2 failures: %v", err)
	}
	assertNoActive(t, f, "www", "wordcount")
}

func TestJobLinks(t *testing.T) {
	sc := newSched(t, schedConfig("http://aurora.example.com:8081/", "", KeyRole, "www", KeyEnviron, "prod"))
	links, err := sc.JobLinks(ctx(t), "wordcount")
	if err != nil || len(links) != 1 || links[0] != "http://aurora.example.com:8081/scheduler/www/prod/wordcount" {
		t.Fatalf("JobLinks: %q, %v", links, err)
	}
}

// TestRestartNotRunning: restarting a topology without a job is
// spi.ErrNotFound.
func TestRestartNotRunning(t *testing.T) {
	f := fakeServer(t)
	sc := newSched(t, schedConfig(f.URL, ""))
	if err := sc.Restart(ctx(t), "wordcount", 1); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("Restart: %v", err)
	}
}

func assertNoActive(t *testing.T, f *auroratest.Server, role, name string) {
	t.Helper()
	for _, tk := range f.Tasks(role, "prod", name) {
		switch tk.Status {
		case auroraapi.ScheduleStatus_KILLED, auroraapi.ScheduleStatus_FAILED, auroraapi.ScheduleStatus_FINISHED, auroraapi.ScheduleStatus_LOST:
		default:
			t.Errorf("task %s is %s, want every task ended", tk.ID, tk.Status)
		}
	}
	if live := f.Live(); len(live) > 0 {
		t.Errorf("task processes %v still run", live)
	}
}

// TestErrorsAreOneLine: several problems are reported at once, on one
// line.
func TestErrorsAreOneLine(t *testing.T) {
	cfg := schedConfig("aurora:8081", "")
	cfg[KeyKillAttempts] = "0"
	_, err := New(cfg, nil)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), KeySchedulerURI) || !strings.Contains(err.Error(), KeyKillAttempts) {
		t.Errorf("two bad keys: %q, want both on one line", err)
	}
	sc := newSched(t, schedConfig("http://127.0.0.1:1", "", KeyRole, "", KeyEnviron, ""))
	job := wordcount(1)
	job.Role, job.Environ = "", ""
	err = sc.Schedule(ctx(t), job)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "no Aurora role") || !strings.Contains(err.Error(), "no Aurora environment") {
		t.Errorf("no role, no environment: %q, want both on one line", err)
	}
}

// TestNotAurora: an address that is not an Aurora scheduler says so.
func TestNotAurora(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	sc := newSched(t, schedConfig(srv.URL, ""))
	err := sc.Schedule(ctx(t), wordcount(1))
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/api answered HTTP 404") {
		t.Errorf("Schedule against a web server without /api: %v", err)
	}
}
