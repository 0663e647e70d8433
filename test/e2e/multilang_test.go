package e2e

// Multilang components (docs/multilang.md) on real processes across two
// containers, with the real Python libraries: pystorm components in the
// ackcheck topology (the Go source feeding a pystorm relay, a pystorm
// source feeding Go bolts), failed tuples replayed, kill -9 of a Python
// subprocess, a subprocess writing garbage or hanging, and streamparse's
// word count components. The virtualenv comes from scripts/pyvenv.sh
// (pystorm and streamparse from PyPI); without python3 the tests fail,
// or skip with -short.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

func init() {
	packages["multilang"] = "./test/e2e/testdata/multilang"
	packages["ackcheckpy"] = "./test/e2e/testdata/multilang/ackcheckpy"
	packages["pysplit"] = "./test/e2e/testdata/pysplit"
}

var (
	venvOnce sync.Once
	venvBin  string
	venvErr  error
)

// pythonBin returns the bin directory of the test virtualenv, creating it
// on first use.
func pythonBin(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if testing.Short() {
			t.Skip("python3 is not installed; the multilang tests need it (apt-get install python3 python3-venv)")
		}
		t.Fatal("python3 is not installed; the multilang tests need it (apt-get install python3 python3-venv; -short skips them)")
	}
	venvOnce.Do(func() {
		cmd := exec.Command(filepath.Join(repoRoot(), "scripts", "pyvenv.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		venvBin, venvErr = strings.TrimSpace(string(out)), err
	})
	if venvErr != nil {
		t.Fatalf("scripts/pyvenv.sh (the virtualenv with pystorm and streamparse): %v", venvErr)
	}
	return venvBin
}

func multilangResources() string {
	return filepath.Join(repoRoot(), "test", "e2e", "testdata", "multilang", "resources")
}

// startPyAckCheck submits the ackcheck topology with a pystorm source
// and a pystorm relay (ackcheckpy), the multilang resources shipped and
// the virtualenv on the components' path.
func startPyAckCheck(t *testing.T, c *cluster, name string, n int64, flags ...string) *ackRun {
	t.Helper()
	flags = append([]string{"--set", "topology.multilang.path=" + pythonBin(t)}, flags...)
	return startAckCheckWith(t, c, name, "ackcheckpy", n, []string{"--resources", multilangResources()}, flags...)
}

// subprocesses returns the pids of the cluster's processes whose command
// line contains script.
func (c *cluster) subprocesses(script string) []int {
	var out []int
	for _, pid := range c.processes() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(b), script) {
			out = append(out, pid)
		}
	}
	return out
}

// instanceLogs returns the text of the cluster's instance logs of a
// component.
func (c *cluster) instanceLogs(component string) string {
	files, _ := filepath.Glob(filepath.Join(c.home, "topologies", "*", "*", "*", "*", "logs", "instance-"+component+"-*.log"))
	var sb strings.Builder
	for _, f := range files {
		b, _ := os.ReadFile(f)
		sb.Write(b)
	}
	return sb.String()
}

// userCounter sums a user counter of a component, as the topology manager
// reports it.
func (c *cluster) userCounter(t *testing.T, topology, component, name string) float64 {
	s, err := c.stats(topology)
	if err != nil {
		return -1
	}
	return s[component]["user."+name]
}

