package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/executor/internal/cgroup"
	"github.com/egret-stream/egret/internal/fetch"
	"github.com/egret-stream/egret/internal/logfile"
	"github.com/egret-stream/egret/statemgr/memory"
)

func TestArgs(t *testing.T) {
	p := Params{
		Egret: "/bin/egret", TopologyName: "wc", TopologyID: "wc-1", Container: 2, StmgrPort: 7000,
		Paths: Paths{
			WorkDir: "/w", ConfigFile: "/w/package/cluster.json", TopologyBinary: "/w/package/topology",
			StmgrSocket: "/w/stmgr.sock", MetricsSocket: "/w/metricsmgr.sock", MetricsFile: "/w/metrics.jsonl", CkptMgrSocket: "/w/ckptmgr.sock",
		},
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"tmanager", TManagerArgs(p), []string{"/bin/egret", "tmanager", "--topology", "wc", "--topology-id", "wc-1", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json"}},
		{"healthmgr", HealthMgrArgs(p), []string{"/bin/egret", "healthmgr", "--topology", "wc", "--topology-id", "wc-1", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json"}},
		{"metricsmgr", MetricsMgrArgs(p), []string{"/bin/egret", "metricsmgr", "--topology", "wc", "--container", "2",
			"--socket", "/w/metricsmgr.sock", "--metrics-file", "/w/metrics.jsonl", "--config", "/w/package/cluster.json"}},
		{"stmgr", StmgrArgs(p, false), []string{"/bin/egret", "stmgr", "--topology", "wc", "--topology-id", "wc-1", "--container", "2",
			"--socket", "/w/stmgr.sock", "--port", "7000", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json"}},
		{"stmgr effectively-once", StmgrArgs(p, true), []string{"/bin/egret", "stmgr", "--topology", "wc", "--topology-id", "wc-1", "--container", "2",
			"--socket", "/w/stmgr.sock", "--port", "7000", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json",
			"--ckptmgr-socket", "/w/ckptmgr.sock"}},
		{"ckptmgr", CkptMgrArgs(p), []string{"/bin/egret", "ckptmgr", "--topology", "wc", "--container", "2",
			"--socket", "/w/ckptmgr.sock", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json"}},
		{"instance", InstanceArgs(p, 7, false), []string{"/w/package/topology", "--instance", "--task", "7", "--container", "2",
			"--topology-id", "wc-1", "--stmgr-socket", "/w/stmgr.sock", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json"}},
		{"instance effectively-once", InstanceArgs(p, 7, true), []string{"/w/package/topology", "--instance", "--task", "7", "--container", "2",
			"--topology-id", "wc-1", "--stmgr-socket", "/w/stmgr.sock", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json",
			"--ckptmgr-socket", "/w/ckptmgr.sock"}},
		{"shell", ShellArgs(p), []string{"/bin/egret", "shell", "--topology", "wc", "--topology-id", "wc-1", "--container", "2",
			"--work-dir", "/w", "--metrics-socket", "/w/metricsmgr.sock", "--config", "/w/package/cluster.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.got, tc.want) {
				t.Errorf("args\n got %q\nwant %q", tc.got, tc.want)
			}
		})
	}
}

func TestComputePaths(t *testing.T) {
	short := filepath.Join(t.TempDir(), "w")
	p, err := ComputePaths(short, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.StmgrSocket != filepath.Join(short, "stmgr.sock") || p.MetricsSocket != filepath.Join(short, "metricsmgr.sock") ||
		p.CkptMgrSocket != filepath.Join(short, "ckptmgr.sock") || p.SocketDir != "" {
		t.Errorf("short work dir: sockets %s %s (dir %q)", p.StmgrSocket, p.MetricsSocket, p.SocketDir)
	}
	if p.ConfigFile != filepath.Join(short, "package", "cluster.json") {
		t.Errorf("config file %s", p.ConfigFile)
	}

	long := filepath.Join(t.TempDir(), strings.Repeat("x", 120))
	p, err = ComputePaths(long, "conf/c.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{p.StmgrSocket, p.MetricsSocket, p.CkptMgrSocket} {
		if len(s) > maxSocketPath || !strings.HasPrefix(s, os.TempDir()) {
			t.Errorf("long work dir: socket %s (%d bytes) not short under the temp dir", s, len(s))
		}
	}
	if p.StmgrSocket == p.MetricsSocket || p.CkptMgrSocket == p.StmgrSocket || p.CkptMgrSocket == p.MetricsSocket {
		t.Error("sockets collide")
	}
	if p.ConfigFile != filepath.Join(long, "conf", "c.json") {
		t.Errorf("relative config file resolved to %s", p.ConfigFile)
	}
	again, _ := ComputePaths(long, "")
	if again.StmgrSocket != p.StmgrSocket {
		t.Error("socket path of a work dir is not stable across executor restarts")
	}
	if _, err := ComputePaths("", ""); err == nil {
		t.Error("empty work dir accepted")
	}
}

func TestSettings(t *testing.T) {
	s, err := parseSettings(spi.Config{})
	if err != nil || s.backoffInitial != time.Second || s.backoffMax != 30*time.Second || s.resetAfter != time.Minute || s.stopGrace != 10*time.Second ||
		s.logs != (logfile.Limits{MaxSize: 100 << 20, MaxFiles: 5}) {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	if s.cgroups != CgroupsAuto || s.monitorEvery != 2*time.Second || s.maxProcs != 0 {
		t.Fatalf("isolation defaults: cgroups %q, monitor %s, gomaxprocs %d", s.cgroups, s.monitorEvery, s.maxProcs)
	}
	s, err = parseSettings(spi.Config{KeyLogMaxSize: "64KiB", KeyLogMaxFiles: "2"})
	if err != nil || s.logs != (logfile.Limits{MaxSize: 64 << 10, MaxFiles: 2}) {
		t.Fatalf("log limits: %+v %v", s.logs, err)
	}
	s, err = parseSettings(spi.Config{KeyCgroups: "off", KeyMonitorInterval: "250ms", KeyInstanceMaxProcs: "2"})
	if err != nil || s.cgroups != CgroupsOff || s.monitorEvery != 250*time.Millisecond || s.maxProcs != 2 {
		t.Fatalf("isolation settings: %+v %v", s, err)
	}
	for _, bad := range []spi.Config{
		{KeyBackoffInitial: "-1s"},
		{KeyStopGrace: "soon"},
		{KeyBackoffInitial: "10s", KeyBackoffMax: "1s"},
		{KeyLogMaxSize: "0"},
		{KeyLogMaxSize: "big"},
		{KeyLogMaxFiles: "-1"},
		{KeyLogMaxFiles: "two"},
		{KeyCgroups: "maybe"},
		{KeyMonitorInterval: "0s"},
		{KeyInstanceMaxProcs: "-1"},
	} {
		if _, err := parseSettings(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestContainerZero(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}, 2: {"count:2"}}))
	ready := make(chan struct{})
	cfg := v.config(0)
	cfg.Ready = func() { close(ready) }
	e, _, errc := v.run(cfg)
	tm := v.waitReady(e, "tmanager", "tmanager")
	mm := v.waitReady(e, "metricsmgr", "metricsmgr")
	sh := v.waitReady(e, "shell", "shell")
	<-ready

	cf := filepath.Join(e.Paths().WorkDir, "package", "cluster.json")
	w := e.Paths().WorkDir
	wantTM := []string{"tmanager", "--topology", "wc", "--topology-id", "wc-1", "--metrics-socket", filepath.Join(w, "metricsmgr.sock"), "--config", cf}
	if got := v.argv("tmanager", tm); !slices.Equal(got, wantTM) {
		t.Errorf("tmanager args\n got %q\nwant %q", got, wantTM)
	}
	wantMM := []string{"metricsmgr", "--topology", "wc", "--container", "0", "--socket", filepath.Join(w, "metricsmgr.sock"),
		"--metrics-file", filepath.Join(w, "metrics.jsonl"), "--config", cf}
	if got := v.argv("metricsmgr", mm); !slices.Equal(got, wantMM) {
		t.Errorf("metricsmgr args\n got %q\nwant %q", got, wantMM)
	}
	wantSH := []string{"shell", "--topology", "wc", "--topology-id", "wc-1", "--container", "0", "--work-dir", w, "--metrics-socket", filepath.Join(w, "metricsmgr.sock"), "--config", cf}
	if got := v.argv("shell", sh); !slices.Equal(got, wantSH) {
		t.Errorf("shell args\n got %q\nwant %q", got, wantSH)
	}
	if names := statusNames(e); !slices.Equal(names, []string{"metricsmgr", "shell", "tmanager"}) {
		t.Errorf("container 0 runs %v", names)
	}
	pf := readPids(t, filepath.Join(w, "pids.json"))
	if pf.Executor != os.Getpid() || pf.Processes["tmanager"] != tm || pf.Processes["metricsmgr"] != mm || pf.Processes["shell"] != sh || len(pf.Processes) != 3 {
		t.Errorf("pids.json = %+v, want tmanager %d metricsmgr %d shell %d", pf, tm, mm, sh)
	}
	// The status the shell serves is in pids.json too.
	var stNames []string
	for _, st := range pf.Status {
		stNames = append(stNames, st.Name)
		if st.State != StateRunning || st.PID != pf.Processes[st.Name] {
			t.Errorf("pids.json status of %s: %+v", st.Name, st)
		}
	}
	if !slices.Equal(stNames, []string{"metricsmgr", "shell", "tmanager"}) {
		t.Errorf("pids.json status names %v", stNames)
	}
	// The executor copies the child's output into its log.
	waitFor(t, "the tmanager's output in tmanager.log", func() bool {
		logb, _ := os.ReadFile(filepath.Join(w, "logs", "tmanager.log"))
		return strings.Contains(string(logb), "starting tmanager") && strings.Contains(string(logb), "fake tmanager: running")
	})

	// Killing the topology deletes the plan: the executor stops everything.
	if err := state.New(v.sm).Kill(context.Background(), testTopology); err != nil {
		t.Fatal(err)
	}
	if err := waitErr(t, errc); err != nil {
		t.Fatalf("Run after kill = %v, want nil", err)
	}
	for _, pid := range []int{tm, mm} {
		if alive(pid) {
			t.Errorf("pid %d survived", pid)
		}
	}
}

// TestLogsRotate: a chatty process's log is rotated at
// egret.logging.max.size and at most egret.logging.max.files rotated files
// stay, so its logs hold a bounded amount whatever it writes.
func TestLogsRotate(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	const lines = 8000 // 512000 bytes
	v.control("chatter-tmanager", strconv.Itoa(lines))
	cfg := v.config(0)
	cfg.Settings[KeyLogMaxSize] = "1KiB"
	cfg.Settings[KeyLogMaxFiles] = "2"
	e, _, _ := v.run(cfg)
	v.waitReady(e, "tmanager", "tmanager")
	log := filepath.Join(e.Paths().LogsDir, "tmanager.log")
	// The executor copies the output in pieces of at most 32 KiB; the last
	// line follows every chatter line.
	waitFor(t, "the tmanager's last line in its log", func() bool {
		b, _ := os.ReadFile(log)
		return strings.HasSuffix(string(b), "fake tmanager: running\n")
	})
	names, _ := filepath.Glob(log + "*")
	if want := []string{log, log + ".1", log + ".2"}; !slices.Equal(names, want) {
		t.Fatalf("log files %v, want %v", names, want)
	}
	var total int64
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 32<<10 {
			t.Errorf("%s is %d bytes: above both the limit and one piece of output", n, st.Size())
		}
		total += st.Size()
	}
	if total >= lines*64/4 {
		t.Errorf("the logs hold %d of the %d bytes written", total, lines*64)
	}
}

func statusNames(e *Executor) []string {
	var names []string
	for _, s := range e.Status() {
		names = append(names, s.Name)
	}
	return names
}

func TestContainerProcesses(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1", "count:3"}, 2: {"count:2"}}))
	cfg := v.config(1)
	cfg.StmgrPort = 7001
	e, _, _ := v.run(cfg)
	pids := map[string]int{
		"metricsmgr":       v.waitReady(e, "metricsmgr", "metricsmgr"),
		"stmgr":            v.waitReady(e, "stmgr", "stmgr"),
		"instance-word-1":  v.waitReady(e, "instance-word-1", "task-1"),
		"instance-count-3": v.waitReady(e, "instance-count-3", "task-3"),
	}
	if names := statusNames(e); !slices.Equal(names, []string{"instance-count-3", "instance-word-1", "metricsmgr", "shell", "stmgr"}) {
		t.Errorf("container 1 runs %v", names)
	}
	w := e.Paths().WorkDir
	ss, ms, cf := filepath.Join(w, "stmgr.sock"), filepath.Join(w, "metricsmgr.sock"), filepath.Join(w, "package", "cluster.json")
	checks := []struct {
		fake string
		pid  int
		want []string
	}{
		{"metricsmgr", pids["metricsmgr"], []string{"metricsmgr", "--topology", "wc", "--container", "1", "--socket", ms,
			"--metrics-file", filepath.Join(w, "metrics.jsonl"), "--config", cf}},
		{"stmgr", pids["stmgr"], []string{"stmgr", "--topology", "wc", "--topology-id", "wc-1", "--container", "1",
			"--socket", ss, "--port", "7001", "--metrics-socket", ms, "--config", cf}},
		{"task-1", pids["instance-word-1"], []string{"--instance", "--task", "1", "--container", "1", "--topology-id", "wc-1",
			"--stmgr-socket", ss, "--metrics-socket", ms, "--config", cf}},
		{"task-3", pids["instance-count-3"], []string{"--instance", "--task", "3", "--container", "1", "--topology-id", "wc-1",
			"--stmgr-socket", ss, "--metrics-socket", ms, "--config", cf}},
	}
	for _, c := range checks {
		if got := v.argv(c.fake, c.pid); !slices.Equal(got, c.want) {
			t.Errorf("%s args\n got %q\nwant %q", c.fake, got, c.want)
		}
	}
	pf := readPids(t, filepath.Join(w, "pids.json"))
	for name, pid := range pids {
		if pf.Processes[name] != pid {
			t.Errorf("pids.json[%s] = %d, want %d", name, pf.Processes[name], pid)
		}
	}
	if got := v.fakePids("argv", "task-2"); len(got) != 0 {
		t.Errorf("task 2 of container 2 was started here: %v", got)
	}
}

func TestRestartAfterKill(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	e, _, _ := v.run(v.config(1))
	old := v.waitReady(e, "stmgr", "stmgr")
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var now int
	waitFor(t, "a new stmgr", func() bool {
		now = v.waitReadyNoFail(e, "stmgr", "stmgr")
		return now != 0 && now != old
	})
	if alive(old) {
		t.Errorf("old stmgr %d still alive", old)
	}
	if n := e.Restarts("stmgr"); n != 1 {
		t.Errorf("stmgr restarts = %d, want 1", n)
	}
	// pids.json carries the restart for the shell.
	waitFor(t, "the restart in pids.json", func() bool {
		for _, st := range readPids(t, filepath.Join(e.Paths().WorkDir, "pids.json")).Status {
			if st.Name == "stmgr" {
				return st.Restarts == 1 && st.PID == now && st.State == StateRunning
			}
		}
		return false
	})
	// The event of the restart may follow pids.json.
	want := []EventKind{EventStarted, EventExited, EventRestarting, EventStarted}
	var evs []Event
	waitFor(t, "the restarted stmgr's started event", func() bool {
		evs = v.eventsOf("stmgr")
		return len(evs) >= len(want)
	})
	kinds := make([]EventKind, len(evs))
	for i, ev := range evs {
		kinds[i] = ev.Kind
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("stmgr events %v, want %v", kinds, want)
	}
	if evs[1].PID != old || evs[1].ExitCode != -1 || !strings.Contains(evs[1].Reason, "killed") {
		t.Errorf("exit event %+v", evs[1])
	}
	if evs[2].Delay != 50*time.Millisecond {
		t.Errorf("first restart delay %s, want the initial backoff 50ms", evs[2].Delay)
	}
	if evs[3].PID != now {
		t.Errorf("started event pid %d, want %d", evs[3].PID, now)
	}
	// Other processes were not touched.
	if n := len(v.fakePids("argv", "task-1")); n != 1 {
		t.Errorf("instance started %d times", n)
	}
}

// waitReadyNoFail returns the pid of process if it is running and ready, 0
// otherwise.
func (v *env) waitReadyNoFail(e *Executor, process, fake string) int {
	st, ok := statusOf(e, process)
	if ok && st.State == StateRunning && st.PID > 0 && v.ready(fake, st.PID) {
		return st.PID
	}
	return 0
}

func TestBackoffGrows(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	v.control("exit-tmanager", "1")
	cfg := v.config(0)
	cfg.Settings[KeyBackoffInitial] = "20ms"
	cfg.Settings[KeyBackoffMax] = "80ms"
	e, _, _ := v.run(cfg)

	restarts := func() []Event { return v.eventsOf("tmanager", EventRestarting) }
	waitFor(t, "5 restarts of a crashing tmanager", func() bool { return len(restarts()) >= 5 })
	want := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond}
	for i, ev := range restarts()[:5] {
		if ev.Delay != want[i] {
			t.Errorf("restart %d: backoff %s, want %s (doubling from the initial, capped at the max)", i+1, ev.Delay, want[i])
		}
		if !strings.Contains(ev.Reason, "exit status 1") {
			t.Errorf("restart %d: reason %q", i+1, ev.Reason)
		}
	}
	for _, ev := range v.eventsOf("tmanager", EventExited) {
		if ev.ExitCode != 1 {
			t.Errorf("exit event %+v, want code 1", ev)
		}
	}
	if st, _ := statusOf(e, "tmanager"); st.Restarts < 5 || !strings.Contains(st.LastExit, "exit status 1") {
		t.Errorf("status %+v", st)
	}

	// Once the crash cause is gone, the process stays up.
	if err := os.Remove(filepath.Join(v.fake, "exit-tmanager")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tmanager up", func() bool { return v.waitReadyNoFail(e, "tmanager", "tmanager") != 0 })
}

func TestRestartPolicy(t *testing.T) {
	set := settings{backoffInitial: time.Second, backoffMax: 4 * time.Second, resetAfter: time.Minute}
	type exit struct {
		kind   Kind
		code   int
		uptime time.Duration
		want   time.Duration
		layout bool
	}
	short := time.Millisecond
	tests := []struct {
		name  string
		exits []exit
	}{
		{"doubles up to the cap", []exit{
			{KindStmgr, 1, short, time.Second, false},
			{KindStmgr, -1, short, 2 * time.Second, false},
			{KindStmgr, 1, short, 4 * time.Second, false},
			{KindStmgr, 1, short, 4 * time.Second, false},
		}},
		{"a long run resets the backoff", []exit{
			{KindStmgr, 1, short, time.Second, false},
			{KindStmgr, 1, short, 2 * time.Second, false},
			{KindStmgr, 1, short, 4 * time.Second, false},
			{KindStmgr, 1, time.Minute, time.Second, false},
			{KindStmgr, 1, short, 2 * time.Second, false},
		}},
		{"exit 3 of an instance restarts at once", []exit{
			{KindInstance, 1, short, time.Second, false},
			{KindInstance, 3, time.Hour, 0, true},
			{KindInstance, 1, short, 2 * time.Second, false},
		}},
		{"exit 3 twice in a row backs off", []exit{
			{KindInstance, 3, short, 0, true},
			{KindInstance, 3, short, time.Second, false},
			{KindInstance, 3, short, 2 * time.Second, false},
			{KindInstance, 3, 2 * time.Second, 0, true},
		}},
		{"exit 3 of a daemon is an ordinary crash", []exit{
			{KindStmgr, 3, time.Hour, time.Second, false},
			{KindTManager, 3, short, 2 * time.Second, false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := restartPolicy{set: set}
			for i, x := range tc.exits {
				got, layout := r.next(x.kind, x.code, x.uptime)
				if got != x.want || layout != x.layout {
					t.Errorf("exit %d (%s code %d after %s): delay %s layout %v, want %s %v", i+1, x.kind, x.code, x.uptime, got, layout, x.want, x.layout)
				}
			}
		})
	}
}

func TestExitCode3RestartsAtOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	v.control("exitonce-task-1", "3")
	v.control("exitonce-stmgr", "3")
	cfg := v.config(1)
	// An ordinary restart would wait an hour: only the exit-3 path restarts
	// within the test.
	cfg.Settings[KeyBackoffInitial] = "1h"
	cfg.Settings[KeyBackoffMax] = "1h"
	e, _, _ := v.run(cfg)
	pid := v.waitReady(e, "instance-word-1", "task-1")
	runs := v.fakePids("argv", "task-1")
	if len(runs) != 2 || !slices.Contains(runs, pid) {
		t.Fatalf("instance runs %v (ready %d), want the exit-3 run and the one running now", runs, pid)
	}
	rs := v.eventsOf("instance-word-1", EventRestarting)
	if len(rs) != 1 || rs[0].Delay != 0 || !strings.Contains(rs[0].Reason, "layout") {
		t.Errorf("instance restart events %+v, want one immediate layout restart", rs)
	}
	if n := e.Restarts("instance-word-1"); n != 1 {
		t.Errorf("instance restarts = %d", n)
	}
	// Exit code 3 is only special for instances: the stmgr waits its backoff.
	waitFor(t, "stmgr in backoff", func() bool {
		st, _ := statusOf(e, "stmgr")
		return st.State == StateBackoff && st.Restarts == 1
	})
	if rs := v.eventsOf("stmgr", EventRestarting); len(rs) != 1 || rs[0].Delay != time.Hour {
		t.Errorf("stmgr restart events %+v, want one with the 1h backoff", rs)
	}
	if st, _ := statusOf(e, "stmgr"); st.PID != 0 || !strings.Contains(st.LastExit, "exit status 3") {
		t.Errorf("stmgr status %+v", st)
	}
}

// TestPackingPlanChange: the executor stops the instances that left its
// container and starts the new ones; the unchanged instances and the
// stream manager keep running (in an effectively-once topology the stream
// manager restarts).
func TestPackingPlanChange(t *testing.T) {
	t.Parallel()
	for _, eo := range []bool{false, true} {
		t.Run(fmt.Sprintf("effectively-once=%v", eo), func(t *testing.T) {
			t.Parallel()
			testPackingPlanChange(t, eo)
		})
	}
}

func testPackingPlanChange(t *testing.T, eo bool) {
	v := newEnv(t)
	if eo {
		v.setEffectivelyOnce()
	}
	v.setPlan(testPlan(map[int][]string{1: {"word:1", "count:2"}, 2: {"count:3"}}))
	e, _, errc := v.run(v.config(1))
	mm := v.waitReady(e, "metricsmgr", "metricsmgr")
	sh := v.waitReady(e, "shell", "shell")
	st1 := v.waitReady(e, "stmgr", "stmgr")
	w1 := v.waitReady(e, "instance-word-1", "task-1")
	c2 := v.waitReady(e, "instance-count-2", "task-2")

	// Scale: task 2 moves to container 2, task 3 comes here, task 4 is new
	// in container 2.
	v.setPlan(testPlan(map[int][]string{1: {"word:1", "count:3"}, 2: {"count:2", "count:4"}}))
	c3 := v.waitReady(e, "instance-count-3", "task-3")
	st2 := st1
	if eo {
		waitFor(t, "restarted stmgr", func() bool {
			st2 = v.waitReadyNoFail(e, "stmgr", "stmgr")
			return st2 != 0 && st2 != st1
		})
	}
	waitFor(t, "instance of task 2 gone", func() bool {
		_, ok := statusOf(e, "instance-count-2")
		return !ok && !alive(c2)
	})
	if eo && alive(st1) {
		t.Errorf("old stmgr %d alive", st1)
	}
	if got := v.waitReadyNoFail(e, "stmgr", "stmgr"); !eo && got != st1 {
		t.Errorf("stmgr restarted: pid %d -> %d", st1, got)
	}
	if got := v.waitReadyNoFail(e, "instance-word-1", "task-1"); got != w1 {
		t.Errorf("unchanged instance restarted: pid %d -> %d", w1, got)
	}
	if got := v.waitReadyNoFail(e, "metricsmgr", "metricsmgr"); got != mm {
		t.Errorf("metricsmgr restarted: pid %d -> %d", mm, got)
	}
	wantNames := []string{"instance-count-3", "instance-word-1", "metricsmgr", "shell", "stmgr"}
	if eo {
		wantNames = append([]string{"ckptmgr"}, wantNames...)
	}
	if names := statusNames(e); !slices.Equal(names, wantNames) {
		t.Errorf("after scaling container 1 runs %v", names)
	}
	if rs := v.eventsOf("stmgr", EventRestarting); eo && (len(rs) != 1 || rs[0].Reason != "packing plan changed" || rs[0].Delay != 0) || !eo && len(rs) != 0 {
		t.Errorf("stmgr restart events %+v", rs)
	}
	if len(v.fakePids("argv", "task-4")) != 0 {
		t.Error("task 4 of container 2 started here")
	}
	pf := readPids(t, filepath.Join(e.Paths().WorkDir, "pids.json"))
	want := map[string]int{"metricsmgr": mm, "shell": sh, "stmgr": st2, "instance-word-1": w1, "instance-count-3": c3}
	if eo {
		st, _ := statusOf(e, "ckptmgr")
		want["ckptmgr"] = st.PID
	}
	if len(pf.Processes) != len(want) {
		t.Errorf("pids.json %v, want %v", pf.Processes, want)
	}
	for n, pid := range want {
		if pf.Processes[n] != pid {
			t.Errorf("pids.json[%s] = %d, want %d", n, pf.Processes[n], pid)
		}
	}

	// Scale in: container 1 leaves the plan; the executor stops and returns.
	v.setPlan(testPlan(map[int][]string{2: {"word:1", "count:2", "count:3", "count:4"}}))
	if err := waitErr(t, errc); err != nil {
		t.Fatalf("Run = %v, want nil when the container leaves the plan", err)
	}
	for n, pid := range want {
		if alive(pid) {
			t.Errorf("%s (%d) survived", n, pid)
		}
	}
}

func TestWaitsForItsContainer(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	ready := make(chan struct{})
	cfg := v.config(2)
	cfg.Ready = func() { close(ready) }
	e, _, _ := v.run(cfg)
	v.waitReady(e, "metricsmgr", "metricsmgr")
	<-ready
	if names := statusNames(e); !slices.Equal(names, []string{"metricsmgr", "shell"}) {
		t.Errorf("a container not in the plan runs %v", names)
	}
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}, 2: {"count:2"}}))
	v.waitReady(e, "stmgr", "stmgr")
	v.waitReady(e, "instance-count-2", "task-2")
	if rs := v.eventsOf("stmgr", EventRestarting); len(rs) != 0 {
		t.Errorf("a freshly started stmgr was restarted: %+v", rs)
	}
}

func TestCancelStopsEverything(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1", "count:2"}}))
	v.control("ignoreterm-stmgr", "")
	cfg := v.config(1)
	cfg.Settings[KeyStopGrace] = "3s"
	e, cancel, errc := v.run(cfg)
	pids := map[string]int{
		"metricsmgr":       v.waitReady(e, "metricsmgr", "metricsmgr"),
		"stmgr":            v.waitReady(e, "stmgr", "stmgr"),
		"instance-word-1":  v.waitReady(e, "instance-word-1", "task-1"),
		"instance-count-2": v.waitReady(e, "instance-count-2", "task-2"),
	}
	cancel()
	if err := waitErr(t, errc); err != nil {
		t.Fatalf("Run = %v, want nil on cancel", err)
	}
	for n, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (%d) survived", n, pid)
		}
		evs := v.eventsOf(n, EventStopped)
		if len(evs) != 1 || evs[0].PID != pid {
			t.Errorf("%s: stopped events %+v", n, evs)
			continue
		}
		if wantKilled := n == "stmgr"; evs[0].Killed != wantKilled {
			t.Errorf("%s: killed = %v, want %v (only the stmgr ignores SIGTERM)", n, evs[0].Killed, wantKilled)
		}
	}
	if pf := readPids(t, filepath.Join(e.Paths().WorkDir, "pids.json")); len(pf.Processes) != 0 {
		t.Errorf("pids.json after stop: %v", pf.Processes)
	}
	for _, st := range e.Status() {
		t.Errorf("process left after stop: %+v", st)
	}
}

func TestExecutorKilledTakesChildrenAlong(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	spec, err := json.Marshal(execSpec{
		WorkDir: v.work, PackageURI: v.pkg, PackageSHA256: v.sha, Egret: testBinary(t), Fake: v.fake,
		Container: 1, Plan: map[int][]string{1: {"word:1", "count:2"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(v.base, "executor.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(testBinary(t))
	cmd.Env = append(os.Environ(), envExecutor+"="+string(spec))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		// A SIGKILLed executor cannot remove its cgroups: the next
		// executor of the container does (Setup's StalePrefix).
		if m, err := cgroup.Setup(cgroup.Options{Name: "egret-sweep-" + strconv.Itoa(os.Getpid()), StalePrefix: "egret-" + testTopology + "-1-"}); err == nil {
			_ = m.Close()
		}
		if dirs, _ := filepath.Glob("/sys/fs/cgroup/*/egret-" + testTopology + "-1-" + strconv.Itoa(cmd.Process.Pid) + "-*"); len(dirs) > 0 {
			t.Errorf("cgroups of the killed executor left behind: %v", dirs)
		}
	})

	fakes := map[string]string{"metricsmgr": "metricsmgr", "shell": "shell", "stmgr": "stmgr", "instance-word-1": "task-1", "instance-count-2": "task-2"}
	pidsPath := filepath.Join(v.work, "pids.json")
	var pf PidFile
	waitFor(t, "five ready children in pids.json", func() bool {
		b, err := os.ReadFile(pidsPath)
		if err != nil || json.Unmarshal(b, &pf) != nil || len(pf.Processes) != 5 {
			return false
		}
		for n, pid := range pf.Processes {
			if !v.ready(fakes[n], pid) {
				return false
			}
		}
		return true
	})
	if pf.Executor != cmd.Process.Pid {
		t.Errorf("pids.json executor %d, want %d", pf.Executor, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	waitFor(t, "children to die with the executor", func() bool {
		for _, pid := range pf.Processes {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

func TestPackageFetch(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	paths, err := ComputePaths(v.work, "")
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	ctx := context.Background()
	if err := preparePackage(ctx, paths, "file://"+v.pkg, strings.ToUpper(v.sha), fetch.Options{}, log); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(paths.TopologyBinary)
	if err != nil || fi.Mode()&0o100 == 0 {
		t.Fatalf("topology binary: %v %v", fi, err)
	}
	if got := readMarker(paths.PackageDir + ".sha256"); got != v.sha {
		t.Errorf("marker %q, want %q", got, v.sha)
	}
	if _, err := os.Stat(paths.PackageDir + ".tar.gz"); !os.IsNotExist(err) {
		t.Errorf("download left behind: %v", err)
	}

	// A restarted executor with the same digest reuses the extraction: the
	// source may even be gone.
	moved := v.pkg + ".moved"
	if err := os.Rename(v.pkg, moved); err != nil {
		t.Fatal(err)
	}
	if err := preparePackage(ctx, paths, "file://"+v.pkg, v.sha, fetch.Options{}, log); err != nil {
		t.Fatalf("reuse: %v", err)
	}
	// Another digest must be fetched (and here cannot be).
	other := strings.Repeat("ab", 32)
	if err := preparePackage(ctx, paths, "file://"+v.pkg, other, fetch.Options{}, log); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("new digest with missing source: %v, want ErrNotFound", err)
	}
	// Without a digest the download is hashed and compared.
	if err := preparePackage(ctx, paths, moved, "", fetch.Options{}, log); err != nil {
		t.Fatalf("no digest: %v", err)
	}
	if got := readMarker(paths.PackageDir + ".sha256"); got != v.sha {
		t.Errorf("marker %q, want %q", got, v.sha)
	}
}

func TestPackageBadDigest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		sha    string
		is     error
		substr string
	}{
		{"mismatch", strings.Repeat("0", 64), fetch.ErrChecksumMismatch, "does not have sha256"},
		{"malformed", "xyz", nil, "not 64 hex digits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
			cfg := v.config(1)
			cfg.PackageSHA256 = tc.sha
			e, _, errc := v.run(cfg)
			err := waitErr(t, errc)
			if err == nil || !strings.Contains(err.Error(), tc.substr) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Run = %v, want an error with %q", err, tc.substr)
			}
			if len(e.Status()) != 0 || len(v.allFakePids()) != 0 {
				t.Error("processes started from an unverified package")
			}
			if _, err := os.Stat(filepath.Join(v.work, "package")); !os.IsNotExist(err) {
				t.Errorf("package directory exists: %v", err)
			}
		})
	}
}

func TestStartFailureIsRetried(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	// A pre-extracted package (no URI) whose topology binary cannot run.
	pkg := filepath.Join(v.work, "package")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(pkg, "cluster.json"), "{}", 0o644)
	mustWrite(t, filepath.Join(pkg, "topology"), "not a program", 0o644)
	cfg := v.config(1)
	cfg.PackageURI, cfg.PackageSHA256 = "", ""
	e, _, _ := v.run(cfg)
	// The restart event follows its start failure: wait for both.
	waitFor(t, "two failed starts", func() bool {
		return len(v.eventsOf("instance-word-1", EventStartFailed)) >= 2 && len(v.eventsOf("instance-word-1", EventRestarting)) >= 2
	})
	rs := v.eventsOf("instance-word-1", EventRestarting)
	if len(rs) < 2 || rs[0].Delay != 50*time.Millisecond || rs[1].Delay != 100*time.Millisecond {
		t.Errorf("restarts after failed starts %+v, want backoff 50ms, 100ms", rs)
	}
	if !errors.Is(v.eventsOf("instance-word-1", EventStartFailed)[0].Err, os.ErrPermission) {
		t.Errorf("start error %v", v.eventsOf("instance-word-1", EventStartFailed)[0].Err)
	}
	// The rest of the container is unaffected.
	v.waitReady(e, "stmgr", "stmgr")
	v.waitReady(e, "metricsmgr", "metricsmgr")
}

func TestBadConfig(t *testing.T) {
	v := newEnv(t)
	good := v.config(1)
	tests := []struct {
		name   string
		mod    func(*Config)
		substr string
	}{
		{"no topology", func(c *Config) { c.TopologyName = "" }, "topology name"},
		{"negative container", func(c *Config) { c.Container = -1 }, "negative"},
		{"no work dir", func(c *Config) { c.WorkDir = "" }, "working directory"},
		{"no state manager", func(c *Config) { c.StateManager = nil }, "state manager"},
		{"missing egret binary", func(c *Config) { c.EgretBinary = "/nonexistent/egret" }, "egret binary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mod(&cfg)
			if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), tc.substr) {
				t.Errorf("New = %v, want an error about %q", err, tc.substr)
			}
		})
	}
}

func TestConnectFromClusterConfig(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	cfg := v.config(0)
	cfg.StateManager = nil
	var session *memory.Session
	var seen spi.Config
	cfg.Connect = func(_ context.Context, cluster spi.Config) (spi.StateManager, error) {
		seen = cluster
		session = v.store.NewSession()
		return session, nil
	}
	e, cancel, errc := v.run(cfg)
	v.waitReady(e, "tmanager", "tmanager")
	// cluster.json sets the grace to 7s; the explicit settings win.
	if seen["egret.statemgr"] != "memory" || seen[KeyBackoffInitial] != "50ms" || seen[KeyStopGrace] != "5s" {
		t.Errorf("Connect saw %v", seen)
	}
	cancel()
	if err := waitErr(t, errc); err != nil {
		t.Fatal(err)
	}
	if _, err := session.Get(context.Background(), "/"); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("the executor did not close the session it connected: Get = %v", err)
	}
}

func TestLongWorkDirUsesShortSockets(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.work = filepath.Join(v.base, strings.Repeat("d", 110))
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	e, cancel, errc := v.run(v.config(1))
	pid := v.waitReady(e, "instance-word-1", "task-1")
	p := e.Paths()
	if p.SocketDir == "" || !isDir(p.SocketDir) {
		t.Fatalf("socket directory %q not created", p.SocketDir)
	}
	args := v.argv("task-1", pid)
	if i := slices.Index(args, "--stmgr-socket"); i < 0 || args[i+1] != p.StmgrSocket || len(p.StmgrSocket) > maxSocketPath {
		t.Errorf("instance args %q, want the short socket %s", args, p.StmgrSocket)
	}
	cancel()
	if err := waitErr(t, errc); err != nil {
		t.Fatal(err)
	}
	if isDir(p.SocketDir) {
		t.Errorf("socket directory %s left behind", p.SocketDir)
	}
}

func TestNoPackingPlan(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	_, _, errc := v.run(v.config(1))
	if err := waitErr(t, errc); !errors.Is(err, spi.ErrNotFound) || !strings.Contains(err.Error(), "submitted") {
		t.Fatalf("Run = %v, want ErrNotFound saying the topology may not be submitted", err)
	}
}

// TestHostileNames: the executor refuses an invalid --topology, and a
// packing plan (read from the state manager) whose component name would
// put an instance's log file outside the working directory is refused as
// corrupt; no file appears outside the working directory.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	for _, name := range []string{"../x", "a/b", "..", "wc\x00"} {
		cfg := v.config(1)
		cfg.TopologyName = name
		if _, err := New(cfg, nil); !errors.Is(err, names.ErrInvalid) {
			t.Errorf("New with topology %q = %v, want an invalid-name error", name, err)
		}
	}
	v.setPlan(testPlan(map[int][]string{1: {"x/../../../escaped:1"}}))
	_, _, errc := v.run(v.config(1))
	if err := waitErr(t, errc); !errors.Is(err, names.ErrInvalid) || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Run with a hostile component name = %v, want a corrupt-plan error", err)
	}
	if m, _ := filepath.Glob(filepath.Join(v.base, "escaped*")); len(m) > 0 {
		t.Errorf("a file was created outside the working directory: %v", m)
	}
}
