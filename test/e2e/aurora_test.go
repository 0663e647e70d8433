package e2e

// Topologies on Aurora (docs/schedulers/aurora.md): the egret CLI submits to
// a fake Aurora scheduler (schedulers/aurora/auroratest) through the real
// Thrift API, and the fake runs every instance Thermos-like as local
// processes: fetch_core downloads the egret binary from the package server
// with curl, then `egret executor` fetches the topology package and runs
// the container. Everything Aurora-specific runs the production code path.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
	"github.com/egret-stream/egret/schedulers/aurora/auroratest"
	"github.com/egret-stream/egret/schedulers/aurora/thermos"
	egrethttp "github.com/egret-stream/egret/uploaders/http"
)

// auroraCluster is an aurora/www/prod installation of a test: its fake
// Aurora (whose agent has a Unix account for www only) and package server.
type auroraCluster struct {
	*cluster
	fake *auroratest.Server
	pkgs string // the package server's /packages/ URL
}

func newAuroraCluster(t *testing.T, fakeOpts ...auroratest.Option) *auroraCluster {
	t.Helper()
	c := newCluster(t, "aurora/www/prod")
	fake := auroratest.New(t, append([]auroratest.Option{
		auroratest.WithUsers("www"),
		auroratest.WithRescheduleDelay(200 * time.Millisecond),
		auroratest.WithSandboxRoot(filepath.Join(c.home, "aurora")),
	}, fakeOpts...)...)
	srv := httptest.NewServer(egrethttp.NewServer(filepath.Join(c.home, "packages"), zap.NewNop()))
	t.Cleanup(srv.Close)
	a := &auroraCluster{cluster: c, fake: fake, pkgs: srv.URL + "/packages/"}
	t.Cleanup(func() {
		if t.Failed() {
			a.dumpSandboxLogs()
		}
	})
	// The agents download egret like any file from the package server.
	core := a.pkgs + "egret"
	putFile(t, core, binary(t, "egret"))
	c.props = append(c.props,
		"egret.aurora.scheduler.uri="+fake.URL,
		"egret.aurora.wait.timeout=2m",
		"egret.aurora.kill.retry.interval=200ms",
		"egret.statemgr=localfs",
		"egret.statemgr.root.path="+filepath.Join(c.home, "state", c.name),
		"egret.uploader.http.uri="+a.pkgs,
		"egret.package.core.uri="+core,
		"egret.package.goos="+runtime.GOOS,
		"egret.package.goarch="+runtime.GOARCH,
	)
	return a
}

// putFile uploads a file to the package server.
func putFile(t *testing.T, url, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req, err := http.NewRequest(http.MethodPut, url, f)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("upload %s: %v", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("upload %s to %s: %s", path, url, resp.Status)
	}
}

