package e2e

// Kafka to Kafka, effectively once (issue 22): the kafkawordcount example
// reads sentences from a topic of a real Kafka broker, counts words in
// checkpointed state and writes "word n" for every new count through the
// two-phase-commit sink. While sentences flow the test kills -9, one after
// the other, a count instance, the sink instance (its open and prepared
// Kafka transactions die with it), a stream manager, the topology
// manager, a checkpoint manager and every process of a container. A read_committed
// consumer of the output must then see, for every word, the counts 1..n
// exactly once each, n being the word's count in the input: nothing lost,
// nothing twice.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
	"github.com/egret-stream/egret/internal/kafkatest"
)

func init() { packages["kafkawordcount"] = "./examples/kafkawordcount" }

// countLog is what a read_committed consumer saw of the output topic.
type countLog struct {
	mu   sync.Mutex
	seen map[string]map[int64]int // word → count → times seen
	dups []string
	bad  []string
}

func (l *countLog) add(value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, n, ok := strings.Cut(value, " ")
	k, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		l.bad = append(l.bad, value)
		return
	}
	if l.seen[w] == nil {
		l.seen[w] = map[int64]int{}
	}
	l.seen[w][k]++
	if l.seen[w][k] == 2 {
		l.dups = append(l.dups, value)
	}
}

// check compares with the expected counts: done when every word has
// exactly 1..n; problems are duplicates or garbage (never fixed later).
func (l *countLog) check(expected map[string]int64) (done bool, problem, progress string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.dups) > 0 || len(l.bad) > 0 {
		return false, fmt.Sprintf("duplicates %v, garbage %v", l.dups[:min(len(l.dups), 5)], l.bad[:min(len(l.bad), 5)]), ""
	}
	var got, want int64
	done = true
	for w, n := range expected {
		want += n
		got += int64(len(l.seen[w]))
		for k := range l.seen[w] {
			if k < 1 || k > n {
				return false, fmt.Sprintf("word %s: count %d, the input holds %d", w, k, n), ""
			}
		}
		if int64(len(l.seen[w])) != n {
			done = false
		}
	}
	for w := range l.seen {
		if _, ok := expected[w]; !ok {
			return false, fmt.Sprintf("word %q is not in the input", w), ""
		}
	}
	return done, "", fmt.Sprintf("%d of %d counts read (read_committed)", got, want)
}

func TestKafkaEffectivelyOnce(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "sentences", 2, nil)
	b.CreateTopic(t, "counts", 1, nil)
	c := newCluster(t, "local")
	// A minute of input at 1,000 sentences a second, so that every fault
	// strikes while records flow into the sink's transactions.
	const n = 60000
	expected := eocount.Expected(n)

	// The sentences arrive at about 1,000 a second while the faults run.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prod := b.Client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produced := make(chan error, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := int64(0); i < n; {
			select {
			case <-ctx.Done():
				produced <- ctx.Err()
				return
			case <-tick.C:
			}
			for end := min(i+10, n); i < end; i++ {
				prod.Produce(ctx, &kgo.Record{Topic: "sentences", Value: []byte(eocount.Sentence(i))}, nil)
			}
		}
		produced <- prod.Flush(ctx)
	}()

	log := &countLog{seen: map[string]map[int64]int{}}
	cons := b.Client(t, kgo.ConsumeTopics("counts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	go func() {
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { log.add(string(r.Value)) })
		}
	}()

	c.mustEgret("submit", c.name, binary(t, "kafkawordcount"), "--", "--brokers", b.Addr, "--containers", "2",
		"--checkpoint-interval", "500ms")
	r := &eoRun{wordCount: &wordCount{t: t, c: c, name: "kafkawordcount", containers: 2, store: c.store()}}
	pp, _, err := r.store.PackingPlan(context.Background(), r.name)
	if err != nil {
		t.Fatal(err)
	}
	r.plan = pp
	wait := func(what string) {
		await(t, what, allAckedTimeout, func() (bool, string) {
			done, problem, progress := log.check(expected)
			if problem != "" {
				t.Fatalf("the output topic is not exact: %s", problem)
			}
			return done, progress
		})
	}
	completed := func() float64 { return r.checkpointMetric("checkpoint.completed") }
	faults := []struct {
		name   string
		victim func() (int, []string)
	}{
		{"count instance", func() (int, []string) {
			for ct := 1; ct <= 2; ct++ {
				if ts := r.tasksOf(ct, "count"); len(ts) > 0 {
					return ct, []string{fmt.Sprintf("instance-count-%d", ts[0])}
				}
			}
			return 1, nil
		}},
		{"sink instance", func() (int, []string) {
			for ct := 1; ct <= 2; ct++ {
				if ts := r.tasksOf(ct, "sink"); len(ts) > 0 {
					return ct, []string{fmt.Sprintf("instance-sink-%d", ts[0])}
				}
			}
			return 1, nil
		}},
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
	for _, f := range faults {
		// Each fault strikes a topology that processes and checkpoints.
		awaitRise(t, "a checkpoint to complete before the "+f.name+" kill", recoverTimeout, completed)
		container, names := f.victim()
		old := r.killProcs(container, names)
		_, _, progress := log.check(expected)
		t.Logf("kill -9 of the %s (%s) at %s", f.name, strings.Join(names, ", "), progress)
		waitDead(t, "the killed processes to exit", old)
		r.waitRestarted(container, old)
	}
	select {
	case err := <-produced:
		if err != nil {
			t.Fatalf("producing the sentences: %v", err)
		}
	case <-time.After(allAckedTimeout):
		t.Fatal("the sentences were not all produced")
	}
	wait("every count to be read exactly once from the output topic")
	t.Logf("restores: %v", r.checkpointMetric("checkpoint.restores"))
	r.kill()
}
