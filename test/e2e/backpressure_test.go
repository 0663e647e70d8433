package e2e

// Back pressure on a real 2-container cluster (issue 6, DESIGN.md §6,
// docs/backpressure.md): an unthrottled spout in container 1 feeds a bolt
// in container 2 whose rate is set at run time through a file (topology
// test/e2e/testdata/slowbolt), so back pressure starts at the bolt's
// stream manager and crosses to the spout's.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/stmgr"
)

func init() { packages["slowbolt"] = "./test/e2e/testdata/slowbolt" }

const (
	// bpSteady is how long TestBackPressureMemoryBounded keeps the bolt
	// slow: the issue asks for 3 minutes.
	bpSteady = 3 * time.Minute
	// bpWarmup is the start of the steady window: the queues have filled
	// and back pressure cycles. Memory is checked against the bound from
	// the start, for a trend only after it.
	bpWarmup = 30 * time.Second
	// bpSlowRate is the slow bolt's rate, tuples per second.
	bpSlowRate = 1000
	// bpSampleEvery is the interval of the RSS samples.
	bpSampleEvery = 3 * time.Second
	// bpTrendSlack is how far the largest RSS of the last third of the
	// steady window may exceed that of the middle third (GC and
	// allocator noise, not growth).
	bpTrendSlack = 4 << 20
	// bpRateTolerance is how far the spout's emit rate may differ from
	// the bolt's execute rate over the steady window.
	bpRateTolerance = 0.10
	// bpWait bounds every wait for a state (flow, engagement, release).
	bpWait = 3 * time.Minute
	// bpReleasedRate is the execute rate that shows the bolt is no longer
	// held at bpSlowRate once unlimited: a multiple of the limit, not a
	// throughput target, so that a busy machine passes too.
	bpReleasedRate = 2 * bpSlowRate
	// bpPayload pads every tuple to about 1 KiB. Watermarks and queues
	// are in bytes: each back pressure cycle lets about 2.5 MiB through
	// (the spout's stream manager's queue up to the high watermark, the
	// kernel buffers, the bolt's stream manager's queue from the low to the
	// high watermark), which is 2,500 such tuples, 2% of the steady window
	// at 1,000 tuples/s. Tuples of 20 bytes would make it 125,000 tuples,
	// more than the window (docs/backpressure.md, "Rates under back
	// pressure").
	bpPayload = 1024
)

// The RSS bound of every process under back pressure, by kind: the
// arithmetic of docs/backpressure.md, "Memory bound", for this topology
// (one spout and one bolt task, each container one local instance and one
// peer) and the default settings. The live data-path buffers count
// twice: with GOGC=100 the heap grows to twice what is live before a
// collection; an instance grows by at least its heap floor instead.
const (
	bpBase = 16 << 20 // an instance's runtime and steady heap (about 10 MiB idle)
	// A daemon of the egret binary (stream manager, executor, topology and
	// metrics managers, shell) holds 8–12 MiB idle.
	bpDaemonBase  = 20 << 20
	bpQueue       = 1 << 20  // egret.instance.queue.max.bytes
	bpBatch       = 40 << 10 // a 32 KiB batch's buffer (1.25 × its size)
	bpConnBufs    = 128 << 10
	bpStMgrQueue  = 8 << 20 // egret.stmgr.buffer.max.bytes (disconnected)
	bpStMgrFrame  = 64 << 10
	bpOtherSlack  = 8 << 20
	bpStMgrQueues = 2 // one local instance, one peer
)

// bpHeapFloor is an instance's heap floor (runner.DefaultHeapFloor).
const bpHeapFloor = runner.DefaultHeapFloor

func bpRSSBound(kind string) int64 {
	switch kind {
	case "instance":
		live := int64(2*bpQueue + bpBatch + bpConnBufs)
		return bpBase + max(2*live, live+bpHeapFloor)
	case "stmgr":
		return bpDaemonBase + 2*(bpStMgrQueues*bpStMgrQueue+bpStMgrQueues*(bpConnBufs+bpStMgrFrame))
	default: // executor, tmanager, metricsmgr, shell, scheduler: off the data path
		return bpDaemonBase + bpOtherSlack
	}
}

