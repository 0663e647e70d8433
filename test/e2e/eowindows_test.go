package e2e

// Windows exact under effectively-once (issue 36): the eowindows topology
// (test/e2e/testdata/eowindows) reads keyed events from one partition of
// a real Kafka broker, aggregates them in tumbling, sliding and session
// windows with allowed lateness and a late stream, and writes every
// result, update and late element through the two-phase-commit sink.
// While the events flow the test kills -9, one after the other, a window
// bolt instance, the spout instance, a stream manager, the topology
// manager, a checkpoint manager and every process of a container. A
// read_committed consumer must then see exactly the lines of the
// brute-force model (eowindows.Expected), each once.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/egret-stream/egret/internal/kafkatest"
	"github.com/egret-stream/egret/test/e2e/testdata/eowindows/eowindows"
)

func init() { packages["eowindows"] = "./test/e2e/testdata/eowindows" }

// lineLog is what a read_committed consumer saw of the output topic.
type lineLog struct {
	mu    sync.Mutex
	seen  map[string]int
	wrong []string
}

func (l *lineLog) add(line string, want map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[line]++
	if !want[line] || l.seen[line] > 1 {
		l.wrong = append(l.wrong, fmt.Sprintf("%q (%d times)", line, l.seen[line]))
	}
}

// check reports a line not in the model or seen twice (never fixed
// later), else whether every line of the model was seen.
func (l *lineLog) check(want map[string]bool) (done bool, problem, progress string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.wrong) > 0 {
		return false, fmt.Sprintf("%d lines not in the model or twice, e.g. %s", len(l.wrong), strings.Join(l.wrong[:min(5, len(l.wrong))], ", ")), ""
	}
	return len(l.seen) == len(want), "", fmt.Sprintf("%d of %d window lines read (read_committed)", len(l.seen), len(want))
}

// eoWindows is the eowindows topology running on local against a real
// broker, with its events being produced and its output read.
type eoWindows struct {
	run      *eoRun
	log      *lineLog
	want     map[string]bool
	produced chan error
}

// startEOWindows starts a broker, produces n events at 1,000 a second (so
// that every fault or rescale strikes while events flow and windows are
// open), reads the output read_committed and submits eowindows on two
// containers.
func startEOWindows(t *testing.T, n int, flags ...string) *eoWindows {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "events", 1, nil) // one partition: the order of the elements is the input's
	b.CreateTopic(t, "results", 1, nil)
	c := newCluster(t, "local")
	events := eowindows.Events(n)
	w := &eoWindows{log: &lineLog{seen: map[string]int{}}, want: eowindows.Expected(events), produced: make(chan error, 1)}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	prod := b.Client(t)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < n; {
			select {
			case <-ctx.Done():
				w.produced <- ctx.Err()
				return
			case <-tick.C:
			}
			for end := min(i+10, n); i < end; i++ {
				e := events[i]
				prod.Produce(ctx, &kgo.Record{Topic: "events", Key: []byte(e.Key), Value: []byte(e.Record())}, nil)
			}
		}
		w.produced <- prod.Flush(ctx)
	}()

	cons := b.Client(t, kgo.ConsumeTopics("results"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	go func() {
		for ctx.Err() == nil {
			cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { w.log.add(string(r.Value), w.want) })
		}
	}()

	c.mustEgret(append([]string{"submit", c.name, binary(t, "eowindows"), "--", "--brokers", b.Addr, "--containers", "2",
		"--checkpoint-interval", "500ms"}, flags...)...)
	w.run = &eoRun{wordCount: &wordCount{t: t, c: c, name: "eowindows", containers: 2, store: c.store()}}
	pp, _, err := w.run.store.PackingPlan(context.Background(), w.run.name)
	if err != nil {
		t.Fatal(err)
	}
	w.run.plan = pp
	return w
}

// check fails the test at once when the output holds a line not in the
// model or a line twice, and returns the progress.
func (w *eoWindows) check() string {
	_, problem, progress := w.log.check(w.want)
	if problem != "" {
		w.run.t.Fatalf("the output topic is not exact: %s", problem)
	}
	return progress
}

// finish waits for every event to be produced and every line of the
// model to be read exactly once, then kills the topology.
func (w *eoWindows) finish() {
	t := w.run.t
	select {
	case err := <-w.produced:
		if err != nil {
			t.Fatalf("producing the events: %v", err)
		}
	case <-time.After(allAckedTimeout):
		t.Fatal("the events were not all produced")
	}
	await(t, "every window line of the model to be read exactly once", allAckedTimeout, func() (bool, string) {
		done, _, _ := w.log.check(w.want)
		return done, w.check()
	})
	t.Logf("restores: %v", w.run.checkpointMetric("checkpoint.restores"))
	w.run.kill()
}

func TestWindowsEffectivelyOnceThroughFaults(t *testing.T) {
	w := startEOWindows(t, 40000)
	r := w.run
	instance := func(component string) func() (int, []string) {
		return func() (int, []string) {
			for ct := 1; ct <= 2; ct++ {
				if ts := r.tasksOf(ct, component); len(ts) > 0 {
					return ct, []string{fmt.Sprintf("instance-%s-%d", component, ts[0])}
				}
			}
			t.Fatalf("no task of %s in the packing plan", component)
			return 0, nil
		}
	}
	completed := func() float64 { return r.checkpointMetric("checkpoint.completed") }
	faults := []struct {
		name   string
		victim func() (int, []string)
	}{
		{"session window instance", instance(eowindows.Session)},
		{"spout instance", instance(eowindows.Spout)},
		{"stream manager", func() (int, []string) { return 1, []string{"stmgr"} }},
		{"topology manager", func() (int, []string) { return 0, []string{"tmanager"} }},
		{"checkpoint manager", func() (int, []string) { return 2, []string{"ckptmgr"} }},
		{"container", func() (int, []string) {
			var names []string
			for name := range r.procs(2) {
				names = append(names, name)
			}
			return 2, names
		}},
	}
	check := w.check
	for _, f := range faults {
		awaitRise(t, "a checkpoint to complete before the "+f.name+" kill", recoverTimeout, completed)
		container, names := f.victim()
		old := r.killProcs(container, names)
		t.Logf("kill -9 of the %s (%s) at %s", f.name, strings.Join(names, ", "), check())
		waitDead(t, "the killed processes to exit", old)
		r.waitRestarted(container, old)
	}
	w.finish()
}
