package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests of the local-mode drain run testdata/tickcount, whose bolts
// emit only on ticks every hour: what reaches its sink was flushed by the
// drain's final ticks.

// processDeadline bounds every wait of these tests.
const processDeadline = 2 * time.Minute

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tickcountRun is one run of the tickcount binary.
type tickcountRun struct {
	t              *testing.T
	dir            string
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
	err            error
}

func startTickcount(t *testing.T, bin string, env []string, args ...string) *tickcountRun {
	t.Helper()
	r := &tickcountRun{t: t, dir: t.TempDir(), done: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = append(append(os.Environ(), "TICKCOUNT_DIR="+r.dir), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start tickcount: %v", err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// waitFor polls cond until it holds; the test fails after processDeadline.
func (r *tickcountRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(processDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s after %s; stdout:\n%s\nstderr:\n%s", what, processDeadline, r.stdout.String(), r.stderr.String())
		}
		select {
		case <-r.done:
			if !cond() {
				r.t.Fatalf("the process exited (%v) before %s; stdout:\n%s\nstderr:\n%s", r.err, what, r.stdout.String(), r.stderr.String())
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (r *tickcountRun) signal() {
	r.t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		r.t.Fatalf("SIGTERM: %v", err)
	}
}

// wait waits until the process exits with code 0 and returns its stdout.
func (r *tickcountRun) wait() string {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(processDeadline):
		r.t.Fatalf("the process did not exit within %s; stdout:\n%s", processDeadline, r.stdout.String())
	}
	if r.err != nil {
		r.t.Fatalf("tickcount: %v; stdout:\n%s\nstderr:\n%s", r.err, r.stdout.String(), r.stderr.String())
	}
	return r.stdout.String()
}

type tickcountReport struct {
	Emitted map[string]int64 `json:"emitted"`
	Roots   int64            `json:"roots"`
	Acked   int64            `json:"acked"`
	Failed  int64            `json:"failed"`
}

// results reads what the spout emitted and what the sink received.
func (r *tickcountRun) results() (spout tickcountReport, sink map[string]int64) {
	r.t.Helper()
	for name, v := range map[string]any{"words.json": &spout, "sink.json": &sink} {
		data, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			r.t.Fatalf("%v; stdout:\n%s\nstderr:\n%s", err, r.stdout.String(), r.stderr.String())
		}
		if err := json.Unmarshal(data, v); err != nil {
			r.t.Fatalf("%s: %v", name, err)
		}
	}
	if len(spout.Emitted) == 0 {
		r.t.Fatalf("the spout emitted nothing; stdout:\n%s", r.stdout.String())
	}
	return spout, sink
}

func TestLocalDrainFlushesTicks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a topology binary")
	}
	bin := filepath.Join(t.TempDir(), "tickcount")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/tickcount").CombinedOutput(); err != nil {
		t.Fatalf("build testdata/tickcount: %v\n%s", err, out)
	}
	acking := []string{"TICKCOUNT_ACKING=1"}
	emitting := func(r *tickcountRun) func() bool {
		return func() bool { _, err := os.Stat(filepath.Join(r.dir, "emitting")); return err == nil }
	}
	// exact checks that the sink holds the totals of every word emitted.
	exact := func(t *testing.T, r *tickcountRun, stdout string) tickcountReport {
		t.Helper()
		spout, sink := r.results()
		if !reflect.DeepEqual(spout.Emitted, sink) {
			t.Errorf("the sink's totals %v differ from what the spout emitted %v", sink, spout.Emitted)
		}
		if !strings.Contains(stdout, "drained in ") || !strings.Contains(stdout, "3 final ticks executed (count, total)") {
			t.Errorf("no line of a completed drain with 3 final ticks:\n%s", stdout)
		}
		return spout
	}
	t.Run("duration", func(t *testing.T) {
		r := startTickcount(t, bin, nil, "--local", "--duration", "2s")
		exact(t, r, r.wait())
	})
	t.Run("sigterm", func(t *testing.T) {
		r := startTickcount(t, bin, nil, "--local")
		r.waitFor("word emitted", emitting(r))
		r.signal()
		exact(t, r, r.wait())
	})
	for _, stop := range []string{"duration", "sigterm"} {
		t.Run("at-least-once-"+stop, func(t *testing.T) {
			var r *tickcountRun
			if stop == "duration" {
				r = startTickcount(t, bin, acking, "--local", "--duration", "2s")
			} else {
				r = startTickcount(t, bin, acking, "--local")
				r.waitFor("word emitted", emitting(r))
				r.signal()
			}
			stdout := r.wait()
			// count holds its inputs until its tick: the roots complete
			// only after the final ticks.
			spout := exact(t, r, stdout)
			if spout.Roots == 0 || spout.Acked != spout.Roots || spout.Failed != 0 {
				t.Errorf("roots %d, acked %d, failed %d: want every root acked", spout.Roots, spout.Acked, spout.Failed)
			}
		})
	}
	t.Run("drain-timeout-0s", func(t *testing.T) {
		r := startTickcount(t, bin, nil, "--local", "--duration", "1s", "--drain-timeout", "0s")
		stdout := r.wait()
		_, sink := r.results()
		if len(sink) != 0 {
			t.Errorf("without a drain the sink received totals %v (no final tick was due)", sink)
		}
		if !strings.Contains(stdout, "not drained (--drain-timeout 0s)") || !strings.Contains(stdout, "no final tick for count, total") {
			t.Errorf("no line of a skipped drain:\n%s", stdout)
		}
		if strings.Contains(stdout, "stopping: draining") {
			t.Errorf("announced a drain:\n%s", stdout)
		}
	})
	noack := append([]string{"TICKCOUNT_NOACK=1"}, acking...)
	t.Run("timeout", func(t *testing.T) {
		r := startTickcount(t, bin, noack, "--local", "--duration", "1s", "--drain-timeout", "1s")
		stdout := r.wait()
		if !strings.Contains(stdout, "drain timed out after 1") || !strings.Contains(stdout, "waiting for the pending roots: 0 batches in flight") {
			t.Errorf("no line of a drain timed out waiting for the pending roots:\n%s", stdout)
		}
		spout, sink := r.results()
		if !reflect.DeepEqual(spout.Emitted, sink) || spout.Acked != 0 {
			t.Errorf("sink %v, spout %+v: want the totals flushed and no root acked", sink, spout)
		}
	})
	t.Run("second-signal", func(t *testing.T) {
		r := startTickcount(t, bin, noack, "--local", "--drain-timeout", "10m")
		r.waitFor("word emitted", emitting(r))
		r.signal()
		r.waitFor("drain announced", func() bool { return strings.Contains(r.stdout.String(), "stopping: draining for at most 10m0s") })
		signalled := time.Now()
		r.signal()
		stdout := r.wait()
		if d := time.Since(signalled); d > time.Minute {
			t.Errorf("the second signal stopped the run after %s", d)
		}
		if !strings.Contains(stdout, "drain stopped by a second signal after") || !strings.Contains(stdout, "roots pending") {
			t.Errorf("no line of an aborted drain:\n%s", stdout)
		}
	})
}