// slowTopo is one running slowbolt topology.
type slowTopo struct {
	t          *testing.T
	c          *cluster
	name       string
	state      string
	store      *state.Store
	plan       *plan.PackingPlan
	sourceTask int
	slowTask   int
}

// sourceReport and slowReport mirror the topology's report files.
type sourceReport struct {
	Emitted       int64 `json:"emitted"`
	Acked         int64 `json:"acked"`
	AckedDistinct int64 `json:"acked_distinct"`
	Failed        int64 `json:"failed"`
	At            int64 `json:"at"`
}

type slowReport struct {
	Executed int64 `json:"executed"`
	Distinct int64 `json:"distinct"`
	Rate     int64 `json:"rate"`
	At       int64 `json:"at"`
	Pid      int   `json:"pid"`
}

// startSlowBolt writes the rate file, submits slowbolt with args and
// checks the placement: the spout alone in container 1, the bolt in 2.
// A refused submission fails the test.
func startSlowBolt(t *testing.T, c *cluster, rate int, args ...string) *slowTopo {
	t.Helper()
	s, ok, why := trySlowBolt(t, c, rate, args...)
	if !ok {
		t.Fatalf("egret submit refused slowbolt %q: %s", args, why)
	}
	return s
}

// trySlowBolt is startSlowBolt for a submission that may be refused: ok
// false when the cluster refused it with exit code 2, the refusal's
// message in why.
func trySlowBolt(t *testing.T, c *cluster, rate int, args ...string) (s *slowTopo, ok bool, why string) {
	t.Helper()
	s = &slowTopo{t: t, c: c, name: "slowbolt", state: filepath.Join(c.home, "slowbolt-state")}
	sharedDir(t, s.state)
	s.setRate(rate)
	full := append([]string{"submit", c.name, c.bin(t, "slowbolt"), "--", "--state", s.state, "--rate", strconv.Itoa(rate), "--payload", strconv.Itoa(bpPayload)}, args...)
	out, errOut, code := c.egret(full...)
	if code == 2 {
		return nil, false, strings.TrimSpace(errOut)
	}
	if code != 0 {
		t.Fatalf("egret submit: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	s.store = c.store()
	pp, _, err := s.store.PackingPlan(context.Background(), s.name)
	if err != nil {
		t.Fatalf("read the packing plan: %v", err)
	}
	s.plan = pp
	for _, ct := range pp.Containers {
		for _, in := range ct.Instances {
			switch {
			case in.Component == "source" && ct.ID == 1:
				s.sourceTask = in.TaskID
			case in.Component == "slow" && ct.ID == 2:
				s.slowTask = in.TaskID
			default:
				t.Fatalf("packing places %s task %d in container %d; the test needs the spout in 1 and the bolt in 2 so that back pressure crosses stream managers", in.Component, in.TaskID, ct.ID)
			}
		}
	}
	if s.sourceTask == s.slowTask {
		t.Fatalf("the packing plan lacks the spout or the bolt: %+v", pp.Containers)
	}
	return s, true, ""
}

// setRate writes the slow bolt's rate file (0: unlimited).
func (s *slowTopo) setRate(n int) {
	s.t.Helper()
	path := filepath.Join(s.state, "slow-rate")
	if err := os.WriteFile(path+".tmp", []byte(strconv.Itoa(n)), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		s.t.Fatal(err)
	}
}

func readReport(path string, v any) bool {
	b, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(b, v) == nil
}

func (s *slowTopo) source() (r sourceReport, ok bool) {
	ok = readReport(filepath.Join(s.state, fmt.Sprintf("source-%d.json", s.sourceTask)), &r)
	return r, ok
}

func (s *slowTopo) slow() (r slowReport, ok bool) {
	ok = readReport(filepath.Join(s.state, fmt.Sprintf("slow-%d.json", s.slowTask)), &r)
	return r, ok
}

// stmgrMetric returns a metric of container's stream manager from the
// topology manager's /stats (ok false: no report yet).
func (s *slowTopo) stmgrMetric(container int, metric string) (v float64, at int64, ok bool) {
	var doc statsDoc
	if s.c.tmanagerGet(s.store, s.name, "stats", &doc) != nil {
		return 0, 0, false
	}
	e, found := doc.Containers[strconv.Itoa(container)]["stmgr"]
	if !found {
		return 0, 0, false
	}
	v, ok = e.Metrics[metric]
	return v, e.UnixNanos, ok
}

// waitBackPressure waits until the spout's stream manager reports its
// spouts throttled (on) or not (off), in a report sent after since.
func (s *slowTopo) waitBackPressure(on bool, since time.Time) time.Duration {
	s.t.Helper()
	want := 0.0
	if on {
		want = 1
	}
	began := time.Now()
	await(s.t, fmt.Sprintf("the spout's stream manager to report %s = %v", stmgr.MetricBackPressureActive, want), bpWait, func() (bool, string) {
		v, at, ok := s.stmgrMetric(1, stmgr.MetricBackPressureActive)
		if !ok || at <= since.UnixNano() {
			return false, "no report since the wait began"
		}
		return v == want, fmt.Sprintf("%s = %v", stmgr.MetricBackPressureActive, v)
	})
	return time.Since(began)
}

// waitExecuteRate waits until the bolt executes more than min tuples/s
// over a sliding window of about 2s and returns how long that took.
func (s *slowTopo) waitExecuteRate(min float64) time.Duration {
	s.t.Helper()
	began := time.Now()
	var hist []slowReport
	await(s.t, fmt.Sprintf("the bolt to execute more than %.0f tuples/s", min), bpWait, func() (bool, string) {
		r, ok := s.slow()
		if !ok {
			return false, "no bolt report"
		}
		if len(hist) == 0 || r.At != hist[len(hist)-1].At {
			hist = append(hist, r)
		}
		for len(hist) > 2 && time.Duration(r.At-hist[1].At) >= 2*time.Second {
			hist = hist[1:]
		}
		first := hist[0]
		if span := time.Duration(r.At - first.At); span < time.Second || r.Executed < first.Executed {
			return false, "measuring"
		}
		rate := float64(r.Executed-first.Executed) / time.Duration(r.At-first.At).Seconds()
		return rate > min, fmt.Sprintf("%.0f tuples/s", rate)
	})
	return time.Since(began)
}

// rssSample is the resident set of every process of the cluster at one
// instant, keyed by "<name> (pid N)".
type rssSample struct {
	at  time.Time
	rss map[string]int64
}

// processNames maps the pids of the topology's processes to their
// executor names ("stmgr", "instance-slow-2", ...); others are named by
// their command ("egret").
func (s *slowTopo) processNames() map[int]string {
	names := map[int]string{}
	for id := 0; id <= 2; id++ {
		for name, pid := range s.c.pids(s.name, id) {
			names[pid] = fmt.Sprintf("c%d/%s", id, name)
		}
	}
	return names
}

// kindOf turns a process name into a bound kind.
func kindOf(name string) string {
	base := name[strings.IndexByte(name, '/')+1:]
	base, _, _ = strings.Cut(base, " (pid ")
	switch {
	case strings.HasPrefix(base, "instance"):
		return "instance"
	case base == "stmgr":
		return "stmgr"
	}
	return "other"
}

// rssAnon reads RssAnon of pid in bytes: its heap, stacks and runtime;
// not the binary's text, file-backed pages every process of the binary
// shares (docs/backpressure.md, "Memory bound").
func rssAnon(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err == nil
			}
		}
	}
	return 0, false
}