// TestMultilangLocalDrainLosesNoWord: a local run (--local) of a sentence
// word count at 1,000 sentences/s whose split bolt is a pystorm subprocess
// that takes 1ms a sentence, so that sentences queue toward and inside
// the subprocesses when the run ends: the drain syncs each subprocess
// (Storm's heartbeat tuple, answered by a sync once everything before it
// is processed), and every word the sentences hold reaches the count bolt.
func TestMultilangLocalDrainLosesNoWord(t *testing.T) {
	cmd := exec.Command(binary(t, "pysplit"), "--rate", "1000", "--split-delay", "1ms", "--python-path", pythonBin(t),
		"--resources", filepath.Join(repoRoot(), "test", "e2e", "testdata", "pysplit", "resources"), "--local", "--duration", "5s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pysplit --local: %v\n%s", err, out)
	}
	counter := func(name string) int64 {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + ` = (\d+)$`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no counter %s in the summary:\n%s", name, out)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	sent, counted := counter("sentences.words"), counter("count.words")
	if sent < 10000 {
		t.Fatalf("only %d words sent in 5s at 1,000 sentences/s:\n%s", sent, out)
	}
	if counted != sent || !strings.Contains(string(out), "drained in") {
		t.Fatalf("the sentences held %d words, the count bolt received %d (%d lost):\n%s", sent, counted, sent-counted, out)
	}
	t.Logf("%d words sent and counted", sent)
}

// TestMultilangClusterDrainLosesNoWord: on a running cluster, a split
// bolt whose Python subprocesses take 2s a sentence hold the sentences
// given to them (in the pipe toward them) for longer than the drain's
// rounds of reports, with nothing queued in front of them and nothing
// moving meanwhile. egret deactivate drains until no subprocess holds a
// tuple (instance.held.tuples), so the first reports after it count
// every word the spout sent.
func TestMultilangClusterDrainLosesNoWord(t *testing.T) {
	c := newCluster(t, "local")
	res := filepath.Join(repoRoot(), "test", "e2e", "testdata", "pysplit", "resources")
	c.mustEgret("submit", "--resources", res, c.name, binary(t, "pysplit"), "--",
		"--rate", "2", "--split-delay", "2s", "--python-path", pythonBin(t))
	t.Cleanup(func() { c.egret("kill", c.name, "pysplit", "--ignore-not-found") })
	await(t, "the split subprocesses to hold sentences", 2*time.Minute, func() (bool, string) {
		s, err := c.stats("pysplit")
		if err != nil {
			return false, err.Error()
		}
		held, counted := s["split"]["instance.held.tuples"], s["count"]["user.words"]
		return held >= 4 && counted > 0, fmt.Sprintf("%.0f sentences held, %.0f words counted", held, counted)
	})
	out := c.mustEgret("deactivate", c.name, "pysplit")
	drained := time.Now()
	if !strings.Contains(out, "drained") || strings.Contains(out, "timed out") {
		t.Fatalf("deactivate did not drain:\n%s", out)
	}
	// The reports of every task after the drain: what they count is what
	// the drain left.
	type report struct {
		UnixNanos int64              `json:"unix_nanos"`
		Metrics   map[string]float64 `json:"metrics"`
	}
	var sent, counted, held float64
	await(t, "every task to report after the drain", time.Minute, func() (bool, string) {
		var st struct {
			Components map[string]struct {
				Tasks map[string]report `json:"tasks"`
			} `json:"components"`
		}
		if err := c.tmanagerGet(c.store(), "pysplit", "stats", &st); err != nil {
			return false, err.Error()
		}
		sent, counted, held = 0, 0, 0
		for name, comp := range st.Components {
			for id, r := range comp.Tasks {
				if r.UnixNanos <= drained.UnixNano() {
					return false, fmt.Sprintf("task %s of %s last reported before the drain ended", id, name)
				}
				switch name {
				case "sentences":
					sent += r.Metrics["user.words"]
				case "count":
					counted += r.Metrics["user.words"]
				}
				held += r.Metrics["instance.held.tuples"]
			}
		}
		return true, ""
	})
	if sent == 0 || counted != sent || held != 0 {
		t.Fatalf("after the drain: the spout sent %.0f words, the count bolt received %.0f (%.0f not yet), %.0f sentences still held:\n%s",
			sent, counted, sent-counted, held, out)
	}
	t.Logf("%.0f words sent and counted when the drain ended:\n%s", sent, out)
}