// dumpSandboxLogs logs the end of every process log in the sandboxes.
func (a *auroraCluster) dumpSandboxLogs() {
	var files []string
	_ = filepath.Walk(filepath.Join(a.home, "aurora"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && (strings.HasSuffix(p, ".log") || strings.Contains(p, "/.logs/")) {
			files = append(files, p)
		}
		return nil
	})
	// The most recent ones: a flapping task leaves many.
	sort.Slice(files, func(i, j int) bool { return modTime(files[i]).After(modTime(files[j])) })
	if len(files) > 24 {
		files = files[:24]
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 10 {
			lines = lines[len(lines)-10:]
		}
		a.t.Logf("== %s\n%s", strings.TrimPrefix(f, a.home), strings.Join(lines, "\n"))
	}
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// running returns the RUNNING tasks of a topology's job: instance → task id.
func (a *auroraCluster) running(topology string) map[int]string {
	return a.fake.Running("www", "prod", topology)
}

// waitTasks waits until exactly the instances 0..n of topology run, each
// with a task other than the one it had in before.
func (a *auroraCluster) waitTasks(topology string, n int, before map[int]string, replaced ...int) map[int]string {
	a.t.Helper()
	var now map[int]string
	await(a.t, fmt.Sprintf("instances 0..%d of Aurora job %s to run", n, topology), recoverTimeout, func() (bool, string) {
		now = a.running(topology)
		ok := len(now) == n+1
		for i := 0; i <= n; i++ {
			ok = ok && now[i] != ""
		}
		for _, i := range replaced {
			ok = ok && now[i] != before[i]
		}
		return ok, fmt.Sprintf("running %v", now)
	})
	return now
}

// waitJobGone waits until no task of topology is active and no task
// process runs.
func (a *auroraCluster) waitJobGone(topology string) {
	a.t.Helper()
	await(a.t, "every Aurora task to end", recoverTimeout, func() (bool, string) {
		var active []string
		for _, tk := range a.fake.Tasks("www", "prod", topology) {
			switch tk.Status {
			case auroraapi.ScheduleStatus_KILLED, auroraapi.ScheduleStatus_FAILED, auroraapi.ScheduleStatus_FINISHED, auroraapi.ScheduleStatus_LOST:
			default:
				active = append(active, fmt.Sprintf("%d:%s", tk.Instance, tk.Status))
			}
		}
		live := a.fake.Live()
		return len(active) == 0 && len(live) == 0, fmt.Sprintf("active tasks %v, task processes %v", active, live)
	})
	a.waitGone(a.t)
}

// TestAuroraWordCount: word count submitted to Aurora counts; it keeps
// counting when Aurora kills a task (and reschedules it) and while the
// Aurora scheduler is down; `update` adds a container as an Aurora
// instance; `restart` replaces one instance's task; `kill` leaves no task,
// no process and no state.
func TestAuroraWordCount(t *testing.T) {
	a := newAuroraCluster(t)
	w := startWordCount(t, a.cluster, 2)
	tasks := a.waitTasks(w.name, 2, nil)
	for i := 0; i <= 2; i++ {
		for _, tk := range a.fake.Tasks("www", "prod", w.name) {
			if tk.ID == tasks[i] {
				if _, err := os.Stat(filepath.Join(tk.Sandbox, "egret")); err != nil {
					t.Errorf("instance %d: the egret binary was not fetched into the sandbox: %v", i, err)
				}
			}
		}
	}

	// A task's processes die (the machine kills the container): Aurora
	// reschedules the instance as a new task and the topology recovers.
	if err := a.fake.KillTask("www", "prod", w.name, 1); err != nil {
		t.Fatal(err)
	}
	tasks = a.waitTasks(w.name, 2, tasks, 1)
	w.waitCountsGrow("every count task to count after Aurora rescheduled instance 1", w.countTasks())

	// The Aurora scheduler fails over: the topology keeps counting, and a
	// command needing it fails with one line.
	a.fake.Stop()
	w.waitCountsGrow("every count task to count while the Aurora scheduler is down", w.countTasks())
	_, stderr, code := a.egret("restart", a.name, w.name, "2")
	oneLineError(t, "restart while the Aurora scheduler is down", stderr, code, 1, "cannot reach the Aurora scheduler", "egret.aurora.scheduler.uri")
	if err := a.fake.Start(); err != nil {
		t.Fatal(err)
	}

	// Scale out: container 3 becomes Aurora instance 3.
	a.mustEgret("update", a.name, w.name, "--container-number", "3")
	tasks = a.waitTasks(w.name, 3, tasks)
	pp, _, err := w.store.PackingPlan(context.Background(), w.name)
	if err != nil {
		t.Fatal(err)
	}
	w.plan, w.containers = pp, len(pp.Containers)
	await(t, "the physical plan to place 3 stream managers", recoverTimeout, func() (bool, string) {
		pp, err := w.store.PhysicalPlan(context.Background(), w.name)
		if err != nil {
			return false, err.Error()
		}
		return len(pp.GetStmgrs()) == 3, fmt.Sprintf("stmgrs %v", pp.GetStmgrs())
	})
	w.waitCountsGrow("every count task to count on 3 containers", w.countTasks())

	// Restart one container through Aurora: a new task for instance 2.
	a.mustEgret("restart", a.name, w.name, "2")
	a.waitTasks(w.name, 3, tasks, 2)
	w.waitCountsGrow("every count task to count after restarting container 2", w.countTasks())

	a.mustEgret("kill", a.name, w.name)
	a.waitJobGone(w.name)
	if names, err := w.store.Topologies(context.Background()); err != nil || len(names) != 0 {
		t.Errorf("topology state left after kill: %v (%v)", names, err)
	}
}

// TestAuroraAtLeastOnce: while messages flow, Aurora loses a task (its
// processes are killed) and the Aurora scheduler fails over; every message
// is still acked and every copy reached the sink.
func TestAuroraAtLeastOnce(t *testing.T) {
	a := newAuroraCluster(t)
	const n = 40000
	r := startAckCheck(t, a.cluster, "ackcheck", n, "--rate", "8000", "--timeout", "5s")
	tasks := a.waitTasks(r.name, 2, nil)
	r.waitAcked("a fifth of the messages to be acked", n/5, time.Minute)

	a.fake.Stop()
	if err := a.fake.KillTask("www", "prod", r.name, 1); err != nil {
		t.Fatal(err)
	}
	killed := r.check()
	if killed.Acked >= n {
		t.Fatalf("every message was acked before the fault: it came too late to test anything")
	}
	t.Logf("killed instance 1 with %d of %d messages acked", killed.Acked, n)
	a.waitTasks(r.name, 2, tasks, 1)
	if err := a.fake.Start(); err != nil {
		t.Fatal(err)
	}
	res := r.waitAcked("every message to be acked after the fault", n, allAckedTimeout)
	t.Logf("%s", res)
	if !res.Complete() {
		t.Errorf("messages lost after Aurora lost a task: %s", res)
	}
	a.mustEgret("kill", a.name, r.name)
	a.waitJobGone(r.name)
}

// TestAuroraSubmitErrors: what Aurora refuses fails the submission with
// one line and leaves no job, no process, no state and no package behind.
func TestAuroraSubmitErrors(t *testing.T) {
	a := newAuroraCluster(t, auroratest.WithCredentials("alice", "s3cret", "www"))
	wc := binary(t, "wordcount")
	withAuth := []string{"--config-property", "egret.aurora.username=alice", "--config-property", "egret.aurora.password=s3cret"}

	cases := []struct {
		name     string
		args     []string
		mentions []string
	}{
		{"no credentials", []string{"submit", a.name, wc}, []string{"requires authentication", "egret.aurora.username"}},
		{"wrong password", []string{"--config-property", "egret.aurora.username=alice", "--config-property", "egret.aurora.password=nope", "submit", a.name, wc},
			[]string{`refused the credentials of user "alice"`}},
		{"unknown environment", append(withAuth, "submit", "aurora/www/qa", wc), []string{"Job environment qa doesn't match"}},
		{"role without permission", append(withAuth, "submit", "aurora/mallory/prod", wc), []string{"Aurora denied it", "alice is not permitted"}},
		{"unreachable scheduler", append(withAuth, "--config-property", "egret.aurora.scheduler.uri=http://127.0.0.1:1", "submit", a.name, wc),
			[]string{"cannot reach the Aurora scheduler at http://127.0.0.1:1"}},
		{"wrong cluster", append(withAuth, "--config-property", "egret.aurora.cluster=west", "submit", a.name, wc),
			[]string{`serves cluster "devcluster", not "west"`}},
	}
	for _, tc := range cases {
		_, stderr, code := a.egret(tc.args...)
		oneLineError(t, tc.name, stderr, code, 1, tc.mentions...)
	}

	// A role the agents have no Unix account for: Aurora accepts the job,
	// its tasks fail; submit says why and kills the job.
	b := newAuroraCluster(t, auroratest.WithUsers("www"))
	_, stderr, code := b.egret("submit", "aurora/nobody/prod", wc)
	oneLineError(t, "role without a Unix account", stderr, code, 1, "user does not exist: nobody", "the job was killed")
	for _, c := range []*auroraCluster{a, b} {
		for _, role := range []string{"www", "mallory", "nobody"} {
			for _, tk := range c.fake.Tasks(role, "prod", "wordcount") {
				if tk.Status != auroraapi.ScheduleStatus_KILLED && tk.Status != auroraapi.ScheduleStatus_FAILED {
					t.Errorf("task %s left %s after a failed submission", tk.ID, tk.Status)
				}
			}
		}
		c.waitGone(t)
		if names, err := c.store().Topologies(context.Background()); err != nil || len(names) != 0 {
			t.Errorf("topology state left after failed submissions: %v (%v)", names, err)
		}
		pkgs, _ := filepath.Glob(filepath.Join(c.home, "packages", "wordcount-*"))
		sort.Strings(pkgs)
		if len(pkgs) != 0 {
			t.Errorf("uploaded packages left after failed submissions: %v", pkgs)
		}
	}
}

// TestAuroraDryRun: --dry-run-format aurora prints the Thermos job
// (aurora job create --read-json) and creates nothing in Aurora.
func TestAuroraDryRun(t *testing.T) {
	a := newAuroraCluster(t)
	out := a.mustEgret("submit", a.name, binary(t, "wordcount"), "--dry-run", "--dry-run-format", "aurora", "--", "--containers", "2")
	var j thermos.Job
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &j); err != nil {
		t.Fatalf("the dry run printed no Thermos job: %v\n%s", err, out)
	}
	var procs []string
	for _, p := range j.Task.Processes {
		procs = append(procs, p.Name)
	}
	if j.Name != "wordcount" || j.Role != "www" || j.Environment != "prod" || j.Cluster != "devcluster" || j.Instances != 3 ||
		strings.Join(procs, ",") != "fetch_core,executor" || !strings.Contains(j.Task.Processes[1].Cmdline, "--package-uri "+a.pkgs+"wordcount-www-") {
		t.Errorf("dry run job: %+v", j)
	}
	for _, r := range a.fake.Requests() {
		t.Errorf("the dry run sent %s to Aurora", r.Method)
	}
	if names, err := a.store().Topologies(context.Background()); err != nil || len(names) != 0 {
		t.Errorf("the dry run wrote state: %v (%v)", names, err)
	}
	if pkgs, _ := filepath.Glob(filepath.Join(a.home, "packages", "wordcount-*")); len(pkgs) != 0 {
		t.Errorf("the dry run uploaded %v", pkgs)
	}
}
