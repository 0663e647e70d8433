package heronwc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/instance/inproc"
)

func TestDictionary(t *testing.T) {
	d := Dictionary(31)
	if len(d) != DictionaryWords {
		t.Fatalf("%d words, want %d", len(d), DictionaryWords)
	}
	distinct := map[string]bool{}
	for _, w := range d {
		if len(w) != WordLength || strings.Trim(w, Alphabet) != "" {
			t.Fatalf("bad word %q", w)
		}
		distinct[w] = true
	}
	if len(distinct) < DictionaryWords*99/100 {
		t.Errorf("only %d distinct words", len(distinct))
	}
	if Dictionary(31)[7] != d[7] {
		t.Error("the dictionary is not the same for the same seed")
	}
}

func TestBuilder(t *testing.T) {
	if _, err := Builder(Options{Parallelism: -1}); err == nil {
		t.Error("negative parallelism: want an error")
	}
	b, err := Builder(Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.Logical.Config["topology.containers"]; got != "2" {
		t.Errorf("containers %q, want 2 (one per spout/count pair)", got)
	}
}

// TestCountsEveryWordInProcess runs the topology with acking in this
// process and checks words reach the count bolts and are acked.
func TestCountsEveryWordInProcess(t *testing.T) {
	b, err := Builder(Options{Parallelism: 2, Acking: true, MaxPending: 200})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *inproc.Summary, 1)
	go func() {
		s, err := r.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var executed int64
		for _, m := range r.Metrics() {
			executed += m.Executed.Load()
		}
		if executed >= 5000 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("only %d words counted after 30s", executed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	s := <-done
	if s == nil {
		t.Fatal("no summary")
	}
	spout, bolt := s.Component(SpoutName), s.Component(BoltName)
	if bolt.Executed == 0 || spout.Acked == 0 || spout.Failed != 0 || bolt.Errors != 0 {
		t.Errorf("emitted %d, executed %d, acked %d, failed %d, errors %d", spout.Emitted, bolt.Executed, spout.Acked, spout.Failed, bolt.Errors)
	}
}