// TestMultilangPystorm: a pystorm spout (resources/source.py), reliable
// with the message number as tuple id, feeds the Go fanout bolts, whose
// tuples a pystorm relay bolt (resources/relay.py) passes on to the Go
// sink, at-least-once, across two containers: every message is acked
// exactly once (the acks reaching the Python spout) and every copy
// reaches the sink exactly once.
func TestMultilangPystorm(t *testing.T) {
	c := newCluster(t, "local")
	const n = 5000
	r := startPyAckCheck(t, c, "ml-pystorm", n)
	res := r.waitAcked("every message to be acked", n, allAckedTimeout)
	t.Logf("%s", res)
	if !res.ExactlyOnce() {
		t.Errorf("want every message acked once and every copy recorded once: %s", res)
	}
	for _, comp := range []string{ackcheck.Source, ackcheck.Relay} {
		if logs := c.instanceLogs(comp); !strings.Contains(logs, "subprocess started") || !strings.Contains(logs, "subprocess_pid") {
			t.Errorf("the %s instances did not log their subprocess and its pid", comp)
		}
	}
	if got := len(c.subprocesses("source.py")) + len(c.subprocesses("relay.py")); got != 4 {
		t.Errorf("%d Python subprocesses run, want 4 (2 sources, 2 relays)", got)
	}
	r.kill()
}

// TestMultilangFailedTuplesReplayed: the pystorm relay fails one tuple in
// 13 (once each): the pystorm source replays the failed trees and in
// the end every message is acked and every copy recorded.
func TestMultilangFailedTuplesReplayed(t *testing.T) {
	c := newCluster(t, "local")
	const n = 5000
	r := startPyAckCheck(t, c, "ml-fail", n, "--set", "ackcheck.relay.fail.every=13")
	res := r.waitAcked("every message to be acked", n, allAckedTimeout)
	t.Logf("%s", res)
	if !res.Complete() {
		t.Errorf("messages lost: %s", res)
	}
	if res.Replays == 0 {
		t.Errorf("no replay although the relay failed tuples: %s", res)
	}
	r.kill()
}

// TestMultilangKillSubprocess: kill -9 of a Python relay subprocess while
// messages flow loses nothing: the instance fails the tuples it held (they
// replay at once), restarts the subprocess, and every message is acked.
func TestMultilangKillSubprocess(t *testing.T) {
	c := newCluster(t, "local")
	const n = 20000
	r := startPyAckCheck(t, c, "ml-kill", n, "--rate", "3000", "--timeout", "10s")
	r.waitAcked("a fifth of the messages to be acked", n/5, time.Minute)
	pids := c.subprocesses("relay.py")
	if len(pids) == 0 {
		t.Fatal("no relay.py subprocess found")
	}
	victim, ok := procOf(pids[0])
	if !ok {
		t.Fatalf("relay.py %d is gone", pids[0])
	}
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 relay.py (pid %d): %v", victim.pid, err)
	}
	atKill := r.check()
	t.Logf("kill -9 of relay.py (pid %d) with %d of %d messages acked", victim.pid, atKill.Acked, n)
	if atKill.Acked >= n {
		t.Fatal("every message was acked before the kill took effect: the fault came too late to test anything")
	}
	waitDead(t, "the killed subprocess to exit", map[string]proc{"relay.py": victim})
	res := r.waitAcked("every message to be acked after the kill", n, allAckedTimeout)
	t.Logf("%s", res)
	if !res.Complete() {
		t.Errorf("messages lost after kill -9 of a subprocess: %s", res)
	}
	await(t, "the relay instances to count the crash", recoverTimeout, func() (bool, string) {
		v := c.userCounter(t, r.name, ackcheck.Relay, "multilang.crashes")
		return v >= 1, fmt.Sprintf("user.multilang.crashes = %v", v)
	})
	if got := len(c.subprocesses("relay.py")); got != 2 {
		t.Errorf("%d relay.py subprocesses run after the restart, want 2", got)
	}
	r.kill()
}