func (s *slowTopo) sampleRSS() rssSample {
	names := s.processNames()
	smp := rssSample{at: time.Now(), rss: map[string]int64{}}
	for _, pid := range s.c.processes() {
		name, ok := names[pid]
		if !ok {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			name = "other/" + strings.TrimSpace(string(comm))
		}
		if rss, ok := rssAnon(pid); ok {
			smp.rss[fmt.Sprintf("%s (pid %d)", name, pid)] = rss
		}
	}
	return smp
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// checkRSS asserts the bound on every sample and, for every process
// sampled through the whole steady window, no upward trend: the largest
// RSS of the window's last third is not above that of its middle third
// by more than bpTrendSlack.
func checkRSS(t *testing.T, samples []rssSample, steadyFrom time.Time) {
	t.Helper()
	peak := map[string]int64{}
	for _, smp := range samples {
		for p, rss := range smp.rss {
			peak[p] = max(peak[p], rss)
			if b := bpRSSBound(kindOf(p)); rss > b {
				t.Errorf("%s: RSS %s at %s is above the bound %s", p, mib(rss), smp.at.Format(time.TimeOnly), mib(b))
			}
		}
	}
	var steady []rssSample
	for _, smp := range samples {
		if !smp.at.Before(steadyFrom) {
			steady = append(steady, smp)
		}
	}
	n := len(steady)
	if n < 6 {
		t.Fatalf("only %d RSS samples in the steady window", n)
	}
	procs := make([]string, 0, len(peak))
	for p := range peak {
		procs = append(procs, p)
	}
	sort.Strings(procs)
	for _, p := range procs {
		var mid, last int64
		whole := true
		for i, smp := range steady {
			rss, ok := smp.rss[p]
			if !ok {
				whole = false
				break
			}
			switch {
			case i >= 2*n/3:
				last = max(last, rss)
			case i >= n/3:
				mid = max(mid, rss)
			}
		}
		t.Logf("RSS %-40s peak %10s  middle-third max %10s  last-third max %10s", p, mib(peak[p]), mib(mid), mib(last))
		if whole && last > mid+bpTrendSlack {
			t.Errorf("%s: RSS grows under steady back pressure: the last third's max %s is above the middle third's %s by more than %s", p, mib(last), mib(mid), mib(bpTrendSlack))
		}
	}
}

// TestBackPressureMemoryBounded keeps the bolt at bpSlowRate for bpSteady:
// back pressure engages, every process's RSS stays under its bound
// without growing, and the spout emits at the bolt's rate. Then the bolt
// becomes unlimited: it executes faster than its old limit and back
// pressure is released.
func TestBackPressureMemoryBounded(t *testing.T) {
	c := newCluster(t, "local")
	start := time.Now()
	s := startSlowBolt(t, c, bpSlowRate)
	engaged := s.waitBackPressure(true, start)
	t.Logf("back pressure engaged %s after the submission returned", engaged.Round(time.Millisecond))

	steadyFrom := start.Add(bpWarmup)
	end := start.Add(bpSteady)
	var samples []rssSample
	var src0, src1 sourceReport
	var slow0, slow1 slowReport
	for now := time.Now(); now.Before(end); now = time.Now() {
		samples = append(samples, s.sampleRSS())
		if src0.At == 0 && !now.Before(steadyFrom) {
			src0, _ = s.source()
			slow0, _ = s.slow()
		}
		time.Sleep(min(bpSampleEvery, time.Until(end)))
	}
	src1, _ = s.source()
	slow1, _ = s.slow()
	samples = append(samples, s.sampleRSS())
	checkRSS(t, samples, steadyFrom)

	if src0.At == 0 || slow0.At == 0 || src1.At <= src0.At || slow1.At <= slow0.At {
		t.Fatalf("no reports across the steady window: source %+v → %+v, bolt %+v → %+v", src0, src1, slow0, slow1)
	}
	emitRate := float64(src1.Emitted-src0.Emitted) / time.Duration(src1.At-src0.At).Seconds()
	execRate := float64(slow1.Executed-slow0.Executed) / time.Duration(slow1.At-slow0.At).Seconds()
	t.Logf("steady window %s: spout emitted %.0f tuples/s, bolt executed %.0f tuples/s (emitted %d, executed %d in all)",
		time.Duration(slow1.At-slow0.At).Round(time.Second), emitRate, execRate, src1.Emitted, slow1.Executed)
	// Above the limit the rate limiter is broken; far below it the
	// pipeline starves (a busy machine may slow it, not by a factor 4).
	if execRate < 0.25*bpSlowRate || execRate > 1.1*bpSlowRate {
		t.Errorf("the bolt executed %.0f tuples/s; its rate limit is %d", execRate, bpSlowRate)
	}
	if d := emitRate/execRate - 1; d > bpRateTolerance || d < -bpRateTolerance {
		t.Errorf("the spout emitted %.0f tuples/s while the bolt executed %.0f: %+.1f%%, beyond ±%.0f%%", emitRate, execRate, 100*d, 100*bpRateTolerance)
	}
	if v, _, _ := s.stmgrMetric(1, stmgr.MetricBackPressureThrottled); v <= 0 {
		t.Errorf("the spout's stream manager reports %s = %v after %s of a slow bolt", stmgr.MetricBackPressureThrottled, v, bpSteady)
	}

	// Release: the bolt becomes unlimited.
	released := time.Now()
	s.setRate(0)
	fast := s.waitExecuteRate(bpReleasedRate)
	t.Logf("throughput above %d tuples/s %s after the bolt became unlimited", bpReleasedRate, fast.Round(time.Millisecond))
	off := s.waitBackPressure(false, released)
	t.Logf("back pressure released %s after the bolt became unlimited", off.Round(time.Millisecond))
	s.kill()
}

// TestBackPressureKillSlowInstance kills -9 the slow bolt's process while
// back pressure holds: the spout keeps emitting (the topology does not
// freeze) and the restarted bolt executes.
func TestBackPressureKillSlowInstance(t *testing.T) {
	c := newCluster(t, "local")
	start := time.Now()
	s := startSlowBolt(t, c, bpSlowRate)
	s.waitBackPressure(true, start)

	name := fmt.Sprintf("instance-slow-%d", s.slowTask)
	pid, ok := c.pids(s.name, 2)[name]
	if !ok {
		t.Fatalf("no %s in container 2's pids.json: %v", name, c.pids(s.name, 2))
	}
	victim, ok := procOf(pid)
	if !ok {
		t.Fatalf("%s (pid %d) is not running", name, pid)
	}
	// The spout's report must exist before the kill: on a slow machine it
	// may not have been written yet when back pressure engaged.
	var before sourceReport
	await(t, "a spout report before the kill", bpWait, func() (bool, string) {
		r, ok := s.source()
		before = r
		return ok, "no spout report"
	})
	kill9(t, name, victim)
	killed := time.Now()
	await(t, "the spout to emit after the slow bolt was killed", bpWait, func() (bool, string) {
		r, ok := s.source()
		if !ok {
			return false, "no spout report"
		}
		return r.At > killed.UnixNano() && r.Emitted > before.Emitted+2*bpSlowRate,
			fmt.Sprintf("emitted %d → %d", before.Emitted, r.Emitted)
	})
	await(t, "the restarted bolt to execute", bpWait, func() (bool, string) {
		p, ok := procOf(c.pids(s.name, 2)[name])
		if !ok || p == victim {
			return false, "not restarted yet"
		}
		// The report must come from the restarted process itself, whatever
		// the old one had written (or not) when it was killed.
		r, ok := s.slow()
		return ok && r.Pid == p.pid && r.Executed > 0, fmt.Sprintf("bolt report %+v, restarted as pid %d", r, p.pid)
	})
	s.kill()
}

// TestBackPressureAtLeastOnce runs a finite id space at-least-once with
// enough tuples pending to engage back pressure: every id is acked at the
// spout and received by the bolt.
func TestBackPressureAtLeastOnce(t *testing.T) {
	// 1 KiB tuples, 8000 pending per spout: ~8 MiB in flight, above the
	// bolt's gateway queue plus its stream manager's high watermark, so
	// the queues, not max.spout.pending alone, hold the spout back.
	const ids, rate = 30000, 3000
	c := newCluster(t, "local")
	start := time.Now()
	s := startSlowBolt(t, c, rate, "--acking", "--ids", strconv.Itoa(ids), "--pending", "8000")
	s.waitBackPressure(true, start)
	await(t, fmt.Sprintf("every one of %d ids acked and received", ids), 3*time.Minute, func() (bool, string) {
		src, ok1 := s.source()
		slow, ok2 := s.slow()
		return ok1 && ok2 && src.AckedDistinct == ids && slow.Distinct == ids,
			fmt.Sprintf("spout %+v, bolt %+v", src, slow)
	})
	if v, _, _ := s.stmgrMetric(1, stmgr.MetricBackPressureThrottled); v <= 0 {
		t.Errorf("back pressure never throttled the spout (%s = %v)", stmgr.MetricBackPressureThrottled, v)
	}
	s.kill()
}

// kill kills the topology and waits until no process is left.
func (s *slowTopo) kill() {
	s.t.Helper()
	s.c.mustEgret("kill", s.c.name, s.name)
	s.c.waitGone(s.t)
}