// TestMultilangBrokenSubprocess: a subprocess that writes garbage to its
// stdout, and one that stops answering, are killed with a clear error in
// the instance log and restarted, and no message is lost.
func TestMultilangBrokenSubprocess(t *testing.T) {
	c := newCluster(t, "local")
	for _, tc := range []struct{ fault, logged string }{
		{"garbage", `multilang protocol error: invalid JSON at byte 0: unexpected 'T' (message: \"Traceback? no: this line is not a multilang message\")`},
		{"hang", "the subprocess did not answer in time (heartbeat timeout)"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			sc := *c
			sc.t = t
			const n = 5000
			r := startPyAckCheck(t, &sc, "ml-"+tc.fault, n, "--timeout", "10s",
				"--set", "ackcheck.relay.fault="+tc.fault, "--set", "ackcheck.relay.fault.after=300",
				"--set", "topology.multilang.heartbeat.timeout=3s")
			res := r.waitAcked("every message to be acked", n, allAckedTimeout)
			t.Logf("%s", res)
			if !res.Complete() {
				t.Errorf("messages lost: %s", res)
			}
			if _, err := os.Stat(filepath.Join(r.state, "fault-"+tc.fault)); err != nil {
				t.Fatalf("the relay never injected its fault: %v", err)
			}
			await(t, "the error in the relay's instance log", recoverTimeout, func() (bool, string) {
				return strings.Contains(sc.instanceLogs(ackcheck.Relay), tc.logged), "not logged yet: " + tc.logged
			})
			await(t, "the relay instances to count the restart", recoverTimeout, func() (bool, string) {
				v := sc.userCounter(t, r.name, ackcheck.Relay, "multilang.crashes")
				return v >= 1, fmt.Sprintf("user.multilang.crashes = %v", v)
			})
			r.kill()
		})
	}
}

// TestMultilangStreamparseWordCount: streamparse's word count components,
// run by streamparse_run as under Storm (resources/spouts/words.py,
// resources/bolts/wordcount.py), count correctly: every word's counts
// reach the Go recorder as 1, 2, 3, ... without a gap.
func TestMultilangStreamparseWordCount(t *testing.T) {
	c := newCluster(t, "local")
	state := filepath.Join(c.home, "state-wc")
	c.mustEgret("submit", "--resources", multilangResources(), c.name, binary(t, "multilang"), "--",
		"--state", state, "--python-path", pythonBin(t))
	words := []string{"dog", "cat", "zebra", "elephant"}
	var counts map[string][]int64
	await(t, "every word to be counted 200 times", allAckedTimeout, func() (bool, string) {
		counts = readCounts(t, state)
		for _, w := range words {
			if len(counts[w]) < 200 {
				return false, fmt.Sprintf("%d counts of %q", len(counts[w]), w)
			}
		}
		return true, ""
	})
	c.mustEgret("kill", c.name, "wordcount-py")
	c.waitGone(t)
	counts = readCounts(t, state)
	for _, w := range words {
		for i, got := range counts[w] {
			if got != int64(i+1) {
				t.Fatalf("count %d of %q is %d, want %d (counts %v...)", i, w, got, i+1, counts[w][:min(len(counts[w]), i+3)])
			}
		}
		t.Logf("%q counted to %d", w, len(counts[w]))
	}
	if len(counts) != len(words) {
		t.Errorf("recorded words %v, want %v", counts, words)
	}
}

// readCounts reads the recorder's "<word> <count>" lines, in order per
// word.
func readCounts(t *testing.T, dir string) map[string][]int64 {
	out := map[string][]int64{}
	files, _ := filepath.Glob(filepath.Join(dir, "counts-*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[:len(lines)-1] { // the last is being written
			w, n, _ := strings.Cut(line, " ")
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("%s: bad line %q", f, line)
			}
			out[w] = append(out[w], v)
		}
	}
	return out
}
